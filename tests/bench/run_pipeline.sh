#!/usr/bin/env bash
# Benchmark: the whole pipeline's capacity, agent -> ZeroMQ -> monitor -> engine -> SQLite.
# Needs no root: every figure comes from the generator's own line, memtap's progress lines,
# the database and /proc.
#
# For each form (PIPELINE_FORMS: "text" = the default msMemScope table, "compact" =
# `memtap run --compact`), runs
#   MEMTAP_PROGRESS_MS=100 memtap run [--compact] -o DB -- memtap_bench_pipeline_gen RATE SECONDS THREADS
# at a ladder of target rates (events/s; "max" = unpaced), PIPELINE_REPS times each, and
# prints per run:
#   load      the 1-minute load average as the run started (this VM is shared: read every
#             figure with it)
#   achieved  the generator's own rate (events made / its seconds): can the program, with
#             the agent's hooks, even make RATE?
#   dropped   events the agent dropped (memtap_session.events_dropped) + messages the monitor
#             saw missing from the sequence (memtap_session.messages_lost), as "events+messages"
#   missing   events made that have no MALLOC/FREE row in the database (0 when nothing lost)
#   engine    rows/s the engine analysed while the generator ran: the progress lines'
#             `analysed`, interpolated at the generator's start and end (CLOCK_MONOTONIC,
#             printed by the generator), over the generator's seconds
#   lag       seconds from the generator's end until `analysed` reached what the monitor had
#             `received` at that end (interpolated between progress lines, 0.1 s apart): how
#             far the engine was behind the events that had reached it
#   e2e       seconds from the generator's end until `analysed` reached the events made: the
#             agent's backlog and the transport included
#   writer    the writer's best rows/s into SQLite over 1 s of progress lines during which it
#             had a backlog (received - written > 10,000 at both ends): its sustained capacity.
#             ">" before it: it never had a backlog, the figure is its best rate seen, a
#             lower bound
#   spooled   rows that waited on disk (MEMTAP_QUEUE_MEMORY_ROWS exceeded), from progress
#   catchup   seconds from the generator's last event until `memtap run` returned (the
#             recording complete)
#   cpu       per thread (by name), "% of the generator's seconds during its run / CPU s in
#             all", from /proc/PID/task/*/stat every 0.1 s:
#               main     the monitor's main thread "memtap": ZeroMQ receive, Cap'n Proto
#                        decode, session (reorder), row conversion
#               analyze  "memtap-analyze": the live analyses (the engine)
#               writer   "memtap-writer": SQLite inserts
#               ckpt     "memtap-ckpt": WAL checkpoints
#               mzmq     the monitor's ZeroMQ threads ("ZMQbg/...")
#               gen      the generator's threads ("gen/N": malloc/free and the agent's hooks)
#               sender   the agent's "memtap-sender" (drain, encode, send)
#               azmq     the agent's ZeroMQ threads
#             (any other thread appears under its own name). A thread near 100 % during the
#             run is the stage that limits it; nice= is the monitor's nice value as sampled.
#
# Sustained capacity of a form: the highest ladder rate at which, in every run, the generator
# made at least 95 % of it, nothing was dropped or missing AND e2e <= 0.5 s (the engine had
# analysed every event made within half a second of the program's end: it kept up end to
# end, agent and transport included, behind only the session's 0.25 s reorder horizon). For
# "max", the lowest achieved rate of its runs. Ends with
#   RESULT pipeline_engine_mevs=X                 the best of the forms measured (M events/s)
#   RESULT pipeline_engine_mevs_text=X pipeline_engine_mevs_compact=X
#   RESULT pipeline_recorder_mrows_s_text=X pipeline_recorder_mrows_s_compact=X
#                                                  the writer's best sustained M rows/s seen
# (0 when no rate met the criterion; n/a for a form not measured). Read it with catch-up:
# past the writer's capacity the rows wait in memory and on disk (spooled), nothing is lost,
# but the recording completes that much later.
#
# The monitor's share of a core while the program runs on busy cores: MEMTAP_CPU_SHARE as
# given (unset: memtap's default, 2.5 % per thread, rising with the backlog).
# MEMTAP_CPU_SHARE=100 shows the pipeline's own capacity; the default shows what a training
# run gets when its process has the CPU first (on few cores the monitor then mostly catches
# up after the program, so lag and catch-up grow).
# It prints; it does not fail on ratios.
#
# Usage: tests/bench/run_pipeline.sh [rate ...]   rates in events/s, e.g. 5e6, or max
#        (default: PIPELINE_RATES, else 0.5e6 1e6 2e6 3e6 4e6 5e6 8e6 max)
# Environment: MEMTAP_BUILD_DIR (default build/), PIPELINE_FORMS ("text compact"),
#   PIPELINE_SECONDS (2), PIPELINE_THREADS (1), PIPELINE_REPS (2), PIPELINE_DB
#   (/tmp/pipeline.db; the compact one beside it as .compact.db), PIPELINE_PERF (a
#   directory: `perf record -g` of the monitor for each "max" run goes there, with its top
#   symbols printed; needs perf_event_paranoid <= 1 or root), PIPELINE_MAX_SECONDS (0.5) and
#   PIPELINE_MAX_REPS (1) for the unpaced "max" runs: at 30-45 M events/s their catch-up
#   takes minutes per second of generation, and one short run already shows where the
#   pipeline stops. MEMTAP_BENCH_QUICK=1 (set by
#   tests/bench/run --quick): rates 1e6 3e6 5e6 max, 1 run each, 1 s, unless given. MEMTAP_*
#   variables reach the agent and monitor as usual (MEMTAP_CPU_SHARE, MEMTAP_BUFFER_MB,
#   MEMTAP_LOSSLESS, MEMTAP_QUEUE_MEMORY_ROWS).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build_dir=${MEMTAP_BUILD_DIR:-$root/build}
gen=$build_dir/tests/bench/memtap_bench_pipeline_gen
memtap=$build_dir/bin/memtap
quick=${MEMTAP_BENCH_QUICK:-0}
if [[ $quick == 1 ]]; then
  seconds=${PIPELINE_SECONDS:-1} reps=${PIPELINE_REPS:-1}
  default_rates="1e6 3e6 4e6 5e6 max"
else
  seconds=${PIPELINE_SECONDS:-2} reps=${PIPELINE_REPS:-2}
  default_rates="0.5e6 1e6 2e6 3e6 4e6 5e6 8e6 max"
fi
threads=${PIPELINE_THREADS:-1}
max_seconds=${PIPELINE_MAX_SECONDS:-0.5} max_reps=${PIPELINE_MAX_REPS:-1}
db_text=${PIPELINE_DB:-/tmp/pipeline.db}
perf_dir=${PIPELINE_PERF:-}
read -ra forms <<<"${PIPELINE_FORMS:-text compact}"
rates=("$@")
((${#rates[@]})) || read -ra rates <<<"${PIPELINE_RATES:-$default_rates}"

for f in "$gen" "$memtap"; do
  [[ -x $f ]] || { echo "run_pipeline: $f not found; build first (scripts/build.sh)" >&2; exit 1; }
done
for form in "${forms[@]}"; do
  [[ $form == text || $form == compact ]] ||
    { echo "run_pipeline: PIPELINE_FORMS: '$form' is neither text nor compact" >&2; exit 2; }
done

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

now_ns() { date +%s%N; }

fmt_rate() {
  awk -v r="$1" 'BEGIN {
    if (r !~ /^[0-9.e+]+$/) { print "n/a"; exit }
    if (r >= 1e6) printf "%.2fM\n", r / 1e6; else printf "%.0fk\n", r / 1e3 }'
}

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

# Per role: "role=P%/T" (P: CPU during the generator's run as % of its seconds, T: CPU
# seconds in all), then "nice=N" of the monitor's main thread; given the samples file, the
# monitor's pid and the generator's start and end (realtime ns).
cpu_by_role() {
  local samples=$1 mpid=$2 gen_start=$3 gen_end=$4
  awk -v mpid="$mpid" -v start="$gen_start" -v end="$gen_end" -v hz="$(getconf CLK_TCK)" '
    {
      # $3 is the thread id, $4 "(comm)" (thread names here have no spaces); utime and stime
      # are fields 14 and 15 of the stat line ($16, $17), nice field 19 ($21)
      key = $2 " " $3
      # the last name seen: a thread sampled before it named itself is still "memtap"
      if (!(key in comm)) order[++n] = key
      comm[key] = substr($4, 2, length($4) - 2)
      cpu = $16 + $17
      total[key] = cpu
      if ($1 <= start) before[key] = cpu
      if ($1 <= end) during[key] = cpu
      if ($2 == mpid && $3 == mpid) nice = $21
    }
    END {
      for (i = 1; i <= n; i++) {
        key = order[i]; split(key, k, " "); c = comm[key]
        if (k[1] == mpid) {
          role = c
          if (k[2] == mpid) role = "main"
          else if (c ~ /^ZMQbg/) role = "mzmq"
          else if (c == "memtap-analyze") role = "analyze"
          else if (c == "memtap-writer") role = "writer"
          else if (c == "memtap-ckpt") role = "ckpt"
        } else {
          role = c
          if (c ~ /^gen\//) role = "gen"
          else if (c ~ /^ZMQbg/) role = "azmq"
          else if (c == "memtap-sender") role = "sender"
        }
        if (!(role in seen)) { seen[role] = 1; roles[++m] = role }
        d[role] += during[key] - before[key]; t[role] += total[key]
      }
      seconds = (end - start) / 1e9
      for (i = 1; i <= m; i++) {
        r = roles[i]
        printf "%s=%.0f%%/%.1f ", r, (seconds > 0 ? 100 * d[r] / hz / seconds : 0), t[r] / hz
      }
      printf "nice=%s\n", nice
    }' "$samples"
}

# "engine lag e2e writer writer_backlogged spooled" from the progress lines of a run's log,
# given the generator's start and end (CLOCK_MONOTONIC ns) and the events it made.
progress_figures() {
  local log=$1 start=$2 end=$3 made=$4
  grep -o 'progress monotonic_ns=.*' "$log" | awk -v s="$start" -v e="$end" -v made="$made" '
    function val(str, name,   m) {
      if (match(str, name "=[0-9]+")) return substr(str, RSTART + length(name) + 1, RLENGTH - length(name) - 1) + 0
      return -1
    }
    # series a (recv, anal, wr) at time x, linear between lines; 0 before the first
    function at(a, x,   i) {
      if (n == 0 || x < t[1]) return 0
      for (i = 1; i < n; i++)
        if (x < t[i + 1]) return a[i] + (a[i + 1] - a[i]) * (x - t[i]) / (t[i + 1] - t[i])
      return a[n]
    }
    # seconds after the end when series a first reached v (interpolated; 0 if by the end;
    # -1 if never)
    function reached(a, v,   i, x) {
      for (i = 1; i <= n; i++) {
        if (a[i] >= v) {
          x = t[i]
          if (i > 1 && a[i] > a[i - 1]) x = t[i - 1] + (t[i] - t[i - 1]) * (v - a[i - 1]) / (a[i] - a[i - 1])
          return (x > e) ? (x - e) / 1e9 : 0
        }
      }
      return -1
    }
    {
      n++; t[n] = val($0, "monotonic_ns"); recv[n] = val($0, "received")
      anal[n] = val($0, "analysed"); wr[n] = val($0, "written"); sp = val($0, "spooled")
      if (sp > spooled) spooled = sp
    }
    END {
      if (n == 0 || e <= s) { print "n/a n/a n/a n/a 0 n/a"; exit }
      engine = (at(anal, e) - at(anal, s)) / ((e - s) / 1e9)
      lag = reached(anal, at(recv, e)); e2e = reached(anal, made)
      # the best rate over >= 1 s of lines, with and without a backlog at both ends
      best = -1; best_any = 0
      for (i = 1; i <= n; i++) {
        for (j = i + 1; j <= n && t[j] - t[i] < 1e9; j++) continue
        if (j > n) break
        r = (wr[j] - wr[i]) / ((t[j] - t[i]) / 1e9)
        if (r > best_any) best_any = r
        if (recv[i] - wr[i] > 10000 && recv[j] - wr[j] > 10000 && r > best) best = r
      }
      lag_s = lag < 0 ? "never" : sprintf("%.2f", lag)
      e2e_s = e2e < 0 ? "never" : sprintf("%.2f", e2e)
      backlogged = best >= 0
      if (!backlogged) best = best_any
      printf "%.0f %s %s %.0f %d %d\n", engine, lag_s, e2e_s, best, backlogged, spooled
    }'
}

share_shown=${MEMTAP_CPU_SHARE:-"unset (memtap's default, 2.5)"}
echo "pipeline: memtap_bench_pipeline_gen RATE $seconds s, $threads thread(s), $reps run(s) per" \
     "rate (max: $max_seconds s, $max_reps run(s)), forms: ${forms[*]}; MEMTAP_CPU_SHARE=$share_shown;" \
     "$(nproc) cores, load $(cut -d' ' -f1-3 /proc/loadavg), $(uname -r)," \
     "memtap $(git -C "$root" rev-parse --short HEAD 2>/dev/null || echo '?')"

declare -A capacity=() writer_best=()
for form in "${forms[@]}"; do
  db=$db_text flag=()
  [[ $form == compact ]] && db=${db_text%.db}.compact.db flag=(--compact)
  echo
  echo "== $form: memtap run ${flag[*]} -o $db"
  printf '%-6s %3s %5s %8s %9s %7s %8s %6s %6s %8s %8s %7s  %s\n' rate run load achieved \
    dropped missing engine lag e2e writer spooled catchup "cpu: % of the run during it/s in all"
  capacity[$form]=0 writer_best[$form]=0
  for rate in "${rates[@]}"; do
    rate_ok=1 rate_min_achieved="" run_seconds=$seconds run_reps=$reps
    [[ $rate == max ]] && run_seconds=$max_seconds run_reps=$max_reps
    for ((rep = 1; rep <= run_reps; rep++)); do
      rm -f "$db" "$db.partial" "$db.partial-wal" "$db.partial-shm" "$db.partial.spool"
      log=$work/run.log samples=$work/samples
      rm -f "$work/stop" "$samples"
      load=$(cut -d' ' -f1 /proc/loadavg)
      status=0
      MEMTAP_PROGRESS_MS=100 "$memtap" run "${flag[@]}" -o "$db" -- \
        "$gen" "$rate" "$run_seconds" "$threads" >"$log" 2>&1 </dev/null &
      mpid=$!
      sample_threads "$samples" "$mpid" &
      sampler=$!
      perf_g=""
      if [[ $rate == max && -n $perf_dir ]]; then
        mkdir -p "$perf_dir"
        sleep 0.3  # the monitor's threads exist: perf -p attaches to those it finds
        perf record -q -g -p "$mpid" -o "$perf_dir/monitor.$form.max.$rep.data" >/dev/null 2>&1 &
        perf_g=$!
      fi
      wait "$mpid" || status=$?
      returned=$(now_ns)
      touch "$work/stop"
      wait "$sampler" || true
      [[ -n $perf_g ]] && { wait "$perf_g" || true; }

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
      sql() { sqlite3 -readonly -batch -noheader "$db" "$1" 2>/dev/null || echo "n/a"; }
      dropped_ev=$(sql "SELECT SUM(events_dropped) FROM memtap_session")
      lost_msg=$(sql "SELECT SUM(messages_lost) FROM memtap_session")
      rows=$(sql "SELECT COUNT(*) FROM memscope_dump WHERE Event IN ('MALLOC', 'FREE')")
      missing=n/a
      [[ $rows =~ ^[0-9]+$ ]] && missing=$((made > rows ? made - rows : 0))
      read -r engine lag e2e writer backlogged spooled < <(progress_figures "$log" \
        "$(field start_monotonic_ns)" "$(field end_monotonic_ns)" "$made")
      cpu=$(cpu_by_role "$samples" "$mpid" "$start_rt" "$end_rt")
      writer_shown=$(fmt_rate "$writer")
      ((backlogged)) || writer_shown=">$writer_shown"
      awk -v w="$writer" -v b="${writer_best[$form]}" 'BEGIN {exit !(w + 0 > b + 0)}' &&
        writer_best[$form]=$writer

      printf '%-6s %3d %5s %8s %9s %7s %8s %6s %6s %8s %8s %7s  %s\n' "$rate" "$rep" "$load" \
        "$(fmt_rate "$achieved")" "$dropped_ev+$lost_msg" "$missing" "$(fmt_rate "$engine")" \
        "$lag" "$e2e" "$writer_shown" "$spooled" "$catchup" "$cpu"
      if [[ $dropped_ev != 0 || $lost_msg != 0 || $missing != 0 ]] ||
         ! awk -v l="$e2e" 'BEGIN {exit !(l ~ /^[0-9.]+$/ && l <= 0.5)}' ||
         { [[ $rate != max ]] && ! awk -v a="$achieved" -v r="$rate" 'BEGIN {exit !(a >= 0.95 * r)}'; }; then
        rate_ok=0
      fi
      if [[ -z $rate_min_achieved ]] || awk -v a="$achieved" -v m="$rate_min_achieved" 'BEGIN {exit !(a < m)}'; then
        rate_min_achieved=$achieved
      fi

      if [[ -n $perf_g && -s $perf_dir/monitor.$form.max.$rep.data ]]; then
        echo "    perf: $perf_dir/monitor.$form.max.$rep.data; top symbols per monitor thread:"
        perf report -i "$perf_dir/monitor.$form.max.$rep.data" --no-children --sort comm,sym \
          --stdio -q 2>/dev/null | awk 'NF && $1 ~ /%$/' | head -n 25 | sed 's/^/    /'
      fi
    done
    if ((rate_ok)) && [[ -n $rate_min_achieved ]]; then
      value=$rate
      [[ $rate == max ]] && value=$rate_min_achieved
      awk -v v="$value" -v c="${capacity[$form]}" 'BEGIN {exit !(v + 0 > c + 0)}' &&
        capacity[$form]=$value
    fi
  done
  echo "$form: sustained capacity (nothing dropped or missing, e2e <= 0.5 s, every run):" \
    "$(fmt_rate "${capacity[$form]}") events/s; the writer's best: $(fmt_rate "${writer_best[$form]}") rows/s"
done

mevs() { awk -v v="$1" 'BEGIN {printf "%.2f", v / 1e6}'; }
best=0 engine_line="" writer_line=""
for form in text compact; do
  if [[ -n ${capacity[$form]:-} ]]; then
    engine_line+=" pipeline_engine_mevs_$form=$(mevs "${capacity[$form]}")"
    writer_line+=" pipeline_recorder_mrows_s_$form=$(mevs "${writer_best[$form]}")"
    awk -v v="${capacity[$form]}" -v b="$best" 'BEGIN {exit !(v + 0 > b + 0)}' && best=${capacity[$form]}
  else
    engine_line+=" pipeline_engine_mevs_$form=n/a"
    writer_line+=" pipeline_recorder_mrows_s_$form=n/a"
  fi
done
echo
echo "the last recordings: ${db_text} (text), ${db_text%.db}.compact.db (compact), as measured"
echo "RESULT pipeline_engine_mevs=$(mevs "$best")"
echo "RESULT${engine_line}"
echo "RESULT${writer_line}"
