# shellcheck shell=bash
# Busy loops beside a benchmark: other work that keeps every core busy. Sourced by the bench
# scripts that measure memtap on a busy machine.
#
# Each loop is a shell in a process group of its own, and stop_busy_loops ends the groups:
# a loop started as a plain background subshell once outlived its kill and ran on for an
# hour, under every benchmark after it (HISTORY.md, 2026-12-01).

busy_loop_pids=()

# start_busy_loops N: N loops, their group ids in busy_loop_pids.
start_busy_loops() {
  local i
  for ((i = 0; i < $1; i++)); do
    setsid bash -c 'while :; do :; done' &
    busy_loop_pids+=($!)
  done
}

# Ends every loop start_busy_loops started; safe to call twice, and from an EXIT trap.
stop_busy_loops() {
  ((${#busy_loop_pids[@]})) || return 0
  local pid
  for pid in "${busy_loop_pids[@]}"; do
    kill -- "-$pid" 2>/dev/null || kill "$pid" 2>/dev/null || true
  done
  wait "${busy_loop_pids[@]}" 2>/dev/null || true
  busy_loop_pids=()
}
