# Sourced by scripts/sanitize.sh and scripts/fuzz.sh: runs one command per item, as many at a
# time as asked. Their test executables and fuzzers are each mostly one thread, so one after
# the other left a core of a 2-core machine idle for minutes of the suite.
#
#   run_in_parallel JOBS START REPORT ITEM...
#
# Calls `START ITEM` in the background, at most JOBS at once, and `REPORT ITEM STATUS` in the
# foreground as each ends, in the order they end (START writes its output to a file that
# REPORT prints, so outputs never interleave). Returns 1 if any START exited non-zero, after
# all have run.
run_in_parallel() {
  local jobs=$1 start=$2 report=$3
  shift 3
  local -A item_of=()
  local item pid ended status any_failed=0
  for item in "$@" ''; do
    # The empty item last: then every started one is waited for.
    while ((${#item_of[@]} > 0)) && { [[ -z $item ]] || ((${#item_of[@]} >= jobs)); }; do
      status=0
      wait -n -p pid || status=$?
      ended=${item_of[$pid]}
      unset "item_of[$pid]"
      "$report" "$ended" "$status"
      ((status == 0)) || any_failed=1
    done
    [[ -z $item ]] && break
    "$start" "$item" &
    item_of[$!]=$item
  done
  return "$any_failed"
}
