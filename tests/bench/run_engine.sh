#!/usr/bin/env bash
# The monitor's engine benchmarks (issue 3): events per second on one core, and a
# 10-million-event recording reported and replayed. Prints figures; passes or fails nothing.
#   tests/bench/run_engine.sh [BUILD_DIR]        (default: build)
# The recording is made once in ${MEMTAP_BENCH_DIR:-/tmp}/memtap_bench_10m.db (1.5 GB).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../../build}
file=${MEMTAP_BENCH_DIR:-/tmp}/memtap_bench_10m.db
[ -s "$file" ] || "$here/make_big_recording.sh" "$file" 10000000

echo "== engine ingest, one thread (target >= 5 M events/s)"
"$build/tests/bench/memtap_bench_engine_ingest"
"$build/tests/bench/memtap_bench_engine_ingest" "$file"

echo "== 10M-event recording (target: report < 10 s)"
cat "$file" >/dev/null  # warm: the page cache holds the file, as right after recording
for cmd in "report" "replay --speed max"; do
  for run in 1 2 3; do
    /usr/bin/time -f "  memtap $cmd: %e s wall, %U s user, %S s sys, max RSS %M KB" \
      "$build/bin/memtap" $cmd "$file" >/dev/null
  done
done

echo "== LTTB, 10M points to 2,000 (target < 50 ms)"
"$build/tests/timeline_test" --gtest_filter='*Throughput*' | grep 'lttb:' || true
