# Sourced by scripts/sanitize.sh and scripts/fuzz.sh: configures a clang-14 build of memtap with
# sanitizers, the one way both scripts configure a folder, so that the ASan build they share
# (build-asan: the unit tests under ASan+UBSan, and the fuzz targets) is configured alike by
# either and neither script makes the other's build start over.
#
#   configure_clang_build DIR SANITIZER [CMAKE ARGS...]

clang_build_tools_present() {
  local script=$1 tool
  for tool in clang-14 clang++-14; do
    command -v "$tool" >/dev/null || {
      echo "$script: $tool not found (scripts/install-deps.sh installs clang and libFuzzer)" >&2
      return 1
    }
  done
}

configure_clang_build() {
  local root dir=$1 sanitizer=$2 werror=OFF
  shift 2
  root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
  case ${CI:-} in
    '' | 0 | false | FALSE | False) ;;
    *) werror=ON ;;
  esac
  # -O1 -g1: sanitizer builds cost most of the suite's time in the compiler; line tables are
  # enough for the reports. clang: it compiles the same files under ASan+UBSan in half the
  # time gcc takes (the engine, the store and its readers: 174 s of compiler time against
  # 359 s on a 2-core machine), and libFuzzer comes with it. A folder an earlier gcc build
  # left is removed: cmake would keep its compiler, or drop the options with its cache.
  if [[ -f $dir/CMakeCache.txt ]] && ! grep -q '^CMAKE_CXX_COMPILER:.*clang++-14$' "$dir/CMakeCache.txt"; then
    rm -rf "$dir"
  fi
  cmake -S "$root" -B "$dir" -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
    -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1" \
    -DCMAKE_C_FLAGS_DEBUG="-O1 -g1" -DMEMTAP_WERROR=$werror \
    -DMEMTAP_SANITIZE="$sanitizer" "$@" >/dev/null
}
