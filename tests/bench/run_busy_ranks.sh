#!/usr/bin/env bash
# Benchmark: whether memtap keeps up with PyTorch ranks on a machine other jobs keep busy.
#
# Starts BUSY_LOOPS busy-looping shells (default 2: every core of the project's VM) and a
# plain training run looping beside them (examples/train_multirank.py, not traced: another
# job), then RANKS_REPS times (default 3)
#   memtap run -o DB -- /usr/bin/python3 examples/train_multirank.py     (2 ranks, ~2.2 M events each)
# and reads from each recording, for the two ranks: the events that came late (out of time
# order with the other rank's: the monitor had stopped waiting for this one), the stalls
# (times it did), the events dropped, and whether the rank's Bye came. The agent's sender
# stands behind the program at nice 19, about 1.5 % of a core here; before the catch-up
# thread (agent/sender/sender.cpp) every run had 0.14-1.9 M late events a rank. Target: no
# late event and no stall. It prints; it does not fail on figures. It ends with
# `RESULT busy_ranks_*` lines for tests/bench/run (the sums over every run and rank, and the
# runs whose ranks all said Bye).
#
# Usage: tests/bench/run_busy_ranks.sh
# Environment: MEMTAP_BUILD_DIR (default build/), BUSY_LOOPS (2), RANKS_REPS (3).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build_dir=${MEMTAP_BUILD_DIR:-$root/build}
memtap=$build_dir/bin/memtap
python=/usr/bin/python3
loops=${BUSY_LOOPS:-2}
reps=${RANKS_REPS:-3}
script=$root/examples/train_multirank.py

[[ -x $memtap ]] || { echo "run_busy_ranks: $memtap not found; build first (scripts/build.sh)" >&2; exit 1; }
"$python" -c 'import torch' 2>/dev/null ||
  { echo "run_busy_ranks: $python cannot import torch (apt install python3-torch)" >&2; exit 1; }
command -v sqlite3 >/dev/null ||
  { echo "run_busy_ranks: sqlite3 not found (scripts/install-deps.sh installs it)" >&2; exit 1; }

# shellcheck source=tests/bench/busy_loops.sh
. "$root/tests/bench/busy_loops.sh"
work=$(mktemp -d)
job=
stop_load() {
  stop_busy_loops
  [[ -n $job ]] && kill -- "-$job" 2>/dev/null  # the job's loop, its run and its ranks
  wait 2>/dev/null || true
  rm -rf "$work"
}
trap stop_load EXIT
start_busy_loops "$loops"
# The other training job, in a process group of its own, so that stop_load ends its ranks too.
setsid bash -c "while :; do '$python' '$script' >/dev/null 2>&1; done" &
job=$!

late=0 stalls=0 dropped=0 whole=0
for ((rep = 1; rep <= reps; rep++)); do
  db=$work/ranks.db
  start=$(date +%s.%N)
  "$memtap" run -o "$db" -- "$python" "$script" >/dev/null 2>"$work/err" || true
  seconds=$(echo "$(date +%s.%N) - $start" | bc)
  # The ranks: the two processes with the training's events (the launcher and
  # multiprocessing's resource tracker make a few thousand).
  read -r run_late run_stalls run_dropped run_byes < <(sqlite3 -separator ' ' "$db" \
    "SELECT SUM(late_events), SUM(stalls), SUM(events_dropped), SUM(bye_received)
     FROM memtap_session WHERE events_received + events_dropped > 100000" 2>/dev/null ||
    echo "n/a n/a n/a n/a")
  printf 'run %d: %.1f s; ranks: %s late events, %s stalls, %s dropped, %s of 2 Byes\n' \
    "$rep" "$seconds" "$run_late" "$run_stalls" "$run_dropped" "$run_byes"
  if [[ $run_late =~ ^[0-9]+$ ]]; then
    late=$((late + run_late)) stalls=$((stalls + run_stalls)) dropped=$((dropped + run_dropped))
    [[ $run_byes == 2 ]] && whole=$((whole + 1))
  fi
  rm -f "$db"*
done
echo
echo "| $loops busy loops and a training run, $(nproc) cores | runs | late events | stalls | dropped | runs with every Bye |"
echo "| --- | ---: | ---: | ---: | ---: | ---: |"
echo "| train_multirank.py, 2 ranks | $reps | $late | $stalls | $dropped | $whole |"
echo "RESULT busy_ranks_runs=$reps"
echo "RESULT busy_ranks_late_events=$late"
echo "RESULT busy_ranks_stalls=$stalls"
echo "RESULT busy_ranks_dropped=$dropped"
echo "RESULT busy_ranks_whole_runs=$whole"
