// A recording with a leak across steps and one peak, shared by the findings and breakdown
// tests (viewdata and gui): eight steps, 10 ms apart; in each, the owner "cache" keeps 1000
// bytes more (one stack), "batch" takes 50,000 bytes and gives them back; in step 5 the
// owner "activations" holds 1 MiB for 3 ms, which is the Allocated peak.
#pragma once

#include <string>

#include "tests/unit/viewdata/recording_builder.h"

namespace memtap::test {

constexpr const char* kLeakStack = "leak_step (train.py:42)\nmain (train.py:10)";
constexpr const char* kLeakFrame = "leak_step (train.py:42)";
constexpr double kPeakMs = 52;

inline void build_leak_recording(RecordingBuilder& b) {
  for (int k = 1; k <= 8; ++k) {
    const double t = 10.0 * k;
    b.step(t, uint64_t(k));
    if (k == 8) break;
    b.malloc(t + 1, 0x100000 + uint64_t(k) * 0x1000, 1000, "cache", kLeakStack);
    b.malloc(t + 1.5, 0x900000, 50000, "batch", "forward (model.py:7)");
    if (k == 5) b.malloc(kPeakMs, 0x2000000, 1 << 20, "activations", "backward (model.py:9)");
    if (k == 5) b.free(55, 0x2000000);
    b.free(t + 8, 0x900000);
  }
}

}  // namespace memtap::test
