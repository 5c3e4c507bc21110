#!/usr/bin/env bash
# The device hooks' overhead (docs/design-notes.md, agent/hooks "Device hooks"): the ns
# memtap's agent adds to a CUDA call. Target (issue): the hook on a device allocation adds at
# most 50 ns to the call (a real cudaMalloc costs microseconds).
#
# memtap_bench_cuda_hooks (cuda_hooks.c) times CUDA calls in one process against the stand-in
# runtime of tests/fake_cuda/, as PyTorch makes them: cudaMalloc + cudaFree, cudaMallocAsync +
# cudaFreeAsync on a stream, cuMemAlloc_v2 + cuMemFree_v2 and cuLaunchKernel through entry
# points (cudaGetDriverEntryPointByVersion), cudaLaunchKernel of a host function; each the best
# of CUDA_REPS rounds of CUDA_ITERATIONS calls, in ns per call (an allocation pair's time / 2).
# This script runs it without the agent ("plain") and under it ("agent": LD_PRELOAD, sending to
# memtap_bench_sink, which throws the batches away, as run_hot_path.sh does), alternating
# (plain then agent, agent then plain, ...), and reports per case the median over the rounds
# of (agent - plain) and the range of those differences.
#
# Against two stand-in drivers:
#   cheap  cuda_cheap_driver.c first on LD_LIBRARY_PATH: the stand-in driver with device memory
#          from a static arena, so an allocation pair costs tens of ns and the hook's own cost
#          shows. Its figures are the ones judged.
#   mmap   the stand-in alone, whose every block is an mmap and every free a munmap: a pair
#          costs microseconds and varies by hundreds of ns from run to run, which drowns the
#          hook's tens; shown for scale (a real cudaMalloc costs microseconds too).
# In the agent's runs the program also times cuMemAlloc_v2/cuMemFree_v2 and cuLaunchKernel as
# the driver's own cuGetProcAddress_v2 gives them, unwrapped: "in process" is the wrapped call
# minus that one, in the same process and rounds, so the hook alone and not the rest of the
# agent (its sender thread on the other core; the VM's phase between two processes).
# Busy: the cheap runs again beside two busy loops (as run_gui.sh's GUI_BUSY), wall clock and
# the thread's CPU time: the machine a training run shares.
#
# What an "added" figure includes: all the hook does for the call: the depth count (the
# runtime's own driver call passes through the driver wrapper), the device query (the
# stand-in's cuCtxGetDevice, a mutex: the "device query" line says what it costs alone), the
# timestamp (rdtsc), the record into the thread's buffer (and for async calls the stream's
# record), and for a launch the kernel's name from the per-function cache. Not what the
# sender then does with the record, on its own thread.
#
# First a check run under `memtap run` counts the device rows the program made (that the hooks
# did record in the runs measured). Prints figures; fails only when a run fails.
#   tests/bench/run_cuda.sh [BUILD_DIR]
# Environment: CUDA_ROUNDS (11), CUDA_MMAP_ROUNDS (9; 0: no mmap run), CUDA_BUSY_ROUNDS (5; 0: no
# busy run),
# CUDA_REPS (5), CUDA_ITERATIONS (200000), CUDA_MMAP_ITERATIONS (20000).
# Ends with `RESULT name=value` lines for tests/bench/run: cuda_CASE_added_ns (cheap; CASE
# malloc_free, async, driver_alloc, launch, driver_launch) and _range, cuda_alloc_added_ns (the
# worst of the three allocation cases), cuda_driver_alloc_inprocess_added_ns and
# cuda_driver_launch_inprocess_added_ns, cuda_device_query_ns, the same with cuda_mmap_ and
# cuda_busy_ (wall clock) and cuda_busy_cpu_ (CPU time), cuda_events_check (ok / FAILED).
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../../build}
bench=$build/tests/bench/memtap_bench_cuda_hooks
agent=$build/lib/libmemtap_agent.so
sink=$build/tests/bench/memtap_bench_sink
memtap=$build/bin/memtap
fake_dir=$build/tests/fake_cuda/lib
cheap_dir=$build/tests/bench/cheap_cuda
rounds=${CUDA_ROUNDS:-11}
mmap_rounds=${CUDA_MMAP_ROUNDS:-9}
busy_rounds=${CUDA_BUSY_ROUNDS:-5}
reps=${CUDA_REPS:-5}
iterations=${CUDA_ITERATIONS:-200000}
mmap_iterations=${CUDA_MMAP_ITERATIONS:-20000}
for f in "$bench" "$agent" "$sink" "$memtap" "$cheap_dir/libcuda.so.1" "$fake_dir/libcuda.so.1"; do
  [[ -e $f ]] || { echo "run_cuda: $f not built (scripts/build.sh)" >&2; exit 1; }
done

work=$(mktemp -d)
endpoint="ipc://$work/sink"
sink_pid=
watch_pid=
# shellcheck source=tests/bench/busy_loops.sh
. "$here/busy_loops.sh"
start_busy() { start_busy_loops 2; }
stop_busy() {
  local groups=("${busy_loop_pids[@]}") left
  stop_busy_loops
  ((${#groups[@]})) || return 0
  left=$(ps -o pid= -g "$(IFS=,; echo "${groups[*]}")" | wc -l || true)
  echo "busy loops stopped: $left of ${#groups[@]} groups' processes still running (ps)"
}
cleanup() {
  stop_busy >/dev/null
  [[ -z $sink_pid ]] || kill "$sink_pid" 2>/dev/null || true
  [[ -z $watch_pid ]] || kill "$watch_pid" 2>/dev/null || true
  rm -rf "$work"
}
trap cleanup EXIT
trap 'exit 130' INT TERM HUP  # through the EXIT trap

echo "cuda hooks: $(nproc) CPUs, load $(cut -d' ' -f1-3 /proc/loadavg), memtap" \
  "$(git -C "$here" rev-parse --short HEAD 2>/dev/null || echo '?'); $iterations calls" \
  "(mmap: $mmap_iterations) x best of $reps per case and run"

# --- the check: do the hooks record what the program does? --------------------------------
echo "== check: the device rows of one small run under memtap run (cheap stand-in)"
check=FAILED
if LD_LIBRARY_PATH=$cheap_dir "$memtap" run -o "$work/check.db" -- "$bench" --iterations 1000 \
  --reps 1 malloc_free async driver_alloc launch driver_launch driver_alloc_direct \
  >"$work/check.log" 2>&1; then
  # Each case: 1000 untimed + 1000 timed; cudaMalloc once more for the kernel's buffer. The
  # unwrapped driver_alloc_direct records nothing.
  # Through Python's sqlite3 module: a GPU machine lent to run this may have Python but no
  # sqlite3 program (the H200's had none, and the check read FAILED for that alone).
  got=$(python3 - "$work/check.db" <<'PY' 2>&1 || true
import sqlite3, sys
db = sqlite3.connect("file:" + sys.argv[1] + "?mode=ro", uri=True)
for row in db.execute("SELECT Event, Name, COUNT(*) FROM memscope_dump WHERE \"Event Type\" "
                      "IN ('HAL', 'KERNEL_LAUNCH') GROUP BY 1, 2 ORDER BY 1, 2"):
    print(*row)
PY
)
  printf '%s\n' "$got" | sed 's/^/    /'
  want=$'FREE N/A 6001\nKERNEL_LAUNCH bench_driver_kernel 2000\nKERNEL_LAUNCH bench_kernel 2000\nMALLOC cuMemAlloc_v2 2000\nMALLOC cudaMalloc 2001\nMALLOC cudaMallocAsync 2000'
  [[ $got == "$want" ]] && check=ok
else
  tail -n 5 "$work/check.log" | sed 's/^/    /'
fi
echo "check: $check"

# --- the runs -------------------------------------------------------------------------------
# The sink binds the endpoint before the benchmark starts: its "ready" line says so.
exec 3< <(exec "$sink" "$endpoint")
sink_pid=$!
read -r ready <&3 && [[ $ready == ready ]] || { echo "run_cuda: the sink did not start" >&2; exit 1; }
# Ends the sink should this script be killed outright (SIGKILL runs no trap).
(
  trap - EXIT INT TERM
  while kill -0 $$ 2>/dev/null; do sleep 1; done
  kill "$sink_pid" 2>/dev/null
) &
watch_pid=$!

mmap_cases=(malloc_free async driver_alloc driver_alloc_direct)

# run_one VARIANT MODE ROUND: one run; its output in $work/VARIANT.MODE.ROUND
run_one() {
  local variant=$1 mode=$2 round=$3 out=$work/$1.$2.$3
  local env=(LD_LIBRARY_PATH="$cheap_dir") args=(--iterations "$iterations" --reps "$reps")
  if [[ $variant == mmap ]]; then
    env=(LD_LIBRARY_PATH="$fake_dir") args=(--iterations "$mmap_iterations" --reps "$reps"
      "${mmap_cases[@]}")
  fi
  # The final flush may wait 1 s, not 10: beside the busy loops the nice-19 sender is starved,
  # and the records only go to the sink.
  [[ $mode == agent ]] && env+=(LD_PRELOAD="$agent" MEMTAP_ENDPOINT="$endpoint" MEMTAP_BUFFER_MB=4096
    MEMTAP_FLUSH_TIMEOUT_MS=1000)
  if ! env "${env[@]}" "$bench" "${args[@]}" >"$out" 2>&1; then
    echo "run_cuda: $variant $mode run $round failed; its output ends with:" >&2
    tail -n 5 "$out" >&2
    return 1
  fi
}

# series VARIANT ROUNDS: plain and agent alternately, the order turned every round.
series() {
  local variant=$1 n=$2 r mode order
  for ((r = 1; r <= n; r++)); do
    order=(plain agent)
    ((r % 2)) || order=(agent plain)
    for mode in "${order[@]}"; do run_one "$variant" "$mode" "$r" || exit 1; done
  done
  echo "($variant: $(head -n 1 "$work/$variant.agent.1" | sed 's/^[^;]*; //'))"
}

# summarise VARIANT ROUNDS CLOCK PREFIX: the table, and RESULT lines into $work/results.
# CLOCK: wall or cpu (the thread's CPU time).
summarise() {
  local variant=$1 n=$2 clock=$3 prefix=$4
  awk -v variant="$variant" -v n="$n" -v clock="$clock" -v prefix="$prefix" -v dir="$work" '
    function median(a, k,   i, j, t) {  # of a[1..k], sorted in place
      for (i = 2; i <= k; i++) for (j = i; j > 1 && a[j - 1] > a[j]; j--) {
        t = a[j]; a[j] = a[j - 1]; a[j - 1] = t }
      return k % 2 ? a[(k + 1) / 2] : (a[k / 2] + a[k / 2 + 1]) / 2
    }
    function load(file, into,   line, f, i, kv) {
      while ((getline line < file) > 0) {
        if (line !~ /^RESULT /) continue
        f = split(line, kv, /[ =]/)
        for (i = 2; i + 1 <= f; i += 2) into[kv[i]] = kv[i + 1]
      }
      close(file)
    }
    function key(c) { return "cuda_" c (clock == "cpu" ? "_cpu" : "") "_ns_per_call" }
    # One row: the medians of a and b over the rounds, and of (a - b) with its range.
    function row(label, name, ka, kb, ma, mb, div,   r, k, x, y, d, lo, hi, m) {
      k = 0
      for (r = 1; r <= n; r++) {
        if (!((r, ka) in ma) || !((r, kb) in mb)) continue
        k++; x[k] = ma[r, ka]; y[k] = mb[r, kb]; d[k] = (x[k] - y[k]) / div
      }
      if (!k) { printf "| %s | n/a | n/a | n/a | |\n", label; return }
      lo = hi = d[1]
      for (r = 2; r <= k; r++) { if (d[r] < lo) lo = d[r]; if (d[r] > hi) hi = d[r] }
      m = median(d, k)
      printf "| %s | %.1f | %.1f | %+.1f | %+.1f .. %+.1f |\n", label, median(y, k), median(x, k), m, lo, hi
      if (name != "") {
        printf "RESULT %s%s_added_ns=%.1f %s%s_added_range=%.1f..%.1f\n", prefix, name, m,
               prefix, name, lo, hi >> (dir "/results")
        added[name] = m
      }
    }
    BEGIN {
      for (r = 1; r <= n; r++) {
        delete p; delete a
        load(dir "/" variant ".plain." r, p); load(dir "/" variant ".agent." r, a)
        for (k in p) plain[r, k] = p[k]
        for (k in a) agent[r, k] = a[k]
      }
      label["malloc_free"] = "cudaMalloc + cudaFree"
      label["async"] = "cudaMallocAsync + cudaFreeAsync, a stream"
      label["driver_alloc"] = "cuMemAlloc_v2 + cuMemFree_v2, entry points"
      label["launch"] = "cudaLaunchKernel, a host function"
      label["driver_launch"] = "cuLaunchKernel, an entry point"
      label["pool_block"] = "a pool block: memtap_pool_alloc + free_requested + free_completed"
      split("malloc_free async driver_alloc launch driver_launch pool_block", cases, " ")
      printf "| case (%s, %s clock) | plain ns/call | agent ns/call | added ns/call, median | range (%d rounds) |\n",
             variant, clock, n
      print "| --- | ---: | ---: | ---: | --- |"
      for (i = 1; i <= 6; i++) {
        c = cases[i]
        if ((1, key(c)) in plain) row(label[c], c, key(c), key(c), agent, plain, 1)
      }
      row("in process, agent runs: cuMemAlloc_v2 + cuMemFree_v2 wrapped - unwrapped",
          "driver_alloc_inprocess", key("driver_alloc"), key("driver_alloc_direct"), agent, agent, 1)
      row("in process, plain runs: the same function twice (~0)", "", key("driver_alloc"),
          key("driver_alloc_direct"), plain, plain, 1)
      if ((1, key("driver_launch_direct")) in plain) {
        row("in process, agent runs: cuLaunchKernel wrapped - unwrapped", "driver_launch_inprocess",
            key("driver_launch"), key("driver_launch_direct"), agent, agent, 1)
        # The device query alone, as the plain runs time it (no hook runs in it).
        k = 0
        for (r = 1; r <= n; r++) if ((r, key("device_query")) in plain) q[++k] = plain[r, key("device_query")]
        if (k) {
          printf "| device query alone (the stand-in cuCtxGetDevice each device event calls) | %.1f | | | |\n", median(q, k)
          printf "RESULT %sdevice_query_ns=%.1f\n", prefix, median(q, k) >> (dir "/results")
        }
      }
      if (("malloc_free" in added) && ("async" in added) && ("driver_alloc" in added)) {
        w = added["malloc_free"]
        if (added["async"] > w) w = added["async"]
        if (added["driver_alloc"] > w) w = added["driver_alloc"]
        printf "RESULT %salloc_added_ns=%.1f\n", prefix, w >> (dir "/results")
      }
    }'
}

echo
echo "== cheap stand-in (device memory from an arena): $rounds rounds, plain and agent alternately"
series cheap "$rounds"
summarise cheap "$rounds" wall cuda_

if ((mmap_rounds > 0)); then
  echo
  echo "== mmap stand-in (tests/fake_cuda alone: mmap/munmap per block): $mmap_rounds rounds"
  series mmap "$mmap_rounds"
  summarise mmap "$mmap_rounds" wall cuda_mmap_
  plain_pair=$(awk '/^RESULT/ { for (i = 2; i <= NF; i++) if ($i ~ /^cuda_malloc_free_ns_per_call=/) {
    sub(/.*=/, "", $i); print $i } }' "$work"/mmap.plain.* | sort -g | awk '{ v[NR] = $1 }
    END { print NR ? v[int((NR + 1) / 2)] : "n/a" }')
  echo "(a plain cudaMalloc or cudaFree there: $plain_pair ns, median)"
  echo "RESULT cuda_mmap_malloc_free_plain_ns=$plain_pair" >>"$work/results"
fi

if ((busy_rounds > 0)); then
  echo
  echo "== cheap stand-in beside two busy loops: $busy_rounds rounds"
  start_busy
  series busy "$busy_rounds"
  stop_busy
  summarise busy "$busy_rounds" wall cuda_busy_
  echo
  summarise busy "$busy_rounds" cpu cuda_busy_cpu_
fi
echo
cat "$work/results"
echo "RESULT cuda_events_check=$check"
