#!/usr/bin/env bash
# Benchmark: what memtap adds to starting a program from a traced Python process.
#
# Python spawns `true` SPAWN_N times (default 40), in three ways (tests/bench/spawn.py):
# subprocess.run (vfork + exec), subprocess.run with preexec_fn (fork; the child runs
# Python, closes every descriptor with close_range, and tries execve in each directory of
# PATH), and a fork whose child closes every descriptor with close() one at a time before
# exec. Each plain and under `memtap run`, SPAWN_REPS times alternating (default 3); prints
# the medians, ms per spawn, and what memtap adds. Every spawn under memtap is a traced
# child too (its agent starts, connects and flushes at exit): that part is the same for the
# three ways and is what the first one costs. It prints; it does not fail on figures. It
# ends with `RESULT spawn_*` lines for tests/bench/run.
#
# Usage: tests/bench/run_spawn.sh
# Environment: MEMTAP_BUILD_DIR (default build/), SPAWN_N (40), SPAWN_REPS (3).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build_dir=${MEMTAP_BUILD_DIR:-$root/build}
memtap=$build_dir/bin/memtap
python=/usr/bin/python3
n=${SPAWN_N:-40}
reps=${SPAWN_REPS:-3}
script=$root/tests/bench/spawn.py

[[ -x $memtap ]] || { echo "run_spawn: $memtap not found; build first (scripts/build.sh)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

median() { printf '%s\n' "$@" | sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
echo "| way, $n spawns of true, median of $reps | plain ms | memtap run ms | added ms |"
echo "| --- | ---: | ---: | ---: |"
for kind in vfork preexec closeloop; do
  plain=() traced=()
  for ((rep = 1; rep <= reps; rep++)); do
    plain+=("$("$python" "$script" "$n" "$kind")")
    traced+=("$("$memtap" run -o "$work/run.db" -- "$python" "$script" "$n" "$kind" 2>"$work/err" |
      tail -1)")
    rm -f "$work/run.db"
  done
  p=$(median "${plain[@]}")
  t=$(median "${traced[@]}")
  added=$(echo "$t - $p" | bc)
  printf '| %s | %.2f | %.2f | %.2f |\n' "$kind" "$p" "$t" "$added"
  echo "RESULT spawn_${kind}_plain_ms=$p" >>"$work/results"
  echo "RESULT spawn_${kind}_memtap_ms=$t" >>"$work/results"
  echo "RESULT spawn_${kind}_added_ms=$added" >>"$work/results"
done
cat "$work/results"
