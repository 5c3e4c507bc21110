#!/usr/bin/env bash
# Issue 5, benchmark 1: what the agent adds to one malloc+free pair, in process.
# memtap_bench_hot_path times a pair through the hooks and the same pair straight to glibc
# (__libc_malloc/__libc_free) in one process, under the agent: stacks off, and C stacks on
# (MEMTAP_STACKS=c; the 2 MiB pair is above the 1 MiB default threshold, so it takes a stack
# each time, served from the per-thread cache). No monitor listens: records stay in the
# agent's buffers (MEMTAP_BUFFER_MB is raised so that none is dropped), so this is the hook's
# own cost, not the monitor's. Python stacks need a Python program: tests/bench/run_stacks_train.sh.
# Target: at most 15 ns added per event (30 per pair), stacks off. Prints; fails nothing.
#   tests/bench/run_hot_path.sh [BUILD_DIR]
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../../build}
bench=$build/tests/bench/memtap_bench_hot_path
agent=$build/lib/libmemtap_agent.so
[ -x "$bench" ] || { echo "run_hot_path: $bench not built (libbenchmark-dev missing?)" >&2; exit 1; }
endpoint="ipc://$(mktemp -u /tmp/memtap-nobody-XXXXXX)"

run() {  # label, env...
  local label=$1
  shift
  env "$@" "$bench" --benchmark_min_time=0.2 --benchmark_repetitions=3 \
    --benchmark_report_aggregates_only=true --benchmark_format=csv 2>/dev/null |
    awk -F, -v label="$label" '
      /_median"/ { gsub(/"/, "", $1); split($1, p, "/"); sub(/_median/, "", p[2]);
                   t[p[1] "/" p[2]] = $4 }
      END {
        for (size_ = 0; size_ < 2; size_++) {
          s = size_ == 0 ? "64" : "2097152"
          g = t["BM_GlibcPair/" s]; h = t["BM_HookedPair/" s]
          printf "| %-22s | %8s B | %7.1f | %7.1f | %+7.1f |\n", label, s, g, h, h - g
        }
      }'
}

echo "| agent | pair size | glibc ns | hooked ns | added ns |"
echo "| --- | ---: | ---: | ---: | ---: |"
run "none" MEMTAP_UNUSED=1
run "stacks off" LD_PRELOAD="$agent" MEMTAP_ENDPOINT="$endpoint" MEMTAP_BUFFER_MB=4096
run "C stacks (>= 1 MiB)" LD_PRELOAD="$agent" MEMTAP_ENDPOINT="$endpoint" MEMTAP_BUFFER_MB=4096 \
  MEMTAP_STACKS=c
echo "(commit $(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo ?), $(nproc) CPUs)"
