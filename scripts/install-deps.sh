#!/usr/bin/env bash
# Installs the Debian 12 packages that memtap builds, tests and benchmarks against.
#
# Asks dpkg first and touches apt only when something is missing, so on a machine that
# already has everything it takes a fraction of a second and needs no network. Works as
# root (CI) and as a normal user (through sudo).
set -euo pipefail

packages=(
  build-essential cmake pkg-config          # toolchain
  libzmq3-dev cppzmq-dev                    # transport
  libcapnp-dev capnproto                    # wire schema and its compiler
  libsqlite3-dev sqlite3                    # the recording, and the CLI to inspect it
  qt6-base-dev qt6-charts-dev libgl-dev     # the window (Qt 6 Widgets + Charts); Charts'
  libqt6opengl6-dev fonts-dejavu-core       #   CMake files need Qt6OpenGL, offscreen text a font
  libgtest-dev libgmock-dev libbenchmark-dev  # tests and micro-benchmarks
  libdw-dev                                 # symbolising C stacks (elfutils' libdw)
  libunwind8                                # capturing C stacks without frame pointers
                                            #   (the agent dlopens it; else backtrace())
  libcli11-dev                              # the command line's option parser
  bash-completion                           # memtap's completion, and its test, through
                                            #   bash-completion's loader
  nlohmann-json3-dev                        # JSON output (report --json, diff --json)
  python3-torch                             # PyTorch examples and tests
  heaptrack                                 # the benchmark's point of comparison
  clang-format                              # the test suite checks formatting
  patchelf                                  # scripts/gpu-bundle.sh (and its test)
  clang-14 libclang-rt-14-dev               # the fuzz targets and the sanitizer builds
                                            #   (scripts/fuzz.sh, sanitize.sh): libFuzzer
                                            #   and the ASan/UBSan/TSan runtimes
)

if ! command -v dpkg-query >/dev/null 2>&1; then
  echo "install-deps: dpkg-query not found; this script expects Debian 12 (install by hand:" \
       "${packages[*]})" >&2
  exit 1
fi

missing=()
for pkg in "${packages[@]}"; do
  # "ii" = desired install, currently installed; anything else (absent, config-files,
  # half-installed) counts as missing.
  status=$(dpkg-query -W -f='${db:Status-Abbrev}' "$pkg" 2>/dev/null || true)
  [[ $status == ii* ]] || missing+=("$pkg")
done

if ((${#missing[@]} == 0)); then
  echo "install-deps: all ${#packages[@]} packages present"
  exit 0
fi

echo "install-deps: installing ${missing[*]}"
if [[ $(id -u) -eq 0 ]]; then
  as_root=()
elif command -v sudo >/dev/null 2>&1; then
  as_root=(sudo)
else
  echo "install-deps: not root and no sudo; install as root: apt-get install ${missing[*]}" >&2
  exit 1
fi

apt=("${as_root[@]}" env DEBIAN_FRONTEND=noninteractive apt-get -q -y
     -o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold)
"${apt[@]}" update
"${apt[@]}" install --no-install-recommends "${missing[@]}"
