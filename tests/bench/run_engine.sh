#!/usr/bin/env bash
# The monitor's engine benchmarks (issue 3): events per second on one core, and a
# 10-million-event recording reported and replayed. Prints figures; passes or fails nothing.
#   tests/bench/run_engine.sh [BUILD_DIR]        (default: build)
# The recording is made once in ${MEMTAP_BENCH_DIR:-/tmp}/memtap_bench_10m.db (1.5 GB).
# Environment: ENGINE_EVENTS (10000000; another count makes memtap_bench_<count>.db),
# ENGINE_REPS (3 runs of report and of replay).
# Ends with `RESULT name=value` lines for tests/bench/run: engine_analyzer_mevs_synthetic and
# engine_analyzer_mevs_file (M events/s, one core), report_s and replay_s (medians, wall),
# report_max_rss_kb, report_events, lttb_ms.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../../build}
events=${ENGINE_EVENTS:-10000000}
reps=${ENGINE_REPS:-3}
if [[ $events == 10000000 ]]; then
  file=${MEMTAP_BENCH_DIR:-/tmp}/memtap_bench_10m.db
else
  file=${MEMTAP_BENCH_DIR:-/tmp}/memtap_bench_$events.db
fi
[ -s "$file" ] || "$here/make_big_recording.sh" "$file" "$events"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
results=()

median() { printf '%s\n' "$@" | awk NF | sort -g | awk '{v[NR]=$1} END {print NR ? v[int((NR+1)/2)] : "n/a"}'; }
analyzer_rate() { sed -n 's/.*analyzer (both) *\([0-9.]*\) M events.*/\1/p' "$1" | tail -n 1; }

echo "== engine ingest, one thread (target >= 5 M events/s)"
"$build/tests/bench/memtap_bench_engine_ingest" | tee "$work/synthetic"
"$build/tests/bench/memtap_bench_engine_ingest" "$file" | tee "$work/file"
results+=("engine_analyzer_mevs_synthetic=$(analyzer_rate "$work/synthetic")"
  "engine_analyzer_mevs_file=$(analyzer_rate "$work/file")")

echo "== $events-event recording (target for 10M: report < 10 s)"
cat "$file" >/dev/null  # warm: the page cache holds the file, as right after recording
for cmd in "report" "replay --speed max"; do
  walls=() rss=()
  for ((run = 1; run <= reps; run++)); do
    # shellcheck disable=SC2086  # the command's words are split on purpose
    /usr/bin/time -o "$work/time" -f "%e %U %S %M" "$build/bin/memtap" $cmd "$file" >/dev/null
    read -r wall user sys maxrss <"$work/time"
    echo "  memtap $cmd: $wall s wall, $user s user, $sys s sys, max RSS $maxrss KB"
    walls+=("$wall") rss+=("$maxrss")
  done
  name=${cmd%% *}
  results+=("${name}_s=$(median "${walls[@]}")")
  [[ $name == report ]] && results+=("report_max_rss_kb=$(median "${rss[@]}")")
done
results+=("report_events=$events")

echo "== LTTB, 10M points to 2,000 (target < 50 ms)"
"$build/tests/timeline_test" --gtest_filter='*Throughput*' | grep 'lttb:' | tee "$work/lttb" || true
results+=("lttb_ms=$(sed -n 's/.* in \([0-9.]*\) ms.*/\1/p' "$work/lttb" | tail -n 1)")
printf 'RESULT %s\n' "${results[@]}"
