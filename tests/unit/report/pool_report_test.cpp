// The framework pool in `memtap report`: a device with PTA blocks gives the pool's peaks
// (Allocated, Reserved, Active, with their times) and final values, and says how many frees
// waited for another stream; a device with only pool SNAPSHOTs says its figures are samples.
// MemEvents in, through the Analyzer, as a recording's rows would give them.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "monitor/engine/analyzer.h"
#include "monitor/report/report_render.h"

namespace memtap {
namespace {

constexpr uint32_t kPid = 31;
constexpr int64_t KiB = 1024, MiB = 1024 * 1024;
constexpr int64_t kT0 = 1'700'000'000'000'000'000;
constexpr uint64_t kSeg = 0x7f00'0000'0000;

MemEvent event(MemEventKind kind, int64_t t_ms, int32_t device, Layer layer, uint64_t addr = 0,
               uint64_t size = 0) {
  MemEvent e;
  e.kind = kind;
  e.ts_ns = kT0 + t_ms * 1'000'000;
  e.pid = kPid;
  e.tid = kPid;
  e.device = device;
  e.layer = layer;
  e.addr = addr;
  e.size_bytes = size;
  return e;
}

MemEvent pta(MemEventKind kind, int64_t t_ms, uint64_t addr, uint64_t size, int64_t total) {
  MemEvent e = event(kind, t_ms, 0, Layer::kPta, addr, size);
  e.pool_total = total;
  return e;
}

MemEvent pool_snapshot(int64_t t_ms, int32_t device, int64_t allocated, int64_t reserved) {
  MemEvent e = event(MemEventKind::kSnapshot, t_ms, device, Layer::kPta);
  e.snap_allocated = allocated;
  e.snap_reserved = reserved;
  return e;
}

// A sampled state with the pool's own peaks (Attr max_allocated, max_reserved).
MemEvent pool_peaks(MemEvent e, int64_t max_allocated, int64_t max_reserved) {
  e.snap_max_allocated = max_allocated;
  e.snap_max_reserved = max_reserved;
  return e;
}

std::string text_of(const Report& r) {
  char* buf = nullptr;
  size_t len = 0;
  FILE* f = open_memstream(&buf, &len);
  report_text(r, f);
  fclose(f);
  std::string s(buf, len);
  free(buf);
  return s;
}

class PoolReportTest : public ::testing::Test {
 protected:
  void SetUp() override {
    MemEvent pending = pta(MemEventKind::kFree, 40, kSeg + MiB, 512 * KiB, 2 * MiB);
    pending.free_pending = true;
    events = {
        event(MemEventKind::kMalloc, 0, kHostDevice, Layer::kHost, 0x1000, 64),
        // Device 0: the pool reports its blocks; one free waits for a side stream.
        event(MemEventKind::kMalloc, 10, 0, Layer::kHal, kSeg, 2 * MiB),
        pta(MemEventKind::kMalloc, 20, kSeg, MiB, 2 * MiB),
        pta(MemEventKind::kMalloc, 30, kSeg + MiB, 512 * KiB, 2 * MiB),
        pending,
        pta(MemEventKind::kMalloc, 50, kSeg + 1536 * KiB, 256 * KiB, 2 * MiB),
        event(MemEventKind::kFreeCompleted, 60, 0, Layer::kPta, kSeg + MiB, 512 * KiB),
        // empty_cache would drop it; here the pool grows to 4 MiB without a block event.
        pool_snapshot(70, 0, int64_t(1280 * KiB), 4 * MiB),
        pta(MemEventKind::kFree, 80, kSeg, MiB, 4 * MiB),
        // Device 1: only torch.cuda.memory_stats() samples at each step.
        event(MemEventKind::kMalloc, 15, 1, Layer::kHal, 0x9000'0000'0000, 8 * MiB),
        pool_snapshot(25, 1, 3 * MiB, 8 * MiB),
        pool_peaks(pool_snapshot(35, 1, 5 * MiB, 8 * MiB), 7 * MiB, 10 * MiB),
        pool_peaks(pool_snapshot(45, 1, 2 * MiB, 6 * MiB), 6 * MiB, 12 * MiB),
    };
    std::stable_sort(events.begin(), events.end(),
                     [](const MemEvent& a, const MemEvent& b) { return a.ts_ns < b.ts_ns; });
    Analyzer analyzer(&strings);
    analyzer.add(events.data(), events.size());
    report = analyzer.report({});
  }

  const DeviceReport& device(int32_t d) const {
    for (const DeviceReport& r : report.devices)
      if (r.device == d) return r;
    ADD_FAILURE() << "no report for device " << d;
    return report.devices.front();
  }

  StringTable strings;
  std::vector<MemEvent> events;
  Report report;
};

TEST_F(PoolReportTest, ADeviceWithPoolBlocksGivesThePoolsPeaksAndFinalValues) {
  const PoolSection& p = device(0).pool;
  EXPECT_EQ(p.source, "blocks");
  EXPECT_EQ(p.allocated.peak_bytes, 1536 * KiB);
  EXPECT_EQ(p.allocated.peak_ns, kT0 + 30'000'000);
  EXPECT_EQ(p.allocated.final_bytes, 256 * KiB);
  // Active: B's 512 KiB stay from its FREE (40 ms) to its completion (60 ms).
  EXPECT_EQ(p.active.peak_bytes, 1792 * KiB);
  EXPECT_EQ(p.active.peak_ns, kT0 + 50'000'000);
  EXPECT_EQ(p.active.final_bytes, 256 * KiB);
  // Reserved: the PTA rows' total, then the pool's SNAPSHOT at once.
  EXPECT_EQ(p.reserved.peak_bytes, 4 * MiB);
  EXPECT_EQ(p.reserved.peak_ns, kT0 + 70'000'000);
  EXPECT_EQ(p.reserved.final_bytes, 4 * MiB);
  EXPECT_EQ(p.snapshots, 1u);
  EXPECT_EQ(p.pending_frees, 1u);
  EXPECT_EQ(p.pending_bytes, 0);
  // The fragmentation finding reads the pool's figures: Reserved - Allocated, at the widest
  // gap where memory was asked for (the sample at 70 ms), not after the last FREE (80 ms).
  EXPECT_EQ(device(0).fragmentation.reserved, 4 * MiB);
  EXPECT_EQ(device(0).fragmentation.allocated, 1280 * KiB);
  EXPECT_EQ(device(0).fragmentation.worst_ns, kT0 + 70'000'000);
}

TEST_F(PoolReportTest, ADeviceWithOnlySamplesSaysSo) {
  const PoolSection& p = device(1).pool;
  EXPECT_EQ(p.source, "samples");
  EXPECT_EQ(p.snapshots, 3u);
  EXPECT_EQ(p.allocated.peak_bytes, 5 * MiB);
  EXPECT_EQ(p.allocated.peak_ns, kT0 + 35'000'000);
  EXPECT_EQ(p.allocated.final_bytes, 2 * MiB);
  EXPECT_EQ(p.reserved.peak_bytes, 8 * MiB);
  EXPECT_EQ(p.reserved.final_bytes, 6 * MiB);
  EXPECT_EQ(p.active.peak_bytes, 5 * MiB);
  // What the pool held between the samples, as it said itself: the largest of its peaks
  // (a program may reset torch's peaks, so a later one can be lower).
  EXPECT_EQ(p.max_allocated, 7 * MiB);
  EXPECT_EQ(p.max_reserved, 12 * MiB);
  EXPECT_EQ(device(0).pool.max_allocated, kUnknown);  // its state came without peaks
  EXPECT_EQ(device(0).pool.max_reserved, kUnknown);
  EXPECT_EQ(device(kHostDevice).pool.source, "");
}

// The pool's blocks are what the device allocated; its segment (HAL) holds them and is
// counted apart, not added (which counted every block twice). A device with only samples of
// its pool has the driver's blocks alone.
TEST_F(PoolReportTest, AllocatedIsThePoolsBlocksAndTheSegmentsAreCountedApart) {
  const DeviceReport& d = device(0);
  EXPECT_EQ(d.allocations, 3u);
  EXPECT_EQ(d.frees, 2u);
  EXPECT_EQ(d.bytes_allocated, int64_t(1792 * KiB));
  EXPECT_EQ(d.driver_allocations, 1u);
  EXPECT_EQ(d.driver_bytes_allocated, int64_t(2 * MiB));
  EXPECT_NE(text_of(report).find("pid 31, device 0: 3 allocations, 2 frees, 1.8 MiB allocated by "
                                 "the pool's blocks (PTA), in 1 of the driver's (HAL, 2.0 MiB)\n"),
            std::string::npos)
      << text_of(report);
  EXPECT_EQ(device(1).bytes_allocated, int64_t(8 * MiB));
  EXPECT_EQ(device(1).driver_allocations, 0u);
}

TEST_F(PoolReportTest, TextAndJsonSayIt) {
  const std::string text = text_of(report);
  EXPECT_NE(text.find("Pool: the framework's blocks (PTA): Allocated, Reserved and Active are its; "
                      "1 free waited for another stream"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("Pool: only samples of its figures (3 pool SNAPSHOTs"), std::string::npos)
      << text;
  // Times count from the session's first event (the host's malloc at 0 ms), not from the
  // device's own first (10 ms): the window's axis, and the host's lines, read the same.
  EXPECT_NE(text.find("Active        peak    1.8 MiB at +0.050 s"), std::string::npos) << text;
  EXPECT_EQ(device(0).origin_ns, kT0);
  EXPECT_EQ(device(0).start_ns, kT0 + 10'000'000);
  EXPECT_NE(text.find("Pool's own peaks (inside the steps too): max_allocated 7.0 MiB, "
                      "max_reserved 12.0 MiB\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("Pool's own peaks"), text.rfind("Pool's own peaks")) << "device 0 has none";

  const std::string json = report_json(report);
  EXPECT_NE(json.find(R"("pool":{"source":"blocks","allocated":{"peak_ns":)" +
                      std::to_string(kT0 + 30'000'000) + R"(,"peak_bytes":1572864,)" +
                      R"("final_bytes":262144},"reserved":{"peak_ns":)" +
                      std::to_string(kT0 + 70'000'000) + R"(,"peak_bytes":4194304,)" +
                      R"("final_bytes":4194304},"active":{"peak_ns":)" +
                      std::to_string(kT0 + 50'000'000) + R"(,"peak_bytes":1835008,)" +
                      R"("final_bytes":262144},"snapshots":1,"max_allocated":null,)" +
                      R"("max_reserved":null,"pending_frees":1,)" + R"("pending_bytes":0})"),
            std::string::npos)
      << json;
  EXPECT_NE(json.find(R"("pool":{"source":"samples")"), std::string::npos) << json;
  EXPECT_NE(json.find(R"("snapshots":3,"max_allocated":7340032,"max_reserved":12582912,)"),
            std::string::npos)
      << json;
  EXPECT_NE(json.find(R"("pool":null)"), std::string::npos) << json;
}

}  // namespace
}  // namespace memtap
