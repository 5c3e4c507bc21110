// The real PyTorch snapshots in ../shared/data/torch_snapshots (see SOURCES.txt there) read
// into events that agree with an independent reading of each file by Python's own
// unpickler (torch_snapshot_expect.py): per device the trace's allocations, frees and
// completions, the segments' reserved and allocated bytes at the dump, the blocks live
// then, the OOMs and the annotations. And the same snapshot pickled with protocols 2 to 5
// reads into the same events.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "tests/unit/reader/reader_test_support.h"
#include "tests/unit/reader/torch_snapshot_test_support.h"

namespace memtap {
namespace {

using test::python_figures;
using test::read_ok;
using test::time_ordered;
using test::torch_snapshot_samples;

struct DeviceFigures {
  long long trace_mallocs = 0;  // PTA MALLOCs of the trace's allocs (not there before it)
  long long frees = 0;          // PTA FREEs
  long long completions = 0;    // FREE_COMPLETEDs
  long long ooms = 0;
  long long live_blocks = 0, live_bytes = 0;          // PTA blocks live after the last event
  long long hal_bytes = 0;                            // HAL (segment) bytes live then
  long long final_reserved = 0, final_allocated = 0;  // the last pool SNAPSHOT's
};

std::map<int32_t, DeviceFigures> memtap_figures(Recording rec, long long* marks) {
  const uint32_t before = rec.strings.intern(kBeforeTraceOwner);
  std::map<int32_t, DeviceFigures> out;
  std::map<int32_t, std::map<uint64_t, uint64_t>> pta, hal;
  *marks = 0;
  for (const MemEvent& e : rec.events) {
    DeviceFigures& d = out[e.device];
    const bool block = e.kind == MemEventKind::kMalloc || e.kind == MemEventKind::kFree;
    if (block && e.layer == Layer::kPta) {
      if (e.kind == MemEventKind::kMalloc) {
        pta[e.device][e.addr] = e.size_bytes;
        d.trace_mallocs += e.owner != before;
      } else {
        pta[e.device].erase(e.addr);
        ++d.frees;
      }
    } else if (block && e.layer == Layer::kHal) {
      if (e.kind == MemEventKind::kMalloc) {
        hal[e.device][e.addr] = e.size_bytes;
      } else {
        hal[e.device].erase(e.addr);
      }
    } else if (e.kind == MemEventKind::kFreeCompleted) {
      ++d.completions;
    } else if (e.kind == MemEventKind::kOom) {
      ++d.ooms;
    } else if (e.kind == MemEventKind::kSnapshot && e.layer == Layer::kPta) {
      d.final_reserved = e.snap_reserved;
      d.final_allocated = e.snap_allocated;
    } else if (e.kind == MemEventKind::kMark || e.kind == MemEventKind::kRangeStart ||
               e.kind == MemEventKind::kRangeEnd) {
      ++*marks;
    }
  }
  out.erase(kNoDevice);  // the marks
  for (const auto& [device, blocks] : pta) {
    for (const auto& [addr, size] : blocks) {
      ++out[device].live_blocks;
      out[device].live_bytes += (long long)size;
    }
  }
  for (const auto& [device, blocks] : hal) {
    for (const auto& [addr, size] : blocks) out[device].hal_bytes += (long long)size;
  }
  return out;
}

class TorchSnapshotSamples : public ::testing::Test {
 protected:
  void SetUp() override {
    files_ = torch_snapshot_samples();
    if (files_.empty()) GTEST_SKIP() << test::kTorchSnapshotDir << " is absent";
    MEMTAP_SKIP_WITHOUT_PYTHON();
  }
  std::vector<std::string> files_;
};

TEST_F(TorchSnapshotSamples, EverySampleAgreesWithPythonsReading) {
  EXPECT_GE(files_.size(), 13u);  // the thirteen of SOURCES.txt
  for (const std::string& path : files_) {
    SCOPED_TRACE(path);
    std::map<std::string, long long> py = python_figures(path);
    ASSERT_FALSE(py.empty());
    const Recording rec = read_ok(path);
    EXPECT_EQ(rec.format, kFormatTorchSnapshot);
    EXPECT_EQ(rec.rows_skipped, 0u) << rec.warning;
    EXPECT_TRUE(time_ordered(rec));
    EXPECT_TRUE(rec.torch_snapshot.known);
    EXPECT_EQ((long long)rec.torch_snapshot.trace_entries, py["trace_entries"]);
    EXPECT_EQ(rec.torch_snapshot.synthetic_time, py["synthetic_time"] != 0);
    if (!rec.torch_snapshot.synthetic_time && !rec.events.empty()) {
      EXPECT_EQ(rec.events.front().ts_ns, py["first_ns"]);
      EXPECT_EQ(rec.events.back().ts_ns, py["last_ns"]);
    }
    long long marks = 0;
    const std::map<int32_t, DeviceFigures> ours = memtap_figures(rec, &marks);
    EXPECT_EQ(marks, py["marks"]);
    // Every device either reading has.
    std::map<int32_t, bool> devices;
    for (const auto& [device, figures] : ours) devices[device] = true;
    for (const auto& [key, value] : py) {
      if (key.rfind("device", 0) == 0) devices[std::stoi(key.substr(6))] = true;
    }
    EXPECT_FALSE(devices.empty() && py["trace_entries"] + py["marks"] > 0);
    for (const auto& [device, unused] : devices) {
      SCOPED_TRACE("device " + std::to_string(device));
      const std::string k = "device" + std::to_string(device) + ".";
      const auto it = ours.find(device);
      const DeviceFigures d = it != ours.end() ? it->second : DeviceFigures{};
      EXPECT_EQ(d.trace_mallocs, py[k + "alloc"]);
      EXPECT_EQ(d.frees, py[k + "free_requested"] + py[k + "pending_before"]);
      EXPECT_EQ(d.completions, py[k + "free_completed"] - py[k + "folded"]);
      EXPECT_EQ(d.ooms, py[k + "oom"]);
      EXPECT_EQ(d.live_blocks, py[k + "live_blocks"]);
      EXPECT_EQ(d.live_bytes, py[k + "live_bytes"]);
      EXPECT_EQ(d.hal_bytes, py[k + "reserved"]);
      EXPECT_EQ(d.final_reserved, py[k + "reserved"]);
      EXPECT_EQ(d.final_allocated, py[k + "allocated"]);
    }
  }
}

// The two layouts that read differently: torch 2.0's (blocks with history, no address,
// entries without time_us) and memory_snapshot()'s bare list, with the facts they give.
TEST_F(TorchSnapshotSamples, LegacyAndBareListLayouts) {
  const Recording legacy = read_ok(test::kTorchSnapshotDir + "LLM-inference__oom_snapshot.pickle");
  EXPECT_TRUE(legacy.torch_snapshot.synthetic_time);
  EXPECT_EQ(legacy.torch_snapshot.blocks_before_trace, 460u);
  EXPECT_EQ(legacy.torch_snapshot.segments_before_trace, 176u);
  // The history's frames are the blocks' stacks.
  size_t with_stack = 0;
  for (const MemEvent& e : legacy.events) {
    with_stack += e.kind == MemEventKind::kMalloc && e.layer == Layer::kPta && e.stack_python != 0;
  }
  EXPECT_EQ(with_stack, 460u);
  EXPECT_EQ(legacy.events.front().ts_ns, 1000000000);  // made-up times start at 1 s
  EXPECT_EQ(legacy.events.back().ts_ns, 1002000000);   // the dump, a step after its one entry

  const Recording list =
      read_ok(test::kTorchSnapshotDir + "LayoutEditing__memory_snapshot_list.pkl");
  EXPECT_EQ(list.torch_snapshot.trace_entries, 0u);
  EXPECT_TRUE(list.torch_snapshot.synthetic_time);
  EXPECT_EQ(list.torch_snapshot.blocks_before_trace, 1938u);
  for (const MemEvent& e : list.events) EXPECT_EQ(e.device, 1);
}

// A program of one stream: every free_completed is the entry right after its free_requested,
// four of them 43-121 us later (PyTorch gathered a stack for each entry). All fold into
// their FREE: none waited for another stream (at a 20 us window four did, and the report
// said so of a program with one stream).
TEST_F(TorchSnapshotSamples, AOneStreamProgramsSlowFreesStillFold) {
  const Recording rec = read_ok(test::kTorchSnapshotDir + "MAGMA27-a2__memory_snapshot.pickle");
  size_t pending = 0, completed = 0;
  for (const MemEvent& e : rec.events) {
    pending += e.kind == MemEventKind::kFree && e.free_pending;
    completed += e.kind == MemEventKind::kFreeCompleted;
  }
  EXPECT_EQ(pending, 0u);
  EXPECT_EQ(completed, 0u);
}

void expect_same_events(const Recording& a, const Recording& b) {
  ASSERT_EQ(a.events.size(), b.events.size());
  for (size_t i = 0; i < a.events.size(); ++i) {
    const MemEvent& x = a.events[i];
    const MemEvent& y = b.events[i];
    SCOPED_TRACE("event " + std::to_string(i));
    EXPECT_EQ(x.ts_ns, y.ts_ns);
    EXPECT_EQ(x.kind, y.kind);
    EXPECT_EQ(x.layer, y.layer);
    EXPECT_EQ(x.device, y.device);
    EXPECT_EQ(x.addr, y.addr);
    EXPECT_EQ(x.size_bytes, y.size_bytes);
    EXPECT_EQ(x.free_pending, y.free_pending);
    EXPECT_EQ(x.snap_reserved, y.snap_reserved);
    EXPECT_EQ(a.strings.get(x.owner), b.strings.get(y.owner));
    EXPECT_EQ(a.strings.get(x.name), b.strings.get(y.name));
    EXPECT_EQ(a.strings.get(x.stack_python), b.strings.get(y.stack_python));
    EXPECT_EQ(a.strings.get(x.stack_c), b.strings.get(y.stack_c));
    if (::testing::Test::HasFailure()) return;
  }
}

TEST_F(TorchSnapshotSamples, ProtocolsTwoToFiveReadTheSame) {
  test::TempDir dir;
  for (const char* name :
       {"MAGMA27-a2__memory_snapshot.pickle", "thesis-text-to-SQL__dump_snapshot_expandable.pickle",
        "LLM-inference__1.3b_snapshot.pickle"}) {
    const std::string path = test::kTorchSnapshotDir + name;
    const Recording original = read_ok(path);
    ASSERT_FALSE(original.events.empty()) << path;
    for (int protocol = 2; protocol <= 5; ++protocol) {
      SCOPED_TRACE(std::string(name) + " protocol " + std::to_string(protocol));
      const std::string copy = dir.file(std::to_string(protocol) + "_" + name);
      test::redump(path, protocol, copy);
      expect_same_events(original, read_ok(copy));
    }
  }
}

}  // namespace
}  // namespace memtap
