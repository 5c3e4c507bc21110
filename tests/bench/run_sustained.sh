#!/usr/bin/env bash
# Benchmark: a program whose own threads keep every core busy for a while, allocating all
# along, under `memtap run`: memtap keeps to a small share of a core for the program's sake,
# but must not fall arbitrarily behind it (common/cpu_share.h, kPatienceSeconds).
#
# Runs SUSTAINED_REPS times alternating (default 2)
#   plain   memtap_bench_sustained_load THREADS SECONDS RATE
#   memtap  MEMTAP_PROGRESS_MS=1000 memtap run -o DB -- the same
# with THREADS = the usable CPUs, SECONDS = SUSTAINED_SECONDS (20) and RATE =
# SUSTAINED_PAIRS (150,000 malloc/free pairs a second a thread: 600 K events a second on two
# cores), and prints the program's work under memtap against plain (its throughput: the
# pairs are made on schedule either way), how far behind the live view was at the program's
# end at the most (the progress lines' agents_behind_ms while paced=1), and the events
# dropped. Medians over the runs. It prints; it does not fail on figures. It ends with
# `RESULT sustained_*` lines for tests/bench/run.
#
# Usage: tests/bench/run_sustained.sh
# Environment: MEMTAP_BUILD_DIR (default build/), SUSTAINED_REPS (2), SUSTAINED_SECONDS (20),
#   SUSTAINED_PAIRS (150000).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build_dir=${MEMTAP_BUILD_DIR:-$root/build}
memtap=$build_dir/bin/memtap
load=$build_dir/tests/bench/memtap_bench_sustained_load
reps=${SUSTAINED_REPS:-2}
seconds=${SUSTAINED_SECONDS:-20}
pairs=${SUSTAINED_PAIRS:-150000}
threads=$(nproc)

for f in "$memtap" "$load"; do
  [[ -x $f ]] || { echo "run_sustained: $f not found; build first (scripts/build.sh)" >&2; exit 1; }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

work_of() { sed -n 's/^work=\([0-9]*\) .*/\1/p' "$1"; }
plain_w=() memtap_w=() behind_s=() dropped=()
for ((rep = 1; rep <= reps; rep++)); do
  "$load" "$threads" "$seconds" "$pairs" >"$work/plain.out"
  plain_w+=("$(work_of "$work/plain.out")")
  MEMTAP_PROGRESS_MS=1000 "$memtap" run -o "$work/run.db" -- "$load" "$threads" "$seconds" "$pairs" \
    >"$work/memtap.out" 2>"$work/err"
  memtap_w+=("$(work_of "$work/memtap.out")")
  # The largest lag while the program ran (paced=1: memtap holds back for it).
  behind=$(grep -o 'paced=1 .*agents_behind_ms=[0-9]*' "$work/err" |
    sed 's/.*agents_behind_ms=//' | sort -n | tail -1)
  behind_s+=("$(printf '%.2f' "$(echo "scale=3; ${behind:-0} / 1000" | bc)")")
  lost=$(sed -n 's/^memtap: [0-9,]* process.*, \([0-9,]*\) dropped.*/\1/p' "$work/err" | tr -d ,)
  dropped+=("${lost:-?}")
  printf 'run %d: work plain %s, under memtap %s; the view at most %s s behind; %s dropped\n' \
    "$rep" "${plain_w[-1]}" "${memtap_w[-1]}" "${behind_s[-1]}" "${dropped[-1]}"
  rm -f "$work/run.db"
done

median() { printf '%s\n' "$@" | sort -g | awk '{v[NR]=$1} END {print v[int((NR+1)/2)]}'; }
plain=$(median "${plain_w[@]}")
traced=$(median "${memtap_w[@]}")
behind=$(median "${behind_s[@]}")
lost=$(median "${dropped[@]}")
ratio=$(printf '%.3f' "$(echo "scale=4; $traced / $plain" | bc)")
echo
echo "| $threads threads on $threads cores, ${seconds} s, $pairs pairs/s each | work x plain | behind at most, s | dropped |"
echo "| --- | ---: | ---: | ---: |"
printf '| median of %d | %s | %s | %s |\n' "$reps" "$ratio" "$behind" "$lost"
echo "RESULT sustained_work_ratio=$ratio"
echo "RESULT sustained_behind_max_s=$behind"
echo "RESULT sustained_dropped=$lost"
