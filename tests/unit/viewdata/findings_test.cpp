// The findings panel's list over recordings the real writer made: the leak names its owner,
// the stack under it and the moment of its last step, the peak its moment, a clean run says so.
#include "monitor/viewdata/findings.h"

#include <gtest/gtest.h>

#include "monitor/engine/analyzer.h"
#include "tests/unit/store/store_test_support.h"
#include "tests/unit/viewdata/device_rows.h"
#include "tests/unit/viewdata/leak_recording.h"
#include "tests/unit/viewdata/source_support.h"

namespace memtap {
namespace {

using viewdata::Finding;
using viewdata::FindingKind;

std::vector<Finding> findings_of(const std::string& path, uint32_t pid,
                                 int32_t device = kHostDevice, bool running = false) {
  auto source = test::open_loaded(path);
  if (!source) return {};
  return test::engine_query(*source, [&](const viewdata::EngineView& e) {
    return viewdata::compute_findings(e, pid, device, running);
  });
}

const Finding* find(const std::vector<Finding>& f, FindingKind kind, const std::string& part) {
  for (const Finding& x : f) {
    if (x.kind == kind && x.title.find(part) != std::string::npos) return &x;
  }
  return nullptr;
}

// The framework pool's findings from MemEvents (the readers map the rows to them): frees
// that waited for another stream raise Active's peak above Allocated's; a device whose pool
// is only sampled has its peak in the driver's blocks, and says so.
TEST(Findings, ThePeakSaysWhatThePoolAddsOrThatItIsOnlySampled) {
  constexpr int64_t MiB = 1 << 20;
  auto event = [](MemEventKind kind, int64_t t, int32_t device, Layer layer, uint64_t addr,
                  uint64_t size) {
    MemEvent e;
    e.kind = kind;
    e.ts_ns = 1'000'000'000 + t;
    e.pid = 5;
    e.device = device;
    e.layer = layer;
    e.addr = addr;
    e.size_bytes = size;
    return e;
  };
  MemEvent pending = event(MemEventKind::kFree, 3, 0, Layer::kPta, 0x1000, 4 * MiB);
  pending.free_pending = true;
  MemEvent sample = event(MemEventKind::kSnapshot, 12, 1, Layer::kPta, 0, 0);
  sample.snap_allocated = 3 * MiB;
  sample.snap_reserved = 6 * MiB;
  const std::vector<MemEvent> events = {
      event(MemEventKind::kMalloc, 1, 0, Layer::kHal, 0x1000, 16 * MiB),
      event(MemEventKind::kMalloc, 2, 0, Layer::kPta, 0x1000, 4 * MiB),
      pending,
      event(MemEventKind::kMalloc, 4, 0, Layer::kPta, 0x1000 + 4 * MiB, 4 * MiB),
      event(MemEventKind::kFreeCompleted, 5, 0, Layer::kPta, 0x1000, 4 * MiB),
      event(MemEventKind::kMalloc, 11, 1, Layer::kHal, 0x9000, 8 * MiB),
      sample,
  };
  StringTable strings;
  Analyzer analyzer(&strings);
  analyzer.add(events.data(), events.size());
  const viewdata::EngineView engine{analyzer, strings};

  const std::vector<Finding> pool = viewdata::compute_findings(engine, 5, 0);
  const Finding* peak = find(pool, FindingKind::kPeak, "Peak: 4.0 MiB allocated");
  ASSERT_NE(peak, nullptr);
  EXPECT_NE(peak->detail.find("with the frees that waited for another stream, Active peaked at "
                              "8.0 MiB"),
            std::string::npos)
      << peak->detail;

  const std::vector<Finding> sampled = viewdata::compute_findings(engine, 5, 1);
  peak = find(sampled, FindingKind::kPeak, "Peak: 8.0 MiB in the driver's blocks (HAL)");
  ASSERT_NE(peak, nullptr);
  EXPECT_NE(peak->detail.find("the framework pool is only sampled: its Allocated peaked at "
                              "3.0 MiB"),
            std::string::npos)
      << peak->detail;
}

TEST(Findings, TheLeakNamesItsOwnerTheStackUnderItAndItsSteps) {
  test::TempDir dir;
  test::RecordingBuilder b;
  test::build_leak_recording(b);
  const std::string path = dir.file("leak.db");
  b.write(path);
  const std::vector<Finding> f = findings_of(path, b.pid());

  const Finding* owner = find(f, FindingKind::kLeak, "owner cache");
  ASSERT_NE(owner, nullptr);
  EXPECT_EQ(owner->t_ns, b.at(80));         // the last step boundary
  EXPECT_EQ(owner->range_t0_ns, b.at(10));  // growing since step 1
  EXPECT_EQ(owner->range_t1_ns, b.at(80));
  ASSERT_TRUE(owner->block_filter.has_value());
  EXPECT_EQ(*owner->block_filter, "cache");
  EXPECT_EQ(owner->bytes, 7000);
  EXPECT_EQ(owner->view, "blocks");
  EXPECT_NE(owner->detail.find("per step since step 1"), std::string::npos) << owner->detail;
  // The stack that holds the owner's memory is named under the owner, as in the report, and
  // not again as a suspect of its own (the same memory seen the other way).
  EXPECT_NE(owner->detail.find(std::string("from ") + test::kLeakFrame), std::string::npos)
      << owner->detail;
  EXPECT_EQ(find(f, FindingKind::kLeak, "Leak suspect: stack"), nullptr);
  EXPECT_EQ(find(f, FindingKind::kLeak, "batch"), nullptr);  // it gives its bytes back
}

TEST(Findings, ThePeakHasItsMomentAndWhatHeldIt) {
  test::TempDir dir;
  test::RecordingBuilder b;
  test::build_leak_recording(b);
  const std::string path = dir.file("leak.db");
  b.write(path);
  const std::vector<Finding> f = findings_of(path, b.pid());
  ASSERT_FALSE(f.empty());
  const Finding& peak = f.front();
  EXPECT_EQ(peak.kind, FindingKind::kPeak);
  EXPECT_EQ(peak.t_ns, b.at(test::kPeakMs));
  EXPECT_EQ(peak.bytes, (1 << 20) + 50000 + 5000);
  EXPECT_EQ(peak.view, "breakdown");
  EXPECT_NE(peak.detail.find("activations"), std::string::npos) << peak.detail;
  EXPECT_EQ(find(f, FindingKind::kClean, ""), nullptr);
}

// A block without a stack is grouped under its name (keys.h): the peak of a GPU's HAL
// blocks said "by stack cudaMalloc". It names the API as an operator, and a real stack still
// as a stack.
TEST(Findings, ThePeakNamesABlockWithoutAStackByItsOperator) {
  test::TempDir dir;
  test::RecordingBuilder b;
  b.device_malloc(1, 0x7f0000000000, 64 << 20, 0, "cudaMalloc");
  b.malloc(2, 0x1000, 4096, "weights", "train.py(3): step");
  const std::string path = dir.file("gpu.db");
  b.write(path);
  const std::vector<Finding> gpu = findings_of(path, b.pid(), 0);
  ASSERT_FALSE(gpu.empty());
  EXPECT_EQ(gpu.front().kind, FindingKind::kPeak);
  EXPECT_EQ(gpu.front().detail.find("by stack"), std::string::npos) << gpu.front().detail;
  EXPECT_NE(gpu.front().detail.find("by operator cudaMalloc"), std::string::npos)
      << gpu.front().detail;
  const std::vector<Finding> host = findings_of(path, b.pid());
  ASSERT_FALSE(host.empty());
  // A real stack is still a stack: under the owner that holds it, as the report has it.
  EXPECT_NE(host.front().detail.find("by owner weights 4.0 KiB (100.0%); from train.py(3): step"),
            std::string::npos)
      << host.front().detail;
  EXPECT_EQ(host.front().detail.find("by stack"), std::string::npos) << host.front().detail;
}

// Most of a peak held by no owner: the owners it names do not read as the whole of it.
TEST(Findings, ThePeakSaysHowMuchHasNoOwnerBesideTheOwnersItNames) {
  test::TempDir dir;
  test::RecordingBuilder b;
  b.malloc(1, 0x1000, 4096, "batch");
  b.malloc(2, 0x10000, 61440);
  const std::string path = dir.file("owners.db");
  b.write(path);
  const std::vector<Finding> f = findings_of(path, b.pid());
  ASSERT_FALSE(f.empty());
  EXPECT_EQ(f.front().kind, FindingKind::kPeak);
  EXPECT_EQ(f.front().detail, "by owner batch 4.0 KiB (6.2%); 60.0 KiB (93.8%) has no owner")
      << f.front().detail;

  // Without any owner there is nothing to set it beside.
  test::RecordingBuilder plain;
  plain.malloc(1, 0x10000, 61440);
  const std::string plain_path = dir.file("plain.db");
  plain.write(plain_path);
  const std::vector<Finding> g = findings_of(plain_path, plain.pid());
  ASSERT_FALSE(g.empty());
  EXPECT_EQ(g.front().detail.find("no owner"), std::string::npos) << g.front().detail;
}

// The same beside the operators or stacks it names: "by operator aten::mul 65.0 KiB (0.1%)"
// alone read as the cause of a peak 99.8% of which had no operator.
TEST(Findings, ThePeakSaysHowMuchHasNoOperatorOrStackBesideThoseItNames) {
  test::TempDir dir;
  test::RecordingBuilder b;
  test::DeviceRows d(b);
  b.malloc(1, 0x1000, 4096, "", "train.py(3): step");
  b.malloc(2, 0x10000, 61440);
  d.malloc(3, "PTA", 0x7f0000000000, 64 * 1024, "", "aten::mul");
  d.malloc(4, "PTA", 0x7f0000100000, 63 << 20);
  const std::string path = dir.file("ops.db");
  b.write(path);
  d.append_to(path);

  const std::vector<Finding> gpu = findings_of(path, b.pid(), 0);
  ASSERT_FALSE(gpu.empty());
  EXPECT_EQ(gpu.front().kind, FindingKind::kPeak);
  EXPECT_EQ(gpu.front().detail,
            "by operator aten::mul 64.0 KiB (0.1%); 63.0 MiB (99.9%) has no operator")
      << gpu.front().detail;

  const std::vector<Finding> host = findings_of(path, b.pid());
  ASSERT_FALSE(host.empty());
  EXPECT_EQ(host.front().kind, FindingKind::kPeak);
  EXPECT_EQ(host.front().detail,
            "by stack train.py(3): step 4.0 KiB (6.2%); 60.0 KiB (93.8%) has no stack")
      << host.front().detail;
}

TEST(Findings, ACleanRunSaysSo) {
  test::TempDir dir;
  test::RecordingBuilder b;
  b.malloc(1, 0x1000, 4096, "weights");
  b.free(2, 0x1000);
  b.malloc(3, 0x1000, 4096, "weights");
  b.free(4, 0x1000);
  const std::string path = dir.file("clean.db");
  b.write(path);
  const std::vector<Finding> f = findings_of(path, b.pid());
  ASSERT_EQ(f.size(), 2u);
  EXPECT_EQ(f[0].kind, FindingKind::kPeak);
  EXPECT_EQ(f[1].kind, FindingKind::kClean);
  EXPECT_EQ(f[1].title, "Nothing wrong found");
  EXPECT_EQ(f[1].t_ns, 0);
  // A process still running: so far.
  EXPECT_EQ(findings_of(path, b.pid(), kHostDevice, true)[1].title, "Nothing wrong found so far");
}

// Without step markers, what was never freed is a finding, as the report's "live at the end"
// line: not "Nothing wrong found: no growing live memory" of a curve that climbed.
TEST(Findings, WithoutStepsWhatWasNeverFreedIsSaid) {
  test::TempDir dir;
  test::RecordingBuilder b;
  b.malloc(1, 0x1000, 2 << 20, "cache");
  b.malloc(2, 0x400000, 8 << 20, "batch");
  b.malloc(3, 0x2000, 4096, "weights");
  b.free(4, 0x400000);  // no growth toward OOM: the curve fell
  const std::string path = dir.file("kept.db");
  b.write(path);
  const std::vector<Finding> f = findings_of(path, b.pid());
  const Finding* kept = find(f, FindingKind::kLeak, "Live at the end: 2.0 MiB never freed");
  EXPECT_EQ(find(f, FindingKind::kOom, ""), nullptr);
  std::string titles;
  for (const Finding& x : f) titles += x.title + " | " + x.detail + "\n";
  ASSERT_NE(kept, nullptr) << titles;
  EXPECT_NE(kept->detail.find("no step markers to tell a leak by; growth +"), std::string::npos)
      << kept->detail;
  EXPECT_EQ(kept->t_ns, b.at(4));
  EXPECT_EQ(kept->bytes, (2 << 20) + 4096);
  EXPECT_EQ(find(f, FindingKind::kClean, ""), nullptr);

  // While the process runs, its last event is no end.
  const std::vector<Finding> live = findings_of(path, b.pid(), kHostDevice, true);
  EXPECT_NE(find(live, FindingKind::kLeak, "Live now: 2.0 MiB not freed yet"), nullptr);
  EXPECT_EQ(find(live, FindingKind::kLeak, "Live at the end"), nullptr);
}

// A recording of one host block and, on `device`, two HAL blocks (`first_owner`'s 2 MiB and
// 1 MiB of "activations") live when a cudaMalloc of 8 MiB fails: the OOM finding.
const Finding* oom_finding(const test::TempDir& dir, const std::string& name, int32_t device,
                           const std::string& first_owner, std::vector<Finding>* f,
                           int64_t* oom_ns) {
  test::RecordingBuilder b;
  b.malloc(1, 0x1000, 4096);
  const std::string path = dir.file(name);
  b.write(path);
  test::DeviceRows d(b, device);
  d.malloc(2, "HAL", 0x7f0000000000, 2 << 20, first_owner);
  d.malloc(3, "HAL", 0x7f1000000000, 1 << 20, "activations");
  d.oom(4, "cudaMalloc", 8 << 20, "HAL");
  d.append_to(path);
  *f = findings_of(path, b.pid(), device);
  *oom_ns = b.at(4);
  return find(*f, FindingKind::kOom, "Out of memory: cudaMalloc asked 8.0 MiB");
}

TEST(Findings, AnOomNamesTheCallAndTheLargestBlockLiveThen) {
  test::TempDir dir;
  std::vector<Finding> f;
  int64_t oom_ns = 0;
  const Finding* oom = oom_finding(dir, "oom.db", 0, "weights", &f, &oom_ns);
  ASSERT_NE(oom, nullptr);
  EXPECT_EQ(oom->t_ns, oom_ns);
  EXPECT_EQ(oom->bytes, 8 << 20);
  EXPECT_EQ(oom->detail, "largest live then: 2.0 MiB weights (of 2 listed)");
  ASSERT_TRUE(oom->block_filter.has_value());
  EXPECT_EQ(*oom->block_filter, "weights");

  // A block of no owner and no name is said by its size alone, not "(none)".
  const Finding* unnamed = oom_finding(dir, "unnamed.db", 1, "", &f, &oom_ns);
  ASSERT_NE(unnamed, nullptr);
  EXPECT_EQ(unnamed->detail, "largest live then: 2.0 MiB (of 2 listed)");
}

// PyTorch's allocator, refused, gives its cached segments back and asks again: one finding
// that says so, naming what was live at the last refusal (the 4 MiB segment went back).
TEST(Findings, ARequestRefusedAgainIsOneOomFindingWithTheBlocksOfItsLastRefusal) {
  test::TempDir dir;
  test::RecordingBuilder b;
  b.malloc(1, 0x1000, 4096);
  const std::string path = dir.file("again.db");
  b.write(path);
  test::DeviceRows d(b, 0);
  d.malloc(2, "HAL", 0x7f0000000000, 2 << 20, "weights");
  d.malloc(3, "HAL", 0x7f1000000000, 4 << 20);  // a cached segment
  d.oom(4, "cudaMalloc", 8 << 20, "HAL");
  d.free(5, "HAL", 0x7f1000000000);
  d.oom(6, "cudaMalloc", 8 << 20, "HAL");
  d.append_to(path);
  const std::vector<Finding> f = findings_of(path, b.pid(), 0);
  size_t ooms = 0;
  for (const Finding& x : f) ooms += x.kind == FindingKind::kOom;
  EXPECT_EQ(ooms, 1u);
  const Finding* oom = find(f, FindingKind::kOom, "Out of memory: cudaMalloc asked 8.0 MiB");
  ASSERT_NE(oom, nullptr);
  EXPECT_EQ(oom->t_ns, b.at(4));
  EXPECT_EQ(oom->detail,
            "refused 2 times; largest live at the last refusal: 2.0 MiB weights (of 1 listed)");
}

TEST(Findings, NoneForAScopeWithoutEvents) {
  test::TempDir dir;
  test::RecordingBuilder b;
  b.malloc(1, 0x1000, 4096);
  const std::string path = dir.file("one.db");
  b.write(path);
  EXPECT_TRUE(findings_of(path, b.pid() + 1).empty());
}

TEST(Findings, AFindingsBlockIsFoundInTheBlockIndex) {
  test::TempDir dir;
  test::RecordingBuilder b;
  b.malloc(1, 0x1000, 4096);
  b.malloc(2, 0x2000, 4096);
  b.free(3, 0x1000);
  b.malloc(4, 0x1000, 4096);  // the same address and size, later
  const std::string path = dir.file("blocks.db");
  b.write(path);
  auto source = test::open_loaded(path);
  ASSERT_NE(source, nullptr);
  const auto id = test::block_query(*source, [&](viewdata::BlockQueries& q) {
    return viewdata::find_finding_block(q, b.pid(), kHostDevice, {0x1000, b.at(4), 4096});
  });
  ASSERT_TRUE(id.has_value());
  const auto row =
      test::block_query(*source, [&](viewdata::BlockQueries& q) { return q.find(*id); });
  ASSERT_TRUE(row.has_value());
  EXPECT_EQ(row->alloc_ns, b.at(4));
  EXPECT_EQ(row->addr, 0x1000u);
}

}  // namespace
}  // namespace memtap
