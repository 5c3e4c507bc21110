#!/usr/bin/env bash
# Benchmark: what CURVE (memtap record --keys) costs the monitor, in CPU seconds per million
# events, over TCP on loopback.
#
# For each repetition (CURVE_REPS, default 3), CURVE off and on in turn:
#   memtap record --listen tcp://127.0.0.1:* [--keys K] -o DB       (MEMTAP_PROGRESS_MS=100)
#   LD_PRELOAD=agent MEMTAP_ENDPOINT=... [MEMTAP_KEYS=K] memtap_bench_pipeline_gen RATE SECONDS
# then, once the monitor has analysed every event it received (its progress lines), reads
# the monitor's CPU time from /proc (utime + stime: the process, and its ZeroMQ I/O thread
# "ZMQbg/IO/0" alone, where the decryption happens) before stopping it. CPU time, not wall
# time: the machine is shared, and a busy neighbour stretches wall time far more than it
# changes the work done.
#
# Prints one line per run and a RESULT line per mode (the median of the runs):
#   RESULT curve_off_cpu_s_per_mevent=X  RESULT curve_on_cpu_s_per_mevent=Y
#   RESULT curve_off_zmq_io_cpu_s_per_mevent=X  RESULT curve_on_zmq_io_cpu_s_per_mevent=Y
# Environment: MEMTAP_BUILD_DIR (default build/), CURVE_RATE (events/s, default 1e6),
# CURVE_SECONDS (default 3), CURVE_REPS.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
build=${MEMTAP_BUILD_DIR:-$here/../../build}
memtap=$build/bin/memtap
agent=$build/lib/libmemtap_agent.so
gen=$build/tests/bench/memtap_bench_pipeline_gen
rate=${CURVE_RATE:-1e6}
seconds=${CURVE_SECONDS:-3}
reps=${CURVE_REPS:-3}
for f in "$memtap" "$agent" "$gen"; do
  [[ -x $f || -r $f ]] || { echo "missing $f: run scripts/build.sh" >&2; exit 1; }
done
work=$(mktemp -d /tmp/memtap-curve-XXXXXX)
recorder=
cleanup() {
  [[ -n $recorder ]] && kill "$recorder" 2>/dev/null && wait "$recorder" 2>/dev/null
  rm -rf "$work"
}
trap cleanup EXIT
"$memtap" keygen "$work/keys" >/dev/null
tick=$(getconf CLK_TCK)

# utime + stime of /proc/$1/stat (or a task's stat file), in seconds.
cpu_s() {
  awk -v t="$tick" '{ sub(/^.*\) /, ""); printf "%.3f", ($12 + $13) / t }' "$1"
}

one_run() {  # mode (off|on), run number
  local mode=$1 db=$work/$1-$2.db err=$work/$1-$2.err
  local keys=() env=()
  if [[ $mode == on ]]; then keys=(--keys "$work/keys"); env=(MEMTAP_KEYS="$work/keys"); fi
  MEMTAP_PROGRESS_MS=100 "$memtap" record --listen 'tcp://127.0.0.1:*' "${keys[@]}" -o "$db" \
    2>"$err" &
  recorder=$!
  local endpoint=
  for _ in $(seq 200); do
    endpoint=$(grep -o 'listening on tcp://[0-9.:]*' "$err" | sed 's/listening on //') || true
    [[ -n $endpoint ]] && break
    sleep 0.05
  done
  [[ -n $endpoint ]] || { echo "memtap record did not start:" >&2; cat "$err" >&2; exit 1; }
  local line events
  line=$(env "${env[@]}" LD_PRELOAD="$agent" MEMTAP_ENDPOINT="$endpoint" "$gen" "$rate" "$seconds")
  events=$(sed 's/.*events=\([0-9]*\).*/\1/' <<<"$line")
  # Until the engine has analysed what arrived and nothing more comes (60 s at most).
  local received=0 analysed=-1
  for _ in $(seq 600); do
    local last
    last=$(grep 'progress' "$err" | tail -1)
    received=$(sed 's/.*received=\([0-9]*\).*/\1/' <<<"$last")
    analysed=$(sed 's/.*analysed=\([0-9]*\).*/\1/' <<<"$last")
    ((received >= events && analysed >= received)) && break
    sleep 0.1
  done
  local total io=0 task
  total=$(cpu_s /proc/$recorder/stat)
  for task in /proc/$recorder/task/*; do
    [[ $(cat "$task/comm") == ZMQbg/IO/0 ]] && io=$(cpu_s "$task/stat")
  done
  kill "$recorder"
  wait "$recorder" || true
  recorder=
  local load
  load=$(cut -d' ' -f1 /proc/loadavg)
  awk -v m="$mode" -v e="$received" -v t="$total" -v i="$io" -v l="$load" -v g="$events" 'BEGIN {
    printf "curve=%s events_made=%d received=%d monitor_cpu_s=%.2f zmq_io_cpu_s=%.2f " \
           "cpu_s_per_mevent=%.3f zmq_io_cpu_s_per_mevent=%.3f load=%s\n",
           m, g, e, t, i, t / (e / 1e6), i / (e / 1e6), l }' | tee -a "$work/runs.txt"
}

echo "rate=$rate seconds=$seconds reps=$reps cores=$(nproc)"
for r in $(seq "$reps"); do
  one_run off "$r"
  one_run on "$r"
done
median() {  # mode field
  grep "curve=$1 " "$work/runs.txt" | sed "s/.* $2=\([0-9.]*\).*/\1/" | sort -n |
    awk '{ v[NR] = $1 } END { print (NR % 2) ? v[(NR + 1) / 2] : (v[NR / 2] + v[NR / 2 + 1]) / 2 }'
}
for mode in off on; do
  echo "RESULT curve_${mode}_cpu_s_per_mevent=$(median $mode cpu_s_per_mevent)"
  echo "RESULT curve_${mode}_zmq_io_cpu_s_per_mevent=$(median $mode zmq_io_cpu_s_per_mevent)"
done
