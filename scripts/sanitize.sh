#!/usr/bin/env bash
# The monitor's unit tests under sanitizers: ASan+UBSan for the engine (it decodes
# untrusted messages), the analyses, the reader (untrusted files) and the store; TSan for the
# store's writer, spool and checkpoint threads, the live analysis thread, the CURVE
# authenticator's thread (transport), and the agent's
# lock-free string log and event buffers (built from their sources), and the window's data
# (viewdata: the loader's two threads, the block index's thread, the live source). The agent is
# never built with a sanitizer (their runtimes interpose malloc themselves), and the
# end-to-end tests preload it, so they run only in the plain build (scripts/test.sh).
#
# Throughput tests are left out here: they measure, and sanitizers slow them tenfold. Under
# TSan, so is the test of a signal handler landing inside a record: TSan delivers signals
# only at its own interceptors, and that test's thread waits in raw system calls. So is the
# test of a connection on a reused descriptor: its senders are forked children that start
# ZeroMQ's threads, which TSan forbids after a fork of a multi-threaded process. So is the
# reader's test that records with `memtap run`: this build has no memtap (the reader's
# CMakeLists.txt says why).
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
for tool in clang-14 clang++-14; do
  command -v "$tool" >/dev/null || {
    echo "sanitize.sh: $tool not found (scripts/install-deps.sh installs clang)" >&2
    exit 1
  }
done
werror=OFF
case ${CI:-} in
  '' | 0 | false | FALSE | False) ;;
  *) werror=ON ;;
esac

run_sanitized() {
  local name=$1 sanitizer=$2 filter=$3
  shift 3
  local dir=$root/build-$name
  # -O1 -g1: sanitizer builds cost most of the suite's time in the compiler; line tables are
  # enough for the reports. clang, as scripts/fuzz.sh: it compiles the same files under
  # ASan+UBSan in half the time gcc takes (the engine, the store and its readers: 174 s of
  # compiler time against 359 s on a 2-core machine). A folder an earlier gcc build left is
  # removed: cmake would keep its compiler, or drop the options with its cache.
  if [[ -f $dir/CMakeCache.txt ]] && ! grep -q '^CMAKE_CXX_COMPILER:.*clang++-14$' "$dir/CMakeCache.txt"; then
    rm -rf "$dir"
  fi
  cmake -S "$root" -B "$dir" -DCMAKE_C_COMPILER=clang-14 -DCMAKE_CXX_COMPILER=clang++-14 \
    -DCMAKE_BUILD_TYPE=Debug -DCMAKE_CXX_FLAGS_DEBUG="-O1 -g1" \
    -DCMAKE_C_FLAGS_DEBUG="-O1 -g1" -DMEMTAP_WERROR=$werror \
    -DMEMTAP_SANITIZE="$sanitizer" >/dev/null
  cmake --build "$dir" -j "$(nproc)" --target "$@"
  for test in "$@"; do
    echo "== $name: $test"
    "$dir/tests/$test" --gtest_filter="$filter" --gtest_brief=1
  done
}

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export TSAN_OPTIONS="halt_on_error=1 suppressions=$root/scripts/tsan.supp"
run_sanitized asan address,undefined '-*Throughput*:*ReadSpeed*:*FortyBytes*:MemtapRecording.ReadsBackEveryRow' engine_session_test \
  store_writer_test timeline_test blocks_test report_render_test reader_test store_detail_test \
  memtap_event_buffer_test viewdata_test
run_sanitized tsan thread '-*Throughput*:*DiskFull*:*FortyBytes*:*SignalHandler*:*ReusedDescriptor*' store_writer_test memtap_string_log_test \
  analysis_thread_test memtap_event_buffer_test memtap_wire_encoder_test viewdata_test \
  transport_test
