// The real msMemScope / MindStudio Insight / torch_npu files in ../shared/data/msmemscope
// (see PROVENANCE.txt there) open without error, with counts and values read off the files.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "tests/unit/reader/reader_test_support.h"

namespace memtap {
namespace {

using test::count_kind;
using test::read_ok;
using test::time_ordered;

const std::string kDir = std::string(MEMTAP_SHARED_DATA_DIR) + "/msmemscope/";

class SampleFiles : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::is_directory(kDir)) GTEST_SKIP() << kDir << " is absent";
  }
};

TEST_F(SampleFiles, EverySampleOpensWithoutErrorOrSkippedRows) {
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(kDir)) {
    const std::string path = entry.path().string();
    if (entry.path().extension() != ".db" && entry.path().extension() != ".csv") continue;
    ++files;
    const Recording rec = read_ok(path);
    EXPECT_GT(rec.events.size(), 0u) << path;
    EXPECT_EQ(rec.rows_skipped, 0u) << path << ": " << rec.warning;
    EXPECT_TRUE(time_ordered(rec)) << path;
    EXPECT_FALSE(rec.processes.empty()) << path;
  }
  EXPECT_GE(files, 9);  // the nine of PROVENANCE.txt, at least
}

TEST_F(SampleFiles, MsinsightDatabaseHostPinnedBlocks) {
  const Recording rec = read_ok(kDir + "msinsight__memscope_dump_20260527062213.db");
  EXPECT_EQ(rec.format, "memscope_dump");
  EXPECT_EQ(rec.rows_read, 10u);
  ASSERT_EQ(rec.events.size(), 10u);
  EXPECT_EQ(count_kind(rec, MemEventKind::kMalloc), 6u);
  EXPECT_EQ(count_kind(rec, MemEventKind::kFree), 1u);
  EXPECT_EQ(count_kind(rec, MemEventKind::kTraceStart), 1u);
  EXPECT_EQ(count_kind(rec, MemEventKind::kTraceStop), 1u);
  EXPECT_EQ(count_kind(rec, MemEventKind::kOther), 1u);  // SYSTEM ACL_INIT
  EXPECT_EQ(rec.events.front().kind, MemEventKind::kTraceStart);
  EXPECT_EQ(rec.events.front().ts_ns, 1779862930549834990);
  EXPECT_EQ(rec.events.back().kind, MemEventKind::kTraceStop);
  EXPECT_EQ(rec.events.back().ts_ns, 1779862933160916120);
  for (const MemEvent& e : rec.events) {
    if (e.kind != MemEventKind::kMalloc && e.kind != MemEventKind::kFree) continue;
    EXPECT_EQ(e.layer, Layer::kHostPinned);
    EXPECT_EQ(e.device, kHostDevice);  // `cpu`
    EXPECT_EQ(e.pid, 1116991u);
    EXPECT_NE(e.stack_python, 0u);
    EXPECT_NE(e.stack_c, 0u);
    if (e.kind == MemEventKind::kFree) {
      EXPECT_EQ(e.allocation_id, 8u);
      EXPECT_EQ(e.addr, 0x12c080800000u);
      EXPECT_EQ(e.size_bytes, 3018752u);
      EXPECT_EQ(e.ts_ns, 1779862932853939150);
    }
  }
  ASSERT_EQ(rec.processes.size(), 1u);
  EXPECT_EQ(rec.processes[0].pid, 1116991u);
}

TEST_F(SampleFiles, SmokeCsvDecimalPtrHostDeviceAndMicroseconds) {
  const Recording rec =
      read_ok(kDir + "msmemscope__test_smoke_testfile_csvfile_memscope_dump_20250428113810.csv");
  EXPECT_EQ(rec.format, "msmemscope_csv");
  ASSERT_EQ(rec.events.size(), 330u);
  EXPECT_EQ(count_kind(rec, MemEventKind::kMalloc), 289u);
  EXPECT_EQ(count_kind(rec, MemEventKind::kFree), 23u);
  EXPECT_EQ(count_kind(rec, MemEventKind::kKernelLaunch), 12u);
  EXPECT_EQ(count_kind(rec, MemEventKind::kMark), 2u);
  EXPECT_EQ(count_kind(rec, MemEventKind::kRangeStart), 2u);
  EXPECT_EQ(count_kind(rec, MemEventKind::kOther), 2u);  // SYSTEM `acl init`
  // Microseconds in the ns column, scaled: 1746006014162153 us is the first row.
  EXPECT_EQ(rec.events.front().ts_ns, 1746006014162153000);
  EXPECT_EQ(rec.events.back().ts_ns, 1746006024583966000);
  size_t host_mallocs = 0;
  size_t frees_without_device = 0;
  for (const MemEvent& e : rec.events) {
    if (e.kind == MemEventKind::kMalloc && e.device == kHostDevice) ++host_mallocs;
    if (e.kind == MemEventKind::kFree && e.device == kNoDevice) ++frees_without_device;
    if (e.kind == MemEventKind::kMalloc && e.ts_ns == 1746006014362653000) {
      EXPECT_EQ(e.device, kHostDevice);    // `host`
      EXPECT_EQ(e.addr, 20617990504448u);  // decimal Ptr
      EXPECT_EQ(e.size_bytes, 6356992u);
      EXPECT_EQ(e.layer, Layer::kHal);
    }
    if (e.kind == MemEventKind::kFree) {
      EXPECT_GT(e.size_bytes, 0u);
    }
  }
  EXPECT_EQ(host_mallocs, 10u);
  // The file's 9 HAL FREEs say N/A; those whose MALLOC is in the file take its device.
  EXPECT_EQ(frees_without_device, 3u);
  EXPECT_EQ(rec.processes.size(), 2u);
}

TEST_F(SampleFiles, CompareCsvsHexPtrAndUnquotedAttr) {
  const Recording baseline = read_ok(kDir + "msmemscope__example_compare_baseline.csv");
  ASSERT_EQ(baseline.events.size(), 121u);
  EXPECT_EQ(count_kind(baseline, MemEventKind::kMalloc), 23u);
  EXPECT_EQ(count_kind(baseline, MemEventKind::kFree), 16u);
  EXPECT_EQ(count_kind(baseline, MemEventKind::kOpStart), 40u);
  EXPECT_EQ(count_kind(baseline, MemEventKind::kOpEnd), 40u);
  bool found = false;
  for (const MemEvent& e : baseline.events) {
    if (e.kind == MemEventKind::kMalloc && e.ts_ns == 1764753084425691000) {
      found = true;
      EXPECT_EQ(e.layer, Layer::kPta);
      EXPECT_EQ(e.device, 0);
      EXPECT_EQ(e.addr, 0x12c041400000u);
      EXPECT_EQ(e.allocation_id, 4u);
      EXPECT_EQ(e.size_bytes, 16778240u);
      EXPECT_EQ(e.pool_total, 20971520);
      EXPECT_EQ(e.pool_used, 16780288);
    }
  }
  EXPECT_TRUE(found);
  const Recording leaks = read_ok(kDir + "msmemscope__example_compare_leaks.csv");
  ASSERT_EQ(leaks.events.size(), 130u);
  EXPECT_EQ(count_kind(leaks, MemEventKind::kMalloc), 25u);
  EXPECT_EQ(count_kind(leaks, MemEventKind::kFree), 15u);
}

TEST_F(SampleFiles, OperatorMemoryRowsBecomeMallocFreePairs) {
  const Recording rank0 = read_ok(kDir + "msinsight__test_rank_0__operator_memory.csv");
  EXPECT_EQ(rank0.format, "operator_memory_csv");
  EXPECT_EQ(rank0.rows_read, 28u);
  EXPECT_EQ(count_kind(rank0, MemEventKind::kMalloc), 28u);
  EXPECT_EQ(count_kind(rank0, MemEventKind::kFree), 28u);
  const MemEvent& first = rank0.events.front();  // cann::Graph_70, 192 KB
  EXPECT_EQ(first.kind, MemEventKind::kMalloc);
  EXPECT_EQ(rank0.strings.get(first.name), "cann::Graph_70");
  EXPECT_EQ(first.size_bytes, 192u * 1024);
  EXPECT_EQ(first.ts_ns, 1695115378723902500);
  EXPECT_EQ(first.device, 0);
  EXPECT_EQ(first.layer, Layer::kPta);

  // torch_npu's longer variant: tab-padded times, two blocks never released.
  const Recording rank1 = read_ok(kDir + "msinsight__test_rank_1__operator_memory.csv");
  EXPECT_EQ(rank1.rows_read, 21u);
  EXPECT_EQ(count_kind(rank1, MemEventKind::kMalloc), 21u);
  EXPECT_EQ(count_kind(rank1, MemEventKind::kFree), 19u);
  EXPECT_EQ(rank1.events.front().ts_ns, 1706704429088523015);
  EXPECT_EQ(rank1.events.front().stream, 94509039890976u);
  EXPECT_EQ(rank1.events.front().device, 1);
}

TEST_F(SampleFiles, MemoryRecordRowsBecomeSnapshots) {
  const Recording rank0 = read_ok(kDir + "msinsight__test_rank_0__memory_record.csv");
  EXPECT_EQ(rank0.format, "memory_record_csv");
  ASSERT_EQ(rank0.events.size(), 11u);
  EXPECT_EQ(count_kind(rank0, MemEventKind::kSnapshot), 11u);
  const MemEvent& app = rank0.events.front();
  EXPECT_EQ(rank0.strings.get(app.name), "APP");
  EXPECT_EQ(app.snap_allocated, kUnknown);
  EXPECT_EQ(app.snap_reserved, int64_t(11224.375 * (1 << 20)));
  EXPECT_EQ(app.ts_ns, 1695115378653323500);
  const Recording rank1 = read_ok(kDir + "msinsight__test_rank_1__memory_record.csv");
  EXPECT_EQ(rank1.events.size(), 30u);
}

}  // namespace
}  // namespace memtap
