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
# CMakeLists.txt says why). Under TSan, so are the curves' tests of ranges older than the
# engine's window: 300,000-400,000 rows through the loader, 32 s of the stage's 43 s there,
# for threads that the other viewdata tests run through with fewer.
set -euo pipefail

root=$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)
# shellcheck source=scripts/clang-build.sh
source "$root/scripts/clang-build.sh"
# shellcheck source=scripts/parallel.sh
source "$root/scripts/parallel.sh"
clang_build_tools_present sanitize.sh || exit 1

run_sanitized() {
  local name=$1 sanitizer=$2 filter=$3
  shift 3
  local dir=$root/build-$name
  # The ASan build carries the fuzz targets too (scripts/fuzz.sh builds and runs them there).
  local extra=()
  [[ $name == asan ]] && extra=(-DMEMTAP_FUZZ=ON)
  configure_clang_build "$dir" "$sanitizer" "${extra[@]}"
  cmake --build "$dir" -j "$(nproc)" --target "$@"
  run_tests "$name" "$dir" "$filter" "$@"
}

# The test executables as many at a time as there are cores (scripts/parallel.sh), each one's
# output printed whole when it ends; fails when any failed, after all have run.
run_tests() {
  local name=$1 dir=$2 filter=$3
  shift 3
  start_test() {
    "$dir/tests/$1" --gtest_filter="$filter" --gtest_brief=1 >"$dir/tests/$1.sanitize.log" 2>&1
  }
  report_test() {
    echo "== $name: $1"
    cat "$dir/tests/$1.sanitize.log"
    (($2 == 0)) || echo "sanitize.sh: $name: $1 failed (exit $2)" >&2
  }
  run_in_parallel "$(nproc)" start_test report_test "$@"
}

export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1
export UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export TSAN_OPTIONS="halt_on_error=1 suppressions=$root/scripts/tsan.supp"
# The longest first, so that the last to end is a short one.
run_sanitized asan address,undefined '-*Throughput*:*ReadSpeed*:*FortyBytes*:MemtapRecording.ReadsBackEveryRow' viewdata_test \
  store_detail_test reader_test store_writer_test timeline_test engine_session_test \
  memtap_event_buffer_test blocks_test report_render_test
run_sanitized tsan thread '-*Throughput*:*DiskFull*:*FortyBytes*:*SignalHandler*:*ReusedDescriptor*:CurvesData.*OlderThanTheWindow*' \
  viewdata_test store_writer_test analysis_thread_test memtap_string_log_test \
  memtap_event_buffer_test memtap_wire_encoder_test transport_test memtap_memory_sampler_test
