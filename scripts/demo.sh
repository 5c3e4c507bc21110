#!/usr/bin/env bash
# The main job: installs what is missing, builds, and records the native example under
# `memtap run`. memtap prints its own report; this script says where the recording went and
# how to open it.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${MEMTAP_BUILD_DIR:-$root/build}
out=${MEMTAP_DEMO_OUT:-$root/memtap_demo.db}

bash "$root/scripts/install-deps.sh"
bash "$root/scripts/build.sh"

echo
echo "== memtap run -o $out -- memtap_example_native"
rm -f "$out"  # the demo's own file, from an earlier run
"$build_dir/bin/memtap" run -o "$out" -- "$build_dir/bin/memtap_example_native"

echo
echo "recording: $out"
echo "open it in the window: $build_dir/bin/memtap monitor '$out'"
echo "its report again:      $build_dir/bin/memtap report '$out'"
echo "or with SQL:           sqlite3 '$out' 'SELECT Event, \"Event Type\", COUNT(*) FROM memscope_dump GROUP BY 1, 2'"
