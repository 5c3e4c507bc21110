#!/usr/bin/env bash
# Benchmark: the whole pipeline's capacity, agent -> ZeroMQ -> monitor -> engine -> SQLite.
#
# Runs `memtap run -o DB -- memtap_bench_pipeline_gen RATE SECONDS THREADS` at a ladder of
# target rates (events/s; "max" = unpaced), PIPELINE_REPS times each (default 2), and prints
# per run:
#   achieved  the generator's own rate (events made / its seconds): can the program, with
#             the agent's hooks, even make RATE?
#   made      malloc + free events the generator made
#   dropped   events the agent dropped (memtap_session.events_dropped; its buffer was full
#             because the sender thread fell behind), plus messages the monitor saw missing
#             from the sequence (memtap_session.messages_lost), as "events+messages"
#   missing   events made that have no MALLOC/FREE row in the database (start-up adds a few
#             rows, so 0 when nothing was lost)
#   catchup   seconds from the generator's last event until `memtap run` returned (the
#             recording complete and the summary printed): the backlog queued in the monitor
#   engine    events/s the analyzer consumed while the generator ran, how long after the
#             generator's end it took its last batch ("lag"), and "eng/s": all the events it
#             took from the generator's start to that last batch, per second (what the
#             monitor's front half sustains, backlog included): from uprobes on
#             memtap::Analyzer::add (count argument), when perf can add them (root, tracefs);
#             otherwise n/a, and the per-thread CPU below tells the story
#   rec/s     database rows / seconds from the generator's start until memtap returned: the
#             recorder's rate into SQLite when it is the bottleneck (a lower bound otherwise)
#   cpu       CPU seconds of each thread, "during the generator's run/in all", read from
#             /proc/PID/task/*/stat every 0.1 s:
#               main    the monitor's main thread: ZeroMQ receive, Cap'n Proto decode,
#                       session (reorder), row conversion and the analyzer (engine), serially
#               writer  the recorder thread (SQLite inserts)
#               mzmq    the monitor's ZeroMQ I/O thread (socket reads)
#               gen     the generator's threads (malloc/free and the agent's hooks)
#               sender  the agent's sender thread (drain, encode, send)
#               azmq    the agent's ZeroMQ I/O thread (socket writes)
#             A thread near its run's seconds during the run is the bottleneck stage.
# The sustained capacity is the highest rate with nothing dropped or missing AND a small
# catch-up: with catch-up, the monitor only keeps up by queueing in memory (ZeroMQ's receive
# queue is unbounded and the writer queues rows), which a long run cannot do forever.
# It prints; it does not fail on ratios. The monitor threads are unnamed (comm "memtap"):
# main is the thread whose id is the process id, writer the first other "memtap" thread,
# "helper" any later one (the analyzer's timeline thread on a batch of 65536 events or more).
#
# Usage: tests/bench/run_pipeline.sh [rate ...]   rates in events/s, e.g. 5e6, or max
#        (default: 0.5e6 1e6 2e6 3e6 5e6 8e6 max)
# Environment: MEMTAP_BUILD_DIR (default build/), PIPELINE_SECONDS (2), PIPELINE_THREADS (1),
#   PIPELINE_REPS (2), PIPELINE_DB (/tmp/pipeline.db), PIPELINE_PROBES (1: uprobes when
#   possible; 0: never), PIPELINE_PERF (a directory: `perf record -g` of the monitor for each
#   "max" run goes there, with its top symbols per thread printed). MEMTAP_* variables reach
#   the agent and monitor as usual (MEMTAP_MONITOR_NICE, MEMTAP_BUFFER_MB, MEMTAP_LOSSLESS).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build_dir=${MEMTAP_BUILD_DIR:-$root/build}
gen=$build_dir/tests/bench/memtap_bench_pipeline_gen
memtap=$build_dir/bin/memtap
seconds=${PIPELINE_SECONDS:-2}
threads=${PIPELINE_THREADS:-1}
reps=${PIPELINE_REPS:-2}
db=${PIPELINE_DB:-/tmp/pipeline.db}
perf_dir=${PIPELINE_PERF:-}
rates=("$@")
((${#rates[@]})) || rates=(0.5e6 1e6 2e6 3e6 5e6 8e6 max)

for f in "$gen" "$memtap"; do
  [[ -x $f ]] || { echo "run_pipeline: $f not found; build first (scripts/build.sh)" >&2; exit 1; }
done

work=$(mktemp -d)
probe_group=memtap_bench_$$
probes=0
cleanup() {
  if ((probes)); then perf probe -q -d "$probe_group:*" >/dev/null 2>&1 || true; fi
  rm -rf "$work"
}
trap cleanup EXIT

# uprobes on the monitor: each Analyzer::add (the engine) and MemscopeWriter::append (rows
# handed to the recorder) with its count, the third argument (rdx) of the member function.
if [[ ${PIPELINE_PROBES:-1} != 0 ]] && command -v perf >/dev/null 2>&1 &&
   [[ -w /sys/kernel/tracing/uprobe_events || -w /sys/kernel/debug/tracing/uprobe_events ]]; then
  add_sym=$(nm "$memtap" 2>/dev/null | awk '!n && $3 ~ /^_ZN6memtap8Analyzer3addEPK.*m$/ {print $3; n = 1}')
  if [[ -n $add_sym ]] && perf probe -q --no-demangle -x "$memtap" \
       --add "$probe_group:engine_add=$add_sym count=%dx:u64" >/dev/null 2>&1; then
    probes=1
  fi
fi
((probes)) || echo "run_pipeline: no uprobes (not root, no tracefs, or PIPELINE_PROBES=0): engine rate n/a"

now_ns() { date +%s%N; }

fmt_rate() {
  awk -v r="$1" 'BEGIN {
    if (r !~ /^[0-9.e+]+$/) { print "n/a"; exit }
    if (r >= 1e6) printf "%.2fM\n", r / 1e6; else printf "%.0fk\n", r / 1e3 }'
}

sql() { sqlite3 -readonly -batch -noheader "$db" "$1" 2>/dev/null || echo "n/a"; }

# Appends "realtime_ns pid <the thread's /proc stat line>" for every thread of the monitor
# and of its children, every 0.1 s, until the file $work/stop exists. One cat per process:
# cheap enough not to disturb what it measures. Runs in the background: no errexit there.
sample_threads() {
  set +e
  local out=$1 mpid=$2 now p
  while [[ ! -e $work/stop ]]; do
    now=$(now_ns)
    for p in "$mpid" $(pgrep -P "$mpid"); do
      cat /proc/"$p"/task/*/stat 2>/dev/null | sed "s|^|$now $p |"
    done >>"$out"
    sleep 0.1
  done
}

# "during/total" CPU seconds per role from a samples file, given the monitor pid, the
# generator's end (realtime ns).
cpu_by_role() {
  local samples=$1 mpid=$2 gen_end=$3
  awk -v mpid="$mpid" -v end="$gen_end" -v hz="$(getconf CLK_TCK)" '
    {
      # $3 is the thread id, $4 "(comm)" (no spaces in the names here), utime and stime
      # are fields 14 and 15 of the stat line: $16 and $17
      key = $2 " " $3
      if (!(key in comm)) { comm[key] = substr($4, 2, length($4) - 2); order[++n] = key }
      total[key] = $16 + $17
      if ($1 <= end) during[key] = $16 + $17
    }
    END {
      writer_tid = 0
      for (i = 1; i <= n; i++) {
        split(order[i], k, " ")
        if (k[1] == mpid && k[2] != mpid && comm[order[i]] == "memtap" &&
            (writer_tid == 0 || k[2] + 0 < writer_tid)) writer_tid = k[2] + 0
      }
      for (i = 1; i <= n; i++) {
        key = order[i]; split(key, k, " "); c = comm[key]
        if (k[1] == mpid) {
          if (k[2] == mpid) role = "main"
          else if (c ~ /^ZMQbg\/IO/) role = "mzmq"
          else if (c ~ /^ZMQbg/) continue
          else if (k[2] + 0 == writer_tid) role = "writer"
          else role = "helper"
        } else {
          if (c ~ /^gen\//) role = "gen"
          else if (c ~ /^ZMQbg\/IO/) role = "azmq"
          else if (c ~ /^ZMQbg/) continue
          else role = "sender"
        }
        d[role] += during[key]; t[role] += total[key]; seen[role] = 1
      }
      split("main writer mzmq helper gen sender azmq", roles, " ")
      for (i = 1; i <= 7; i++) {
        r = roles[i]
        if (r in seen) printf "%s=%.2f/%.2f ", r, d[r] / hz, t[r] / hz
      }
      printf "\n"
    }' "$samples"
}

# "rate lag" of the engine from the perf script output: events per second that reached
# Analyzer::add between the generator's start and end (monotonic ns), and the seconds
# from the end to the last call.
engine_rate() {
  local script=$1 start=$2 end=$3
  awk -v s="$start" -v e="$end" '
    {
      for (i = 1; i <= NF; i++) {
        if ($i ~ /^[0-9]+\.[0-9]+:$/) ts = substr($i, 1, length($i) - 1) * 1e9
        if ($i ~ /^count=/) c = substr($i, 7)
      }
      if (ts >= s && ts <= e) during += c
      if (ts >= s) all += c
      if (c > 0 && ts > last) last = ts
    }
    END {
      # (parentheses: a bare ">" in a print statement would redirect the output to a file)
      if (e > s && last > s) {
        printf "%s %.2f %s\n", during / ((e - s) / 1e9), (last > e ? (last - e) / 1e9 : 0),
          all / ((last > e ? last - s : e - s) / 1e9)
      } else print "n/a n/a n/a"
    }' "$script"
}

echo "pipeline: memtap_bench_pipeline_gen RATE $seconds s, $threads thread(s), $reps runs per" \
     "rate; $(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(uname -r)," \
     "memtap $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?')"
printf '%-6s %3s %8s %9s %9s %8s %8s %8s %6s %8s %8s  %s\n' rate run achieved made dropped \
  missing catchup engine lag eng/s rec/s "cpu s (during run/total)"

capacity=none
for rate in "${rates[@]}"; do
  rate_ok=1
  for ((rep = 1; rep <= reps; rep++)); do
    rm -f "$db" "$db.partial" "$db.partial-wal" "$db.partial-shm"
    log=$work/run.log samples=$work/samples perf_out=$work/probe.data
    rm -f "$work/stop" "$samples"
    gen_rate=$rate
    [[ $rate == max ]] && gen_rate=max

    perf_pid=""
    if ((probes)); then
      perf record -q -e "$probe_group:engine_add" -a -k CLOCK_MONOTONIC -o "$perf_out" \
        >/dev/null 2>&1 &
      perf_pid=$!
      sleep 0.5  # perf attaches
    fi
    status=0
    "$memtap" run -o "$db" -- "$gen" "$gen_rate" "$seconds" "$threads" >"$log" 2>&1 </dev/null &
    mpid=$!
    sample_threads "$samples" "$mpid" &
    sampler=$!
    if [[ $rate == max && -n $perf_dir ]]; then
      mkdir -p "$perf_dir"
      sleep 0.3  # the monitor's threads exist: perf -p attaches to those it finds
      perf record -q -g -p "$mpid" -o "$perf_dir/monitor.max.$rep.data" >/dev/null 2>&1 &
      perf_g=$!
    fi
    wait "$mpid" || status=$?
    returned=$(now_ns)
    touch "$work/stop"
    wait "$sampler" || true
    [[ -n ${perf_g:-} ]] && { wait "$perf_g" || true; perf_g=""; }
    if [[ -n $perf_pid ]]; then kill -INT "$perf_pid" 2>/dev/null; wait "$perf_pid" || true; fi

    line=$(grep -o 'events=.*' "$log" | tail -n 1 || true)
    if ((status != 0)) || [[ -z $line ]]; then
      echo "$rate run $rep failed (exit $status); its output ends with:"
      tail -n 5 "$log" | sed 's/^/    /'
      rate_ok=0
      continue
    fi
    field() { grep -o "$1=[0-9.]*" <<<"$line" | cut -d= -f2; }
    made=$(field events) achieved=$(field achieved_rate)
    start_rt=$(field start_realtime_ns) end_rt=$(field end_realtime_ns)
    catchup=$(awk -v a="$returned" -v b="$end_rt" 'BEGIN {printf "%.1f", (a - b) / 1e9}')
    dropped_ev=$(sql "SELECT SUM(events_dropped) FROM memtap_session")
    lost_msg=$(sql "SELECT SUM(messages_lost) FROM memtap_session")
    rows=$(sql "SELECT COUNT(*) FROM memscope_dump WHERE Event IN ('MALLOC', 'FREE')")
    all_rows=$(sql "SELECT COUNT(*) FROM memscope_dump")
    missing=n/a
    [[ $rows =~ ^[0-9]+$ ]] && missing=$((made > rows ? made - rows : 0))
    rec=$(awk -v n="$all_rows" -v a="$returned" -v b="$start_rt" \
      'BEGIN {print (n ~ /^[0-9]+$/ && a > b) ? n / ((a - b) / 1e9) : "n/a"}')

    engine=n/a lag=n/a eng_all=n/a
    if [[ -n $perf_pid && -s $perf_out ]]; then
      read -r engine lag eng_all < <(perf script -i "$perf_out" -F time,trace 2>/dev/null |
        engine_rate /dev/stdin "$(field start_monotonic_ns)" "$(field end_monotonic_ns)")
      engine=$(fmt_rate "$engine") eng_all=$(fmt_rate "$eng_all")
    fi
    cpu=$(cpu_by_role "$samples" "$mpid" "$end_rt")

    printf '%-6s %3d %8s %9s %9s %8s %8s %8s %6s %8s %8s  %s\n' "$rate" "$rep" \
      "$(fmt_rate "$achieved")" "$made" "$dropped_ev+$lost_msg" "$missing" "$catchup" \
      "$engine" "$lag" "$eng_all" "$(fmt_rate "$rec")" "$cpu"
    if [[ $dropped_ev != 0 || $lost_msg != 0 || $missing != 0 ]]; then rate_ok=0; fi

    if [[ $rate == max && -n $perf_dir && -s $perf_dir/monitor.max.$rep.data ]]; then
      echo "    perf: $perf_dir/monitor.max.$rep.data; top symbols per monitor thread:"
      perf report -i "$perf_dir/monitor.max.$rep.data" --no-children --sort pid,sym \
        --stdio -q 2>/dev/null | awk 'NF && $1 ~ /%$/' | head -n 25 | sed 's/^/    /'
    fi
  done
  [[ $rate != max ]] && ((rate_ok)) && capacity=$rate
done
echo
echo "sustained capacity (highest rate of the ladder with nothing dropped or missing in any" \
     "run): $capacity events/s; read it with the catch-up column (a large catch-up means the" \
     "monitor kept up only by queueing in memory)"
echo "memtap's last recording: $db"
