// What a program under test says memtap must record and what the recording holds, in forms
// that compare as multisets, so that a missing, extra or double-counted row fails a test.
// The programs print one line per fact, "expect EVENT key=value ... pid=P tid=T", in the
// words of tests/programs/cuda_pool_prog.c (which lists the events and their keys); the
// CUDA tests and the PyTorch pool tests share these.
#pragma once

#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "tests/e2e/e2e_support.h"

namespace memtap::e2e {

using Fields = std::map<std::string, std::string>;

struct Expected {
  std::string event;  // deviceMalloc, deviceFree, pinnedMalloc, pinnedFree, kernelLaunch,
                      // deviceOom
  Fields fields;
};

std::vector<Expected> parse_expectations(const std::string& out);

// An address or stream as a number: the program prints "0x1000", the recording writes
// Ptr as "0x0000000000001000" and the Attr stream in decimal, as msMemScope does.
std::string canonical_hex(const std::string& text);

// An Attr value ({"size":"4096",...}); "" when absent.
std::string attr_value(const std::string& attr, const std::string& key);

struct Row {
  std::string event, event_type, name, device, ptr, attr;
  int64_t pid = 0;
  std::string stack_c;
};

struct Recording {
  ProcessResult result;
  std::vector<Expected> expected;
  std::vector<Row> rows;
};

// The recording's rows, in time order, into run->rows (a failure is the test's).
void read_recording_rows(const std::string& db, Recording* run);

// What each expectation and each row of an event says, in one comparable form: HAL
// (deviceMalloc, deviceFree, deviceOom), HOST_PINNED (pinnedMalloc, pinnedFree),
// kernelLaunch.
std::multiset<std::string> expected_as(const Recording& run, const std::string& event);
std::multiset<std::string> recorded_as(const Recording& run, const std::string& event);
// Each event's rows are the expectations, and the program printed some.
void expect_recorded(const Recording& run, const std::vector<std::string>& events);

// The same for the framework pool (PTA): poolMalloc, poolFree, poolFreeCompleted,
// poolState.
std::multiset<std::string> expected_pool(const Recording& run, const std::string& event);
std::multiset<std::string> recorded_pool(const Recording& run, const std::string& event);
// Every pool report the program printed is one row of its own, and nothing else is.
void expect_pool_rows(const Recording& run);

// Allocated, Reserved and Active as the program's expect lines say they went, in its order
// (one thread): their peaks, and how many frees waited.
struct PoolFigures {
  int64_t allocated_peak = 0, reserved_peak = 0, active_peak = 0, pending_frees = 0;
};
PoolFigures simulate_pool(const Recording& run, const std::string& device);

// Device 0's pool as `memtap report --json db` gives it.
struct ReportedPool {
  std::string source;
  int64_t allocated_peak = -1, reserved_peak = -1, active_peak = -1, pending_frees = -1;
  int64_t allocated_final = -1, active_final = -1;
};
ReportedPool reported_pool(const TempDir& dir, const std::string& db);

}  // namespace memtap::e2e
