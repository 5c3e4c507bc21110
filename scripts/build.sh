#!/usr/bin/env bash
# Configures and builds memtap into build/ (RelWithDebInfo). Arguments are passed to cmake's
# configure step, e.g. scripts/build.sh -DMEMTAP_SANITIZE=address,undefined.
#
# MEMTAP_BUILD_DIR overrides the build directory. In CI (CI set, not "false"/"0") warnings
# are errors.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${MEMTAP_BUILD_DIR:-$root/build}

args=(-DCMAKE_BUILD_TYPE=RelWithDebInfo)
case ${CI:-} in
  '' | 0 | false | FALSE | False) ;;
  *) args+=(-DMEMTAP_WERROR=ON) ;;
esac

cmake -S "$root" -B "$build_dir" "${args[@]}" "$@"
cmake --build "$build_dir" -j "$(nproc)"
