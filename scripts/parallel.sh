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
  local item any_failed=0
  for item in "$@"; do
    while ((${#item_of[@]} >= jobs)); do parallel_reap_one "$report" || any_failed=1; done
    "$start" "$item" &
    item_of[$!]=$item
  done
  while ((${#item_of[@]} > 0)); do parallel_reap_one "$report" || any_failed=1; done
  return "$any_failed"
}

# Waits for one of run_in_parallel's commands (its item_of), reports it, and returns its status.
parallel_reap_one() {
  local report=$1 pid ended status=0
  wait -n -p pid || status=$?
  ended=${item_of[$pid]}
  unset "item_of[$pid]"
  "$report" "$ended" "$status"
  return "$status"
}
