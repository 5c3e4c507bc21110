#!/usr/bin/env bash
# Benchmark: memtap's overhead on PyTorch CPU training (issue 4's limits).
#
# Runs two workloads of examples/train_leak.py with /usr/bin/python3 (Debian's python3-torch):
#   leak   the example as the README runs it (MLP 512-512-512-10, batch 64, one 40 MiB tensor
#          kept per step), TRAIN_STEPS steps (default 30)
#   large  a larger CPU training step: MLP 512-2048-2048-10, batch 64, no leak, 10 steps
# each plain, under `memtap run` with stacks off, and under `memtap run --stacks python`
# (Python stacks on allocations of at least 1 MiB, the agent's default), TRAIN_REPS
# times (default 3; the modes interleaved, so a noisy neighbour hits all of them alike),
# and, to separate the agent's own cost from the monitor's, with the agent preloaded but no
# monitor listening ("agent_only": the hooks and stacks run and events are buffered, nothing
# is sent). On this machine's two vCPUs whatever the monitor does while the program runs
# (here: writing the two million rows of `import torch`) slows the program by up to 80 %
# (tests/bench/RESULTS.md, the allocation storm); on a training node it has cores of its own;
# and prints a Markdown table of the training loop's wall time as the script measures it
# (train_ms, from its first step to its last: interpreter start-up, `import torch` and the
# recording's completion are outside it), medians and ratios to plain. Targets: stacks off
# < 1.05x, Python stacks < 1.25x. It prints; it does not fail on ratios. It ends with
# `RESULT training_WORKLOAD_MODE_ratio=X` lines (median over plain's) for tests/bench/run.
#
# Usage: tests/bench/run_training.sh
# Environment: MEMTAP_BUILD_DIR (default build/), TRAIN_REPS (3), TRAIN_STEPS (30).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build_dir=${MEMTAP_BUILD_DIR:-$root/build}
memtap=$build_dir/bin/memtap
python=/usr/bin/python3
reps=${TRAIN_REPS:-3}
steps=${TRAIN_STEPS:-30}
script=$root/examples/train_leak.py

[[ -x $memtap ]] || { echo "run_training: $memtap not found; build first (scripts/build.sh)" >&2; exit 1; }
"$python" -c 'import torch' 2>/dev/null ||
  { echo "run_training: $python cannot import torch (apt install python3-torch)" >&2; exit 1; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

declare -A args=(
  [leak]="--steps $steps"
  [large]="--no-leak --steps 10 --hidden 2048 --batch 64")
workloads=(leak large)
modes=(plain stacks_off stacks_python agent_only_stacks_off agent_only_stacks_python)
declare -A times  # "workload mode" -> space-separated train_ms of each run

run_once() {  # workload mode -> prints train_ms
  local w=$1 mode=$2 out stacks=()
  [[ $mode == *stacks_python ]] && stacks=(--stacks python)
  # shellcheck disable=SC2086  # the workload's arguments are split on purpose
  case $mode in
    plain) out=$("$python" "$script" ${args[$w]} 2>/dev/null) ;;
    agent_only_*)
      out=$(LD_PRELOAD=$build_dir/lib/libmemtap_agent.so MEMTAP_ENDPOINT=ipc://$work/none.sock \
        MEMTAP_STACKS=${stacks[1]:-} PYTHONPATH=$build_dir/lib/python \
        "$python" "$script" ${args[$w]} 2>/dev/null) ;;
    *) out=$("$memtap" run -o "$work/run.db" "${stacks[@]}" -- "$python" "$script" ${args[$w]} \
      2>/dev/null) ;;
  esac
  rm -f "$work/run.db"
  sed -n 's/.*train_ms=\([0-9.]*\).*/\1/p' <<<"$out"
}

median() {  # numbers... -> the median
  printf '%s\n' "$@" | sort -g | awk '{a[NR] = $1} END {print (NR % 2) ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2}'
}

for ((r = 1; r <= reps; r++)); do
  for w in "${workloads[@]}"; do
    for mode in "${modes[@]}"; do
      ms=$(run_once "$w" "$mode")
      [[ -n $ms ]] || { echo "run_training: $w $mode printed no train_ms" >&2; exit 1; }
      times["$w $mode"]+="$ms "
      echo "run $r: $w $mode train_ms=$ms" >&2
    done
  done
done

echo "| workload | mode | train_ms per run | median ms | x plain |"
echo "| --- | --- | --- | ---: | ---: |"
results=()
for w in "${workloads[@]}"; do
  # shellcheck disable=SC2086
  plain=$(median ${times["$w plain"]})
  for mode in "${modes[@]}"; do
    # shellcheck disable=SC2086
    m=$(median ${times["$w $mode"]})
    list=${times["$w $mode"]% }
    r=$(awk -v a="$m" -v b="$plain" 'BEGIN {printf "%.3f", a / b}')
    printf '| %s | %s | %s | %.0f | %s |\n' "$w" "$mode" "${list// /, }" "$m" "$r"
    results+=("training_${w}_${mode}_ratio=$r")
  done
done
echo
echo "(commit $(git -C "$root" rev-parse --short HEAD), $(nproc) CPUs, load average $(cut -d' ' -f1-3 /proc/loadavg))"
printf 'RESULT %s\n' "${results[@]}"
