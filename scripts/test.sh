#!/usr/bin/env bash
# The whole test suite: installs what is missing, builds, runs the monitor's unit tests
# under ASan/UBSan and TSan (scripts/sanitize.sh), a short run of each fuzz target
# (scripts/fuzz.sh), then every test with ctest.
# Exits with ctest's status. .ci/run calls exactly this.
#
# --no-tests=error: a build that registered no tests is a failure, not a pass.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${MEMTAP_BUILD_DIR:-$root/build}

bash "$root/scripts/install-deps.sh"
bash "$root/scripts/check-format.sh"
bash "$root/scripts/build.sh"
# Sanitizer builds of the monitor's unit tests and the fuzz targets first, so that ctest's
# summary of the whole suite is the last thing printed.
bash "$root/scripts/sanitize.sh"
bash "$root/scripts/fuzz.sh"

status=0
ctest --test-dir "$build_dir" --output-on-failure -j2 --timeout 600 --no-tests=error || status=$?
exit "$status"
