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

# Each stage says how long it took, so that a slow run shows where its time went (the suite
# should stay under 30 minutes on 2 cores), and all of them again at the end, where a log's
# tail shows them.
took=()
stage() {
  local name=$1 start=$SECONDS
  shift
  "$@"
  took+=("$name $((SECONDS - start)) s")
  echo "test.sh: $name took $((SECONDS - start)) s"
}

stage install-deps bash "$root/scripts/install-deps.sh"
stage check-format bash "$root/scripts/check-format.sh"
stage build bash "$root/scripts/build.sh"
# Sanitizer builds of the monitor's unit tests and the fuzz targets first, so that ctest's
# summary of the whole suite is the last thing printed.
stage sanitize bash "$root/scripts/sanitize.sh"
stage fuzz bash "$root/scripts/fuzz.sh"

status=0
start=$SECONDS
ctest --test-dir "$build_dir" --output-on-failure -j2 --timeout 600 --no-tests=error || status=$?
took+=("ctest $((SECONDS - start)) s")
printf -v line '%s, ' "${took[@]}"
echo "test.sh: ${line%, }; the whole suite $SECONDS s"
exit "$status"
