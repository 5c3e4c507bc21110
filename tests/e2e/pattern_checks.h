// The recording of one memtap_test_alloc_pattern run, checked against the pattern that
// tests/programs/alloc_pattern.h documents: every category's MALLOC and FREE counts per
// size, in the right process and on the right thread, aligned blocks aligned, the mapping
// recorded as mmap and the file mapping not at all, the fork child's inherited FREE, and
// both processes' memtap_session rows.
#pragma once

#include <cstdint>
#include <string>

#include "tests/e2e/recording_reader.h"

namespace memtap::e2e {

// One run, as its standard output and its launcher tell.
struct PatternRun {
  int64_t pid = 0;            // the program (parent)
  int64_t child_pid = 0;      // its fork() child
  int64_t main_tid = 0;       // the parent's main thread
  int64_t thread_tid = 0;     // the parent's second thread
  int64_t expected_ppid = 0;  // who started the program (memtap run, or the test)
  std::string command_line;   // argv joined with spaces
  std::string hostname;       // the host it ran on as it says; "" this machine
};

// Reads pid, child pid and thread ids from the program's standard output, which must be
// exactly the three lines alloc_pattern.h documents. False with *error otherwise.
bool parse_pattern_output(const std::string& out, PatternRun* run, std::string* error);

class Process;
// Waits for an alloc_pattern the test started under the agent and parses what it printed,
// as recording_checks expect it (its parent the test, its command line alloc_pattern). False,
// with the test failed, when it did not exit 0 or printed something else.
bool finish_pattern_run(Process& program, PatternRun* run);

// Checks the rows and session rows of run.pid and run.child_pid (other processes in the
// recording are left alone; expect_well_formed covers the rules every row follows).
void expect_alloc_pattern(const RecordingData& rec, const PatternRun& run);

}  // namespace memtap::e2e
