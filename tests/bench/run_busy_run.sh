#!/usr/bin/env bash
# Benchmark: `memtap run` on a machine whose cores other work keeps busy.
#
# Starts BUSY_LOOPS busy-looping shells (default 2: every core of the project's VM), then
# times, BUSY_REPS times alternating (default 3), the whole of
#   plain   /usr/bin/python3 examples/train_leak.py --steps 6        (~2.1 M events)
#   memtap  memtap run -o DB -- the same, which returns once the recording is complete
# and prints each run, the medians, their ratio, and how long after the program's end the
# recording was complete (memtap's own summary line). Target: within 3x. Before memtap's
# threads paced themselves (common/cpu_share.h) they stood at nice 19, which they could not
# leave once the program had ended: 408 s against 3.5 s (115x). The loops are killed on
# exit, whatever happens. It prints; it does not fail on ratios. It ends with
# `RESULT busy_run_*` lines for tests/bench/run.
#
# Usage: tests/bench/run_busy_run.sh
# Environment: MEMTAP_BUILD_DIR (default build/), BUSY_LOOPS (2), BUSY_REPS (3),
#   BUSY_STEPS (6).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build_dir=${MEMTAP_BUILD_DIR:-$root/build}
memtap=$build_dir/bin/memtap
python=/usr/bin/python3
loops=${BUSY_LOOPS:-2}
reps=${BUSY_REPS:-3}
steps=${BUSY_STEPS:-6}
script=$root/examples/train_leak.py

[[ -x $memtap ]] || { echo "run_busy_run: $memtap not found; build first (scripts/build.sh)" >&2; exit 1; }
"$python" -c 'import torch' 2>/dev/null ||
  { echo "run_busy_run: $python cannot import torch (apt install python3-torch)" >&2; exit 1; }

# shellcheck source=tests/bench/busy_loops.sh
. "$root/tests/bench/busy_loops.sh"
work=$(mktemp -d)
stop_loops() {
  stop_busy_loops
  rm -rf "$work"
}
trap stop_loops EXIT
start_busy_loops "$loops"

now() { date +%s.%N; }
plain_s=() memtap_s=() after_s=()
for ((rep = 1; rep <= reps; rep++)); do
  start=$(now)
  "$python" "$script" --steps "$steps" >/dev/null 2>&1
  plain_s+=("$(echo "$(now) - $start" | bc)")
  start=$(now)
  "$memtap" run -o "$work/run.db" -- "$python" "$script" --steps "$steps" >/dev/null 2>"$work/err"
  memtap_s+=("$(echo "$(now) - $start" | bc)")
  after=$(sed -n 's/.*the recording was complete \([0-9.]*\) s after the program ended.*/\1/p' "$work/err")
  after_s+=("${after:-0}")
  printf 'run %d: plain %.2f s, memtap run %.2f s (complete %s s after the program ended)\n' \
    "$rep" "${plain_s[-1]}" "${memtap_s[-1]}" "${after:-?}"
  rm -f "$work/run.db"
done

median() { printf '%s\n' "$@" | sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
plain=$(median "${plain_s[@]}")
traced=$(median "${memtap_s[@]}")
after=$(median "${after_s[@]}")
ratio=$(echo "scale=2; $traced / $plain" | bc)
echo
echo "| $loops busy loops, $(nproc) cores | plain s | memtap run s | x plain | complete after the end, s |"
echo "| --- | ---: | ---: | ---: | ---: |"
printf '| train_leak.py --steps %s, median of %d | %.2f | %.2f | %.2f | %.2f |\n' \
  "$steps" "$reps" "$plain" "$traced" "$ratio" "$after"
echo "RESULT busy_run_plain_s=$plain"
echo "RESULT busy_run_memtap_s=$traced"
echo "RESULT busy_run_ratio=$ratio"
echo "RESULT busy_run_complete_after_s=$after"
