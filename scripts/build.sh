#!/usr/bin/env bash
# Configures and builds memtap into build/ (RelWithDebInfo). Arguments are passed to cmake's
# configure step, e.g. scripts/build.sh -DMEMTAP_SANITIZE=address,undefined.
#
# MEMTAP_BUILD_DIR overrides the build directory. In CI (CI set, not "false"/"0") warnings
# are errors, and the debug information is line tables only (-g1, as the tests' own code and
# the sanitizer builds have): nobody steps through a CI build in a debugger, and full -g is a
# fifth of the compiler's time on the libraries (six of the heaviest files back to back,
# alternating: 112 and 117 s with -g, 93 and 88 s with -g1).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build_dir=${MEMTAP_BUILD_DIR:-$root/build}

args=(-DCMAKE_BUILD_TYPE=RelWithDebInfo)
case ${CI:-} in
  '' | 0 | false | FALSE | False) ;;
  *) args+=(-DMEMTAP_WERROR=ON "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG"
    "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O2 -g1 -DNDEBUG") ;;
esac

cmake -S "$root" -B "$build_dir" "${args[@]}" "$@"
cmake --build "$build_dir" -j "$(nproc)"
