#!/usr/bin/env bash
# Benchmark: memtap's overhead on a malloc/free storm, beside Debian's heaptrack.
#
# Runs memtap_bench_alloc_storm (2,000,000 malloc/free pairs, 16 B-4 KiB, 1024 live) plain,
# under `memtap run`, and under heaptrack, STORM_REPS times each (default 5: on this VM one
# run differs from the next by up to 30 %, and three left a median at its mercy), and prints:
#   app_ms   the loop's own wall time, measured inside the program
#   wall_ms  the whole command, i.e. until the tool has finished its recording
#            (memtap run returns once the database is complete; heaptrack once its file is)
#   ratios of both to the plain run (medians), and for memtap the MALLOC and FREE rows in
#   the database against the 2,000,000 the loop made (libc and start-up add a few), plus the
#   drop count the agent reported, so lost events are visible.
# It prints; it does not fail on ratios. It ends with `RESULT name=value` lines for
# tests/bench/run: per thread count T, storm_tT_{app,wall}_ratio_MODE (medians' ratios to
# plain), storm_tT_app_ms_MODE, and storm_tT_lost (the most MALLOC+FREE rows missing in one
# memtap run; "n/a" when a run failed or its database could not be read).
#
# Usage: tests/bench/run_storm.sh [threads ...]   thread counts to run, 1 and/or 2 (default 1)
# Environment: MEMTAP_BUILD_DIR (default build/), STORM_REPS (5), STORM_DB (/tmp/storm.db),
# STORM_HEAPTRACK=0 to leave heaptrack out (A/Bs of memtap's own builds, in a third the time).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build_dir=${MEMTAP_BUILD_DIR:-$root/build}
bench=$build_dir/tests/bench/memtap_bench_alloc_storm
memtap=$build_dir/bin/memtap
reps=${STORM_REPS:-5}
db=${STORM_DB:-/tmp/storm.db}
expected=2000000
thread_counts=("$@")
((${#thread_counts[@]})) || thread_counts=(1)

for f in "$bench" "$memtap"; do
  [[ -x $f ]] || { echo "run_storm: $f not found; build first (scripts/build.sh)" >&2; exit 1; }
done
modes=(plain memtap)
if [[ ${STORM_HEAPTRACK:-1} == 0 ]]; then
  :
elif command -v heaptrack >/dev/null 2>&1; then
  modes+=(heaptrack)
else
  echo "run_storm: heaptrack not installed; skipping it (scripts/install-deps.sh installs it)"
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

results=()  # RESULT lines, printed at the end

now_ns() { date +%s%N; }

# median of a space-separated list of numbers ("n/a" when it is empty)
median() { tr ' ' '\n' <<<"$1" | awk NF | sort -n | awk '{v[NR]=$1} END {print NR ? v[int((NR+1)/2)] : "n/a"}'; }

ratio() { awk -v a="$1" -v b="$2" 'BEGIN {print (a ~ /^[0-9.]+$/ && b > 0) ? sprintf("%.2f", a/b) : "n/a"}'; }

sql() { sqlite3 -readonly -batch -noheader "$db" "$1" 2>/dev/null || echo "n/a"; }

echo "alloc_storm: $expected malloc/free pairs, $reps runs per mode; $(nproc) cores," \
     "$(uname -r), memtap $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?')"

for threads in "${thread_counts[@]}"; do
  echo
  echo "== threads=$threads"
  printf '%-10s %3s %8s %8s %12s %12s %8s\n' mode run app_ms wall_ms malloc_rows free_rows dropped
  declare -A app=() wall=()
  lost_max=0
  # Interleaved (plain, memtap, heaptrack, plain, ...): this VM's speed drifts by a fifth
  # over a minute, and blocks of runs per mode turned that drift into the ratios.
  for ((rep = 1; rep <= reps; rep++)); do
    for mode in "${modes[@]}"; do
      log=$work/$mode.$rep.log
      cmd=("$bench" "$threads")
      case $mode in
        memtap) rm -f "$db" "$db.partial"; cmd=("$memtap" run -o "$db" -- "${cmd[@]}") ;;
        heaptrack) cmd=(heaptrack -o "$work/heaptrack.$rep" "${cmd[@]}") ;;
      esac
      start=$(now_ns)
      status=0
      "${cmd[@]}" >"$log" 2>&1 </dev/null || status=$?
      wall_ms=$((($(now_ns) - start) / 1000000))
      app_ms=$(grep -o 'app_ms=[0-9]*' "$log" | tail -n 1 | cut -d= -f2 || true)
      if ((status != 0)) || [[ -z $app_ms ]]; then
        echo "$mode run $rep failed (exit $status); its output ends with:"
        tail -n 5 "$log" | sed 's/^/    /'
        continue
      fi
      app[$mode]+="$app_ms "
      wall[$mode]+="$wall_ms "
      malloc_rows="" free_rows="" dropped=""
      if [[ $mode == memtap ]]; then
        malloc_rows=$(sql "SELECT COUNT(*) FROM memscope_dump WHERE Event = 'MALLOC'")
        free_rows=$(sql "SELECT COUNT(*) FROM memscope_dump WHERE Event = 'FREE'")
        dropped=$(sql "SELECT SUM(events_dropped) FROM memtap_session")
      fi
      printf '%-10s %3d %8s %8s %12s %12s %8s\n' "$mode" "$rep" "$app_ms" "$wall_ms" \
        "$malloc_rows" "$free_rows" "$dropped"
      if [[ $mode == memtap ]]; then
        lost=0
        for pair in "MALLOC:$malloc_rows" "FREE:$free_rows"; do
          n=${pair#*:}
          if ! [[ $n =~ ^[0-9]+$ ]]; then
            lost_max=n/a
          elif ((n < expected)); then
            echo "    events lost: $((expected - n)) ${pair%%:*} rows fewer than the $expected the loop made"
            lost=$((lost + expected - n))
          fi
        done
        [[ $lost_max == n/a ]] || ((lost <= lost_max)) || lost_max=$lost
      fi
    done
  done

  echo "-- medians (ratio to plain)"
  plain_app=$(median "${app[plain]:-}")
  plain_wall=$(median "${wall[plain]:-}")
  printf '%-10s %8s %9s %8s %10s\n' mode app_ms app_ratio wall_ms wall_ratio
  for mode in "${modes[@]}"; do
    a=$(median "${app[$mode]:-}")
    w=$(median "${wall[$mode]:-}")
    printf '%-10s %8s %9s %8s %10s\n' "$mode" "$a" "$(ratio "$a" "$plain_app")" "$w" \
      "$(ratio "$w" "$plain_wall")"
    results+=("storm_t${threads}_app_ms_$mode=$a" "storm_t${threads}_app_ratio_$mode=$(ratio "$a" "$plain_app")"
      "storm_t${threads}_wall_ratio_$mode=$(ratio "$w" "$plain_wall")")
  done
  # A mode whose every run failed has no median: its lost count is unknown too.
  [[ -n ${app[memtap]:-} ]] || lost_max=n/a
  results+=("storm_t${threads}_lost=$lost_max")
  unset app wall
done
echo
echo "memtap's last recording: $db (rows: sqlite3 $db 'SELECT Event, COUNT(*) FROM memscope_dump GROUP BY 1')"
printf 'RESULT %s\n' "${results[@]}"
