#!/usr/bin/env bash
# What a stacked allocation costs (MEMTAP_STACKS=c): ns the agent adds to a 2 MiB malloc+free
# pair 20 frames down a call chain (memtap_bench_stacked_alloc, in process, against the same
# pair to glibc), by capture method (MEMTAP_UNWIND): glibc's backtrace(), libunwind's
# unw_backtrace alone, and the default, a frame-pointer walk with libunwind behind it; and
# with stacks off, what the agent adds to the pair without a stack.
# Twice: the program built with frame pointers (the walk takes every stack after the first),
# and with -fomit-frame-pointer (every capture falls back to libunwind). The agent sends to
# memtap_bench_sink, which discards the batches (as run_hot_path.sh).
# Target: under 1000 ns a stacked allocation. Prints; fails nothing. Ends with RESULT lines.
#   tests/bench/run_c_stacks.sh [BUILD_DIR]
# Environment: C_STACKS_REPS (3 runs of each; the median is taken), C_STACKS_DEPTH (20),
# C_STACKS_PAIRS (100,000 a round; each run takes the best of 5 rounds).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../../build}
agent=$build/lib/libmemtap_agent.so
sink=$build/tests/bench/memtap_bench_sink
reps=${C_STACKS_REPS:-3}
depth=${C_STACKS_DEPTH:-20}
pairs=${C_STACKS_PAIRS:-100000}
for f in "$agent" "$sink" "$build/tests/bench/memtap_bench_stacked_alloc" \
  "$build/tests/bench/memtap_bench_stacked_alloc_nofp"; do
  [ -e "$f" ] || { echo "run_c_stacks: $f not built" >&2; exit 1; }
done
endpoint="ipc://$(mktemp -u /tmp/memtap-sink-XXXXXX)"
results=$(mktemp)
sink_pid=
trap 'rm -f "$results"; [ -z "$sink_pid" ] || kill "$sink_pid" 2>/dev/null' EXIT
exec 3< <(exec "$sink" "$endpoint" 2>/dev/null)
sink_pid=$!
read -r ready <&3 && [ "$ready" = ready ] || { echo "run_c_stacks: the sink did not start" >&2; exit 1; }

echo "load before: $(uptime)"
echo "| program | method | added ns per stacked pair (runs) | x backtrace() |"
echo "| --- | --- | ---: | ---: |"
for program in fp nofp; do
  bin=$build/tests/bench/memtap_bench_stacked_alloc
  [ "$program" = nofp ] && bin=${bin}_nofp
  declare -A median=()
  # stacks_off: the same pair with MEMTAP_STACKS unset, what the agent adds without a stack.
  for method in backtrace libunwind frame_pointers stacks_off; do
    runs=()
    for ((r = 0; r < reps; r++)); do
      stacks=c
      [ "$method" = stacks_off ] && stacks=
      line=$(env LD_PRELOAD="$agent" MEMTAP_ENDPOINT="$endpoint" MEMTAP_BUFFER_MB=1024 \
        MEMTAP_STACKS=$stacks MEMTAP_UNWIND="${method/frame_pointers/}" "$bin" "$depth" "$pairs")
      runs+=("$(awk '{ split($1, h, "="); split($2, g, "="); printf "%.1f", h[2] - g[2] }' <<<"$line")")
    done
    median[$method]=$(printf '%s\n' "${runs[@]}" | sort -g | awk '{ v[NR] = $1 } END { print v[int((NR + 1) / 2)] }')
    ratio=$(awk -v b="${median[backtrace]}" -v m="${median[$method]}" -v x="$method" \
      'BEGIN { if (x != "stacks_off" && m > 0) printf "%.1f", b / m }')
    echo "| $program | $method | ${median[$method]} (${runs[*]}) | $ratio |"
    echo "RESULT c_stacks_${program}_${method}_ns=${median[$method]}" >>"$results"
  done
  unset median
done
echo "load after: $(uptime)"
echo "(commit $(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo ?), $(nproc) CPUs, depth $depth)"
cat "$results"
