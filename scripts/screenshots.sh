#!/usr/bin/env bash
# Remakes the README's pictures of the window: records the PyTorch examples with memtap run,
# then renders views of those recordings offscreen (memtap monitor FILE --screenshot) into
# docs/images/. Needs a build (scripts/build.sh) and /usr/bin/python3 with torch.
#   scripts/screenshots.sh [OUT_DIR]        (default: docs/images)
set -euo pipefail
root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${MEMTAP_BUILD_DIR:-$root/build}
out=${1:-$root/docs/images}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$out"
memtap=$build/bin/memtap

echo "== recording examples/train_leak.py and examples/train_fragmentation.py"
"$memtap" run --stacks python --torch-ops -o "$work/leak.db" -- \
  /usr/bin/python3 "$root/examples/train_leak.py" --steps 12 >/dev/null 2>"$work/leak.log"
"$memtap" run --torch-ops -o "$work/frag.db" -- \
  /usr/bin/python3 "$root/examples/train_fragmentation.py" >/dev/null 2>"$work/frag.log"

shot() {  # FILE NAME VIEW [--at TIME] [--range FROM..TO]
  local file=$1 name=$2 view=$3
  shift 3
  "$memtap" monitor "$file" --screenshot "$out/$name.png" --size 1600x1000 --view "$view" "$@"
}
shot "$work/leak.db" leak_curves curves
# Steps 5 to 8 up close: the step lines, the mark, and the ranges' bars with their names.
steps=$(/usr/bin/python3 - "$work/leak.db" <<'EOF'
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
origin = db.execute('SELECT MIN("Timestamp(ns)") FROM memscope_dump').fetchone()[0]
steps = [t for (t,) in db.execute('SELECT "Timestamp(ns)" FROM memscope_dump WHERE '
                                  "Event = 'SYSTEM' AND \"Event Type\" = 'STEP' ORDER BY 1")]
print(f"{(steps[4] - origin) / 1e9 - 0.02:.3f}s..{(steps[7] - origin) / 1e9:.3f}s")
EOF
)
shot "$work/leak.db" leak_steps curves --range "$steps"
shot "$work/leak.db" leak_breakdown breakdown --at peak
shot "$work/leak.db" leak_flame flame
shot "$work/leak.db" leak_blocks blocks --at peak
shot "$work/leak.db" leak_events events
# The curves view has the lifetime graph below it. The fragmentation example's slabs are its
# own mmap'd pool, whose tensors no hook sees: the curves (Reserved far above Allocated) and
# the lifetime graph (the slabs) show it; the pool view would only say that the host heap
# has no pool segments.
shot "$work/frag.db" fragmentation_curves curves --at peak
echo "pictures in $out"
