#!/usr/bin/env bash
# Benchmark: the cost of Python call stacks on a PyTorch CPU training loop.
#
# Runs tests/bench/stacks_train.py (a 3-layer MLP, 200 steps) with /usr/bin/python3:
#   plain      no agent
#   memtap     memtap run, stacks off
#   py_1MiB    memtap run --stacks python --stack-min-size 1MiB
#   py_4KiB    memtap run --stacks python --stack-min-size 4KiB
# STACKS_REPS times each (default 3), the modes interleaved, and prints the training loop's
# own wall time (train_ms) and its thread's CPU time (train_cpu_ms, steadier on a busy
# machine), with the medians' ratios to plain. It prints; it does not fail on ratios.
#
# Usage: tests/bench/run_stacks_train.sh   Environment: MEMTAP_BUILD_DIR (build/), STACKS_REPS (3)
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
build_dir=${MEMTAP_BUILD_DIR:-$root/build}
memtap=$build_dir/bin/memtap
python=${PYTHON:-/usr/bin/python3}
script=$root/tests/bench/stacks_train.py
reps=${STACKS_REPS:-3}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

"$python" -c 'import torch' 2>/dev/null || { echo "run_stacks_train: $python has no torch" >&2; exit 1; }
[[ -x $memtap ]] || { echo "run_stacks_train: $memtap not found; build first" >&2; exit 1; }

median() { tr ' ' '\n' <<<"$1" | awk NF | sort -n | awk '{v[NR]=$1} END {print NR ? v[int((NR+1)/2)] : "n/a"}'; }

modes=(plain memtap py_1MiB py_4KiB)
declare -A times=() cpu=()
echo "stacks_train: $reps runs per mode; $(nproc) cores, $("$python" -V 2>&1), torch $("$python" -c 'import torch; print(torch.__version__)')"
for ((rep = 1; rep <= reps; rep++)); do
  for mode in "${modes[@]}"; do
    db=$work/$mode.db
    case $mode in
      plain) cmd=("$python" "$script") ;;
      memtap) cmd=("$memtap" run -o "$db" -- "$python" "$script") ;;
      py_1MiB) cmd=("$memtap" run --stacks python --stack-min-size 1MiB -o "$db" -- "$python" "$script") ;;
      py_4KiB) cmd=("$memtap" run --stacks python --stack-min-size 4KiB -o "$db" -- "$python" "$script") ;;
    esac
    out=$("${cmd[@]}" 2>&1 </dev/null) || { echo "$mode run $rep failed:"; tail -n 5 <<<"$out"; continue; }
    ms=$(grep -o 'train_ms=[0-9]*' <<<"$out" | tail -n 1 | cut -d= -f2)
    cms=$(grep -o 'train_cpu_ms=[0-9]*' <<<"$out" | tail -n 1 | cut -d= -f2)
    stacked=""
    if [[ $mode == py_* ]]; then
      stacked=$(sqlite3 -readonly "$db" "SELECT COUNT(*) FROM memscope_dump WHERE \"Call Stack(Python)\" NOT IN ('', 'N/A')" 2>/dev/null || echo "?")
      stacked="rows_with_python_stack=$stacked"
    fi
    printf '%-8s %2d train_ms=%s train_cpu_ms=%s %s\n' "$mode" "$rep" "$ms" "$cms" "$stacked"
    times[$mode]+="$ms "
    cpu[$mode]+="$cms "
    rm -f "$db"
  done
done
plain=$(median "${times[plain]:-}")
plain_cpu=$(median "${cpu[plain]:-}")
echo "-- medians"
for mode in "${modes[@]}"; do
  m=$(median "${times[$mode]:-}")
  c=$(median "${cpu[$mode]:-}")
  awk -v mode="$mode" -v m="$m" -v p="$plain" -v c="$c" -v pc="$plain_cpu" \
    'function r(a, b) { return (b > 0 && a ~ /^[0-9]+$/) ? sprintf("%.3f", a / b) : "n/a" }
     BEGIN {printf "%-8s train_ms=%s ratio=%s  train_cpu_ms=%s ratio=%s\n", mode, m, r(m, p), c, r(c, pc)}'
done
