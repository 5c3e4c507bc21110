#!/usr/bin/env bash
# Issue 5, benchmark 1: what the agent adds to one malloc+free pair, in process.
# memtap_bench_hot_path times a pair through the hooks and the same pair straight to glibc
# (__libc_malloc/__libc_free) in one process, under the agent: stacks off, and C stacks on
# (MEMTAP_STACKS=c; the 2 MiB pair is above the 1 MiB default threshold, so it takes a stack
# each time, served from the per-thread cache).
# The agent's sender sends to memtap_bench_sink, which throws the batches away: the sender
# drains, converts, encodes and sends as in a real run, and the drained chunks go back to
# the hooks, so this is the hook's own cost, not the monitor's. The line "stacks off, no
# consumer" has nobody listening: every record stays in the agent's buffers
# (MEMTAP_BUFFER_MB is raised so that none is dropped), gigabytes of fresh pages at tens of
# millions of events a second, so it measures the kernel's page allocation as much as the
# hook (on this VM 0.5-1 ns a byte, and it moves from one hour to the next).
# Python stacks need a Python program: tests/bench/run_stacks_train.sh.
# Target: at most 15 ns added per event (30 per pair), stacks off. Prints; fails nothing.
# Ends with `RESULT name=value` lines (added ns per pair by agent and size, and stacks off's
# ns per event, with the sink and with no consumer) for tests/bench/run.
#   tests/bench/run_hot_path.sh [BUILD_DIR]
# Environment: HOT_PATH_REPS (3 repetitions), HOT_PATH_MIN_TIME (0.2 s each).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../../build}
bench=$build/tests/bench/memtap_bench_hot_path
agent=$build/lib/libmemtap_agent.so
sink=$build/tests/bench/memtap_bench_sink
[ -x "$bench" ] || { echo "run_hot_path: $bench not built (libbenchmark-dev missing?)" >&2; exit 1; }
[ -x "$sink" ] || { echo "run_hot_path: $sink not built" >&2; exit 1; }
endpoint="ipc://$(mktemp -u /tmp/memtap-sink-XXXXXX)"
nobody="ipc://$(mktemp -u /tmp/memtap-nobody-XXXXXX)"
reps=${HOT_PATH_REPS:-3}
min_time=${HOT_PATH_MIN_TIME:-0.2}
results=$(mktemp)
sink_pid=
trap 'rm -f "$results"; [ -z "$sink_pid" ] || kill "$sink_pid" 2>/dev/null' EXIT

# The sink binds the endpoint before the benchmark starts: its "ready" line says so.
exec 3< <(exec "$sink" "$endpoint")
sink_pid=$!
read -r ready <&3 && [ "$ready" = ready ] || { echo "run_hot_path: the sink did not start" >&2; exit 1; }

run() {  # label, result name, env...
  local label=$1 name=$2
  shift 2
  env "$@" "$bench" --benchmark_min_time="$min_time" --benchmark_repetitions="$reps" \
    --benchmark_report_aggregates_only=true --benchmark_format=csv 2>/dev/null |
    awk -F, -v label="$label" -v name="$name" -v results="$results" '
      # The medians; with one repetition Google Benchmark prints the run itself instead.
      /^"BM_/ { gsub(/"/, "", $1); split($1, p, "/"); k = p[1] "/" p[2]
                if (k ~ /_median$/) { sub(/_median$/, "", k); t[k] = $4; median[k] = 1 }
                else if (k !~ /_(mean|stddev|cv)$/ && !(k in median)) t[k] = $4 }
      END {
        for (size_ = 0; size_ < 2; size_++) {
          s = size_ == 0 ? "64" : "2097152"
          g = t["BM_GlibcPair/" s]; h = t["BM_HookedPair/" s]
          printf "| %-22s | %8s B | %7.1f | %7.1f | %+7.1f |\n", label, s, g, h, h - g
          d = (g == "" || h == "") ? "n/a" : sprintf("%.1f", h - g)
          printf "RESULT hot_path_%s_%s_added_ns=%s\n", name, s, d >>results
          if ((name == "stacks_off" || name == "no_consumer") && s == "64")
            printf "RESULT hot_path_%s_ns_per_event=%s\n", name,
                   d == "n/a" ? d : sprintf("%.1f", (h - g) / 2) >>results
        }
      }'
}

echo "| agent | pair size | glibc ns | hooked ns | added ns |"
echo "| --- | ---: | ---: | ---: | ---: |"
run "none" none MEMTAP_UNUSED=1
run "stacks off" stacks_off LD_PRELOAD="$agent" MEMTAP_ENDPOINT="$endpoint" MEMTAP_BUFFER_MB=4096
run "C stacks (>= 1 MiB)" c_stacks LD_PRELOAD="$agent" MEMTAP_ENDPOINT="$endpoint" MEMTAP_BUFFER_MB=4096 \
  MEMTAP_STACKS=c
run "stacks off, no consumer" no_consumer LD_PRELOAD="$agent" MEMTAP_ENDPOINT="$nobody" \
  MEMTAP_BUFFER_MB=4096
echo "(commit $(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo ?), $(nproc) CPUs)"
cat "$results"
