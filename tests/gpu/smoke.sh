#!/usr/bin/env bash
# GPU memory on a real GPU: a few CUDA training steps under `memtap run`, checked against
# PyTorch's own figures (check_recording.py), with the caching allocator's default
# segments and with expandable segments; each recording then exported as a PyTorch snapshot
# that PyTorch's memory viewer can draw (tests/e2e/memory_viz_check.py, which also runs this
# torch's own torch.cuda._memory_viz over it). Needs an NVIDIA GPU and a CUDA build of PyTorch;
# skips with a message (exit 0) where there is none. The test suite runs it unchanged on the
# stand-in torch and CUDA (tests/e2e/gpu_smoke_test.cpp).
#
#   tests/gpu/smoke.sh [BUILD_DIR]        (default: build)
#   MEMTAP_SMOKE_PYTHON=/path/to/python   (default: python3)
#   MEMTAP=.gpu-bundle/bin/memtap         (a machine where memtap cannot be built: the bundle
#                                          scripts/gpu-bundle.sh makes here)
#   MEMTAP_SMOKE_OUT=DIR                  (where the recordings go; default: a new temp dir)
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
build=${1:-$here/../../build}
memtap=${MEMTAP:-$build/bin/memtap}
python=${MEMTAP_SMOKE_PYTHON:-python3}
out=${MEMTAP_SMOKE_OUT:-$(mktemp -d)}

if ! "$python" -c 'import torch, sys; sys.exit(0 if torch.cuda.is_available() else 1)' 2>/dev/null; then
  echo "tests/gpu/smoke.sh: skipped: no CUDA GPU visible to $python's PyTorch"
  exit 0
fi
[ -x "$memtap" ] || { echo "tests/gpu/smoke.sh: $memtap not found (build first)"; exit 1; }

# Each configuration is checked to the end even when the other fails: on a GPU machine lent
# for minutes, one run must say everything that is wrong.
check() {
  local conf=$1 name=$2
  echo "== PYTORCH_CUDA_ALLOC_CONF='$conf'"
  rm -f "$out/$name.db"
  PYTORCH_CUDA_ALLOC_CONF=$conf "$memtap" run -o "$out/$name.db" -- \
    "$python" "$here/smoke_train.py" --out "$out/$name.json"
  "$python" "$here/check_recording.py" "$out/$name.db" "$out/$name.json"
  "$memtap" report "$out/$name.db" > "$out/$name.report.txt"
  grep -A12 "device 0:" "$out/$name.report.txt"
  "$memtap" export "$out/$name.db" --format torch-snapshot -o "$out/$name.pickle"
  "$python" "$here/../e2e/memory_viz_check.py" "$out/$name.pickle"
}
failed=()
for conf in "" "expandable_segments:True"; do
  name=${conf:+expandable}
  name=${name:-segments}
  # Not `(check) || ...`: bash ignores errexit inside a command whose status is tested. The
  # subshell sets it again, since it inherits the `set +e` that lets this shell go on.
  set +e
  (
    set -e
    check "$conf" "$name"
  )
  status=$?
  set -e
  [ $status -eq 0 ] || failed+=("$name")
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "tests/gpu/smoke.sh: FAILED: ${failed[*]} (recordings in $out)"
  exit 1
fi
echo "tests/gpu/smoke.sh: passed (recordings in $out)"
