#!/usr/bin/env bash
# The window's benchmarks: a 10-million-event recording opened in memtap-gui against
# `memtap report` of the same file, the redraw time of zoom/scroll/select, and a live run of
# 1 M events/s watched in the window against the same run headless. Prints figures; passes
# or fails nothing.
#   tests/bench/run_gui.sh [BUILD_DIR]        (default: build)
# The recording is made once in ${MEMTAP_BENCH_DIR:-/tmp}/memtap_bench_10m.db (1.5 GB), as
# run_engine.sh makes it. Environment: GUI_REPS (3 loads and 3 reports), GUI_ROUNDS (20
# interaction rounds), LIVE_RATE (1e6 events/s), LIVE_SECONDS (8), GUI_BUSY=1 (two busy
# loops beside every run: the machine a training run shares).
# Ends with `RESULT name=value` lines for tests/bench/run.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../../build}
reps=${GUI_REPS:-3}
rounds=${GUI_ROUNDS:-20}
rate=${LIVE_RATE:-1e6}
seconds=${LIVE_SECONDS:-8}
file=${MEMTAP_BENCH_DIR:-/tmp}/memtap_bench_10m.db
[ -s "$file" ] || "$here/make_big_recording.sh" "$file" 10000000
work=$(mktemp -d)
# shellcheck source=tests/bench/busy_loops.sh
. "$here/busy_loops.sh"
cleanup() {
  stop_busy_loops
  rm -rf "$work"
}
trap cleanup EXIT
if [[ ${GUI_BUSY:-0} == 1 ]]; then
  start_busy_loops 2
  echo "(two busy loops run beside every measurement)"
fi
results=()
median() { printf '%s\n' "$@" | awk NF | sort -g | awk '{v[NR]=$1} END {print NR ? v[int((NR+1)/2)] : "n/a"}'; }

echo "== a 10 M-event recording: memtap report, then the window (first curves < 1.5 s, loaded <= 1.2x report)"
cat "$file" >/dev/null
report=() first=() loaded=()
for ((run = 1; run <= reps; run++)); do
  /usr/bin/time -o "$work/time" -f "%e %M" "$build/bin/memtap" report "$file" >/dev/null
  read -r wall rss <"$work/time"
  echo "  memtap report: $wall s, max RSS $rss KB"
  report+=("$wall")
  "$build/bin/memtap" monitor "$file" --screenshot "$work/shot.png" --stats 2>"$work/gui" || true
  f=$(sed -n 's/.*first curves drawn \([0-9.]*\) s.*/\1/p' "$work/gui")
  l=$(sed -n 's/.*everything loaded \([0-9.]*\) s.*/\1/p' "$work/gui")
  echo "  memtap monitor --screenshot: first curves $f s, everything loaded $l s"
  first+=("$f") loaded+=("$l")
done
r=$(median "${report[@]}") l=$(median "${loaded[@]}")
results+=("gui_report_s=$r" "gui_first_curves_s=$(median "${first[@]}")" "gui_loaded_s=$l"
  "gui_load_vs_report=$(awk -v l="$l" -v r="$r" 'BEGIN {printf "%.2f", l / r}')")

echo "== zoom, scroll, select over it ($rounds rounds; redraw < 50 ms)"
"$build/tests/bench/memtap_bench_gui" "$file" "$rounds" 2>/dev/null | tee "$work/interactions"
results+=("$(sed -n 's/^RESULT \(gui_redraw_median_ms=.*\)/\1/p' "$work/interactions")"
  "$(sed -n 's/^RESULT \(gui_redraw_max_ms=.*\)/\1/p' "$work/interactions")"
  "$(sed -n 's/^RESULT \(gui_anon_kb=.*\)/\1/p' "$work/interactions")")

echo "== live: $rate events/s for $seconds s, in the window and headless (>= 10 redraws/s, no frame > 50 ms, no more loss)"
gen=("$build/tests/bench/memtap_bench_pipeline_gen" "$rate" "$seconds")
"$build/bin/memtap" run -o "$work/headless.db" -- "${gen[@]}" >/dev/null 2>"$work/headless"
"$build/bin/memtap" run --gui --screenshot "$work/live.png" --screenshot-after "$((seconds + 5))s" \
  --stats -o "$work/live.db" -- "${gen[@]}" >/dev/null 2>"$work/live" || true
grep -E "dropped|complete" "$work/headless" | sed 's/^/  headless: /'
grep -E "dropped|complete|memtap-gui" "$work/live" | sed 's/^/  window:   /'
dropped() { sed -n 's/.* \([0-9,]*\) dropped.*/\1/p' "$1" | head -n 1 | tr -d ,; }
results+=("live_dropped_headless=$(dropped "$work/headless")" "live_dropped_window=$(dropped "$work/live")"
  "live_redraws_min_per_s=$(sed -n 's/.*redraws per second while data arrived: min \([0-9]*\) .*/\1/p' "$work/live")"
  "live_frame_max_ms=$(sed -n 's/.* max \([0-9.]*\) ms, over 50 ms.*/\1/p' "$work/live")"
  "live_frames_over_50ms=$(sed -n 's/.*over 50 ms: \([0-9]*\).*/\1/p' "$work/live")")
printf 'RESULT %s\n' "${results[@]}"
