#!/usr/bin/env bash
# Packs this build for a GPU machine where memtap cannot be built or installed (nothing can
# be fetched there), so that tests/gpu/smoke.sh runs there from a copy of the checkout:
#
#   scripts/gpu-bundle.sh [BUILD_DIR] [BUNDLE_DIR]     (default: build, .gpu-bundle)
#   then, on the GPU machine, in the checkout with the bundle beside it:
#   MEMTAP=.gpu-bundle/bin/memtap tests/gpu/smoke.sh
#   CUDA_MMAP_ROUNDS=0 tests/bench/run_cuda.sh .gpu-bundle/bench    (the CUDA hooks' cost)
#
# The bundle is the build's installed tree (cmake --install, stripped) with the shared
# libraries that memtap and its sender need and a plain system may lack (ZeroMQ, Cap'n Proto,
# SQLite, elfutils and what they need), in lib/memtap/deps. Each binary finds them through
# its own RUNPATH, not LD_LIBRARY_PATH: the traced program keeps its own libraries, and the
# sender, which the agent loads in a link namespace of its own, gets these. glibc and the C++
# runtime are the machine's own (they are backward compatible). Needs patchelf.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
build=${1:-$root/build}
bundle=${2:-$root/.gpu-bundle}

command -v patchelf >/dev/null || {
  echo "gpu-bundle: patchelf not found (apt-get install patchelf)" >&2
  exit 1
}
[ -x "$build/bin/memtap" ] || {
  echo "gpu-bundle: $build/bin/memtap not found (build first: scripts/build.sh)" >&2
  exit 1
}

rm -rf "$bundle"
cmake --install "$build" --prefix "$bundle" --strip >/dev/null
deps=$bundle/lib/memtap/deps
mkdir -p "$deps"

# The libraries each binary loads, but the machine's own: glibc's and the C++ runtime.
system_lib='^(libc|libm|libdl|librt|libpthread|libresolv|libutil|ld-linux-x86-64|libstdc\+\+|libgcc_s)\.so'
binaries=("$bundle/bin/memtap" "$bundle/lib/memtap/libmemtap_sender.so")
for bin in "${binaries[@]}"; do
  ldd "$bin" | awk '$2 == "=>" && $3 ~ /^\// {print $1, $3}' | while read -r name path; do
    [[ $name =~ $system_lib ]] && continue
    [ -e "$deps/$name" ] || cp -L "$path" "$deps/$name"
  done
done
for lib in "$deps"/*.so*; do
  chmod u+w "$lib"
  strip --strip-unneeded "$lib"
  patchelf --set-rpath '$ORIGIN' "$lib"
done
patchelf --set-rpath '$ORIGIN/../lib/memtap/deps' "$bundle/bin/memtap"
patchelf --set-rpath '$ORIGIN/deps' "$bundle/lib/memtap/libmemtap_sender.so"

# The CUDA hooks' benchmark, laid out as the build tree that tests/bench/run_cuda.sh takes:
# the agent and its sender in lib/ (copies: the sender finds its libraries from where it
# was loaded), memtap itself through a link (it finds its agent from its own real path),
# the bench program, its sink and the stand-in CUDA libraries in tests/. The cheap
# stand-in driver loads the stand-in from beside its own directory.
bench=$bundle/bench
benches=()
if [ -x "$build/tests/bench/memtap_bench_cuda_hooks" ]; then
  mkdir -p "$bench/bin" "$bench/lib" "$bench/tests/bench" "$bench/tests/fake_cuda"
  ln -s ../../bin/memtap "$bench/bin/memtap"
  cp "$bundle/lib/memtap/libmemtap_agent.so" "$bundle/lib/memtap/libmemtap_sender.so" "$bench/lib/"
  patchelf --set-rpath '$ORIGIN/../../lib/memtap/deps' "$bench/lib/libmemtap_sender.so"
  cp "$build/tests/bench/memtap_bench_cuda_hooks" "$build/tests/bench/memtap_bench_sink" \
    "$bench/tests/bench/"
  cp -a "$build/tests/bench/cheap_cuda" "$bench/tests/bench/"
  cp -a "$build/tests/fake_cuda/lib" "$bench/tests/fake_cuda/"
  patchelf --set-rpath '$ORIGIN/../fake_cuda/lib' "$bench/tests/bench/memtap_bench_cuda_hooks"
  patchelf --set-rpath '$ORIGIN/../../../lib/memtap/deps' "$bench/tests/bench/memtap_bench_sink"
  benches=("$bench/lib/libmemtap_sender.so" "$bench/tests/bench/memtap_bench_cuda_hooks"
    "$bench/tests/bench/memtap_bench_sink")
fi

# Nothing may resolve outside the bundle but the machine's own runtime.
for bin in "${binaries[@]}" "$deps"/*.so* "${benches[@]}"; do
  if ldd "$bin" | awk '$2 == "=>" {print $1, $3}' | grep -Ev "$system_lib" |
    grep -v " [^ ]*/lib/memtap/deps/" | grep -v " [^ ]*/fake_cuda/lib/" | grep .; then
    echo "gpu-bundle: $bin resolves the libraries above outside $deps" >&2
    exit 1
  fi
done
echo "gpu-bundle: $bundle ($(du -sh "$bundle" | cut -f1); $(ls "$deps" | wc -l) libraries in" \
  "lib/memtap/deps)"
