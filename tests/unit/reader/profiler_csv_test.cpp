// The profiler's CSVs written here: operator_memory in torch_npu's and CANN's variants
// (negative sizes, empty releases, durations instead of release times) and memory_record.
#include <gtest/gtest.h>

#include <map>
#include <string>

#include "monitor/store/reader/operator_memory_source.h"
#include "tests/unit/reader/reader_test_support.h"

namespace memtap {
namespace {

using test::read_ok;
using test::TempDir;

TEST(OperatorMemoryCsv, TorchNpuRowsBecomeMallocFreePairs) {
  TempDir dir;
  const std::string path = dir.file("operator_memory.csv");
  test::write_file(
      path,
      "Name,Size(KB),Allocation Time(us),Release Time(us),Duration(us),"
      "Allocation Total Allocated(MB),Allocation Total Reserved(MB),Release Total Allocated(MB),"
      "Release Total Reserved(MB),Device Type\n"
      "aten::add,192,1695115378723902.5,1695115378723939.2,36.73,0.25,242.0,0.0625,242.0,NPU:0\n"
      "aten::div,2.5,1695115378723903\t,,,1.5,242.0,,,NPU:1\n"
      "aten::mul,-64,1695115378723800,1695115378723950,,,,0.125,242.0,NPU:0\n");
  const Recording rec = read_ok(path);
  EXPECT_EQ(rec.format, "operator_memory_csv");
  EXPECT_EQ(rec.rows_read, 3u);
  // add: MALLOC + FREE; div: never freed (MALLOC only); mul: freed only (negative size).
  ASSERT_EQ(rec.events.size(), 4u);
  const MemEvent& add_malloc = rec.events[0];
  EXPECT_EQ(add_malloc.kind, MemEventKind::kMalloc);
  EXPECT_EQ(add_malloc.layer, Layer::kPta);
  EXPECT_EQ(add_malloc.ts_ns, 1695115378723902500);
  EXPECT_EQ(add_malloc.size_bytes, 192u * 1024);
  EXPECT_EQ(add_malloc.device, 0);
  EXPECT_EQ(add_malloc.pool_used, 256 * 1024);
  EXPECT_EQ(add_malloc.pool_total, 242 << 20);
  EXPECT_EQ(rec.strings.get(add_malloc.name), "aten::add");
  const MemEvent& div_malloc = rec.events[1];
  EXPECT_EQ(div_malloc.kind, MemEventKind::kMalloc);
  EXPECT_EQ(div_malloc.size_bytes, 2560u);
  EXPECT_EQ(div_malloc.device, 1);
  const MemEvent& add_free = rec.events[2];
  EXPECT_EQ(add_free.kind, MemEventKind::kFree);
  EXPECT_EQ(add_free.ts_ns, 1695115378723939200);
  EXPECT_EQ(add_free.addr, add_malloc.addr);  // synthetic, but the pair shares it
  EXPECT_EQ(add_free.allocation_id, add_malloc.allocation_id);
  EXPECT_EQ(add_free.pool_used, 64 * 1024);
  const MemEvent& mul_free = rec.events[3];
  EXPECT_EQ(mul_free.kind, MemEventKind::kFree);
  EXPECT_EQ(mul_free.size_bytes, 64u * 1024);
  EXPECT_EQ(mul_free.ts_ns, 1695115378723950000);
  // Blocks never overlap: each has its own range of synthetic addresses.
  EXPECT_NE(div_malloc.addr, add_malloc.addr);
  EXPECT_GE(add_malloc.addr, reader::kSyntheticBase);
  EXPECT_GE(div_malloc.addr, add_malloc.addr + add_malloc.size_bytes);
}

TEST(OperatorMemoryCsv, CannVariantUsesDurationsAndKilobytePools) {
  TempDir dir;
  const std::string path = dir.file("operator_memory_0.csv");
  test::write_file(path,
                   "Device_id,Name,Size(KB),Allocation Time(us),Duration(us),"
                   "Allocation Total Allocated(KB),Allocation Total Reserved(KB),"
                   "Release Total Allocated(KB),Release Total Reserved(KB),Device\n"
                   "0,GE_op,4,1000000000000000.5,10.25,8,16,4,16,NPU:3\n"
                   "0,GE_op2,-4,1000000000000100,,,,4,16,NPU:3\n");
  const Recording rec = read_ok(path);
  ASSERT_EQ(rec.events.size(), 3u);
  EXPECT_EQ(rec.events[0].kind, MemEventKind::kMalloc);
  EXPECT_EQ(rec.events[0].device, 3);  // `Device` (NPU:3) over Device_id
  EXPECT_EQ(rec.events[0].pool_used, 8 * 1024);
  EXPECT_EQ(rec.events[1].kind, MemEventKind::kFree);
  EXPECT_EQ(rec.events[1].ts_ns, 1000000000000010750);  // allocation + duration
  EXPECT_EQ(rec.events[2].kind, MemEventKind::kFree);   // negative: the one time is the release
  EXPECT_EQ(rec.events[2].ts_ns, 1000000000000100000);
  EXPECT_EQ(rec.events[2].size_bytes, 4096u);
}

TEST(OperatorMemoryCsv, BadValuesAreNamedByColumn) {
  TempDir dir;
  const std::string path = dir.file("operator_memory_bad.csv");
  test::write_file(path,
                   "Name,Size(KB),Allocation Time(us),Release Time(us),Device Type\n"
                   "a,1,1000000000000000,1000000000000001,NPU:0\n"
                   "b,lots,1000000000000000,,NPU:0\n"
                   "c,,1000000000000000,,NPU:0\n"
                   "d,1,1000000000000000,,GPU\n"
                   "e,-1,,,NPU:0\n");
  const Recording rec = read_ok(path);
  EXPECT_EQ(rec.rows_skipped, 4u);
  EXPECT_EQ(rec.warning,
            path + ": 4 of 5 rows skipped; the first, line 3: Size(KB) 'lots' is not a number");
  struct Case {
    const char* row;
    const char* message;
  };
  const Case cases[] = {
      {"c,,1000000000000000,,NPU:0", "Size(KB) is empty"},
      {"d,1,1000000000000000,,GPU", "Device Type 'GPU' is not a device (NPU:0, 0, ...)"},
      {"e,-1,,,NPU:0", "neither an allocation nor a release time"},
  };
  for (const Case& c : cases) {
    const std::string one = dir.file("one.csv");
    test::write_file(one, std::string("Name,Size(KB),Allocation Time(us),Release Time(us),"
                                      "Device Type\na,1,1000000000000000,,NPU:0\n") +
                              c.row + "\n");
    EXPECT_EQ(read_ok(one).warning, one + ": 1 of 2 rows skipped; the first, line 3: " + c.message);
  }
}

// Found while writing profiler_csv_fuzzer (which reports it under UBSan; its seeds hold the
// file): the release time of a row without one is its allocation time plus its duration,
// and that sum overflowed int64 for times each of which was in range.
// A copy cut short ends inside a row: its release time "16951153" read as a number put a
// FREE in 1970 and its missing device made a host block, 53 years before the rest.
TEST(OperatorMemoryCsv, ARowTheEndOfTheFileCutsIsSkippedAndSaid) {
  TempDir dir;
  const std::string path = dir.file("operator_memory_cut.csv");
  test::write_file(path,
                   "Name,Size(KB),Allocation Time(us),Release Time(us),Device Type\n"
                   "a,1,1695115378753782.8,1695115378753887.5,NPU:0\n"
                   "b,1344,1695115378759192.8,16951153");
  const Recording rec = read_ok(path);
  EXPECT_EQ(rec.rows_skipped, 1u);
  EXPECT_EQ(rec.warning, path +
                             ": 1 of 2 rows skipped; the first, line 3: the file ends inside "
                             "this row (4 of 5 fields, no newline): cut short?");
  ASSERT_EQ(rec.events.size(), 2u);  // row a's MALLOC and FREE
  for (const MemEvent& e : rec.events) EXPECT_EQ(e.device, 0);
}

TEST(OperatorMemoryCsv, ReleaseTimeBeyondInt64IsASkippedRow) {
  TempDir dir;
  const std::string path = dir.file("operator_memory_far.csv");
  test::write_file(path,
                   "Name,Size(KB),Allocation Time(us),Duration(us)\n"
                   "a,1,1000000000000000,10\n"
                   "b,1,9000000000000000,1000000000000000\n");
  const Recording rec = read_ok(path);
  EXPECT_EQ(rec.rows_skipped, 1u);
  EXPECT_EQ(rec.warning, path +
                             ": 1 of 2 rows skipped; the first, line 3: Allocation Time(us) plus "
                             "Duration(us) is beyond what nanoseconds since 1970 can hold");
  EXPECT_EQ(rec.events.size(), 2u);  // row a's MALLOC and FREE
}

TEST(MemoryRecordCsv, RowsBecomeSnapshotsInBytes) {
  TempDir dir;
  const std::string path = dir.file("memory_record.csv");
  test::write_file(path,
                   "Component,Timestamp(us),Total Allocated(MB),Total Reserved(MB),"
                   "Total Active(MB),Stream Ptr,Device Type\n"
                   "APP,1.69512E+15,,10750.375,,,NPU:1\n"
                   "PTA,1695115378714622.8,4599.74072265625,8664.0,4599.7,9.4509E+13,NPU:1\n");
  const Recording rec = read_ok(path);
  EXPECT_EQ(rec.format, "memory_record_csv");
  ASSERT_EQ(rec.events.size(), 2u);
  const MemEvent& pta = rec.events[0];  // 1695115378714622.8 us is before 1.69512E+15 us
  EXPECT_EQ(pta.kind, MemEventKind::kSnapshot);
  EXPECT_EQ(rec.strings.get(pta.name), "PTA");
  EXPECT_EQ(pta.layer, Layer::kPta);
  EXPECT_EQ(pta.ts_ns, 1695115378714622800);
  EXPECT_EQ(pta.snap_allocated, 4823177728);  // 4599.74072265625 MB
  EXPECT_EQ(pta.snap_reserved, int64_t(8664) << 20);
  EXPECT_EQ(pta.stream, 94509000000000u);
  EXPECT_EQ(pta.device, 1);
  const MemEvent& app = rec.events[1];
  EXPECT_EQ(rec.strings.get(app.name), "APP");
  EXPECT_EQ(app.snap_allocated, kUnknown);
  EXPECT_EQ(app.snap_reserved, int64_t(10750.375 * (1 << 20)));
  EXPECT_EQ(app.snap_app_reserved, int64_t(10750.375 * (1 << 20)));  // the App Reserved curve
  EXPECT_EQ(app.layer, Layer::kOther);
  EXPECT_EQ(pta.snap_app_reserved, kUnknown);
}

// A component's own pool (PTA, GE) is a device pool sample; APP and a sum (PTA+GE) are not.
TEST(MemoryRecordCsv, EachComponentsPoolIsAPoolSampleAndTheirSumIsNot) {
  TempDir dir;
  const std::string path = dir.file("memory_record.csv");
  test::write_file(path,
                   "Component,Timestamp(us),Total Allocated(MB),Total Reserved(MB),Device Type\n"
                   "APP,1695115378653323.5,,11224.375,NPU:0\n"
                   "PTA,1695115378714622.8,4599.74072265625,8664.0,NPU:0\n"
                   "PTA+GE,1695115378714622.8,4599.74072265625,8664.0,NPU:0\n"
                   "GE,1695115378979271.0,0.25,242.0,NPU:0\n");
  const Recording rec = read_ok(path);
  ASSERT_EQ(rec.events.size(), 4u);
  std::map<std::string, Layer> layers;
  for (const MemEvent& e : rec.events) layers[std::string(rec.strings.get(e.name))] = e.layer;
  EXPECT_EQ(layers["APP"], Layer::kOther);
  EXPECT_EQ(layers["PTA"], Layer::kPta);
  EXPECT_EQ(layers["PTA+GE"], Layer::kOther);
  EXPECT_EQ(layers["GE"], Layer::kPta);
  EXPECT_EQ(rec.events.back().snap_reserved, int64_t(242) << 20);
  EXPECT_EQ(rec.events.back().device, 0);
}

}  // namespace
}  // namespace memtap
