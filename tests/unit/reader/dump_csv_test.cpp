// msMemScope's CSV export, written here: quoted Attr and multi-line stacks, both Attr
// spellings, columns in another order, bad rows counted by their line, times out of range.
#include <gtest/gtest.h>

#include <string>

#include "tests/unit/reader/reader_test_support.h"

namespace memtap {
namespace {

using test::read_ok;
using test::TempDir;

const char* const kHeader =
    "ID,Event,Event Type,Name,Timestamp(ns),Process Id,Thread Id,Device Id,Ptr,Attr,"
    "Call Stack(Python),Call Stack(C)\n";

TEST(DumpCsv, QuotedAttrAndMultiLineStacks) {
  TempDir dir;
  const std::string path = dir.file("memscope_dump_1.csv");
  test::write_file(path,
                   std::string(kHeader) +
                       "1,SYSTEM,START_TRACE,N/A,1764753083996495030,31,31,N/A,N/A,,,\n"
                       "10,MALLOC,PTA,N/A,1764753084425691000,31,32,0,0x000012c041400000,"
                       "\"{allocation_id:4,addr:0x000012c041400000,size:16778240,total:20971520,"
                       "used:16780288}\",\"a.py(1): f\nb.py(2): g\",\"libc.so(malloc+0x1) [0x2]\"\n"
                       "12,FREE,PTA,N/A,1764753084426805610,31,32,0,0x000012c041400000,"
                       "\"{\"\"allocation_id\"\":\"\"4\"\",\"\"size\"\":\"\"16778240\"\"}\",,\n"
                       "13,MSTX,Mark,\"[mstx]: step, 1 \",1764753084426805611,31,31,0,N/A,,,\n");
  const Recording rec = read_ok(path);
  EXPECT_EQ(rec.format, "msmemscope_csv");
  EXPECT_EQ(rec.rows_read, 4u);
  ASSERT_EQ(rec.events.size(), 4u);
  const MemEvent& m = rec.events[1];
  EXPECT_EQ(m.kind, MemEventKind::kMalloc);
  EXPECT_EQ(m.layer, Layer::kPta);
  EXPECT_EQ(m.device, 0);
  EXPECT_EQ(m.addr, 0x12c041400000u);
  EXPECT_EQ(m.size_bytes, 16778240u);
  EXPECT_EQ(m.pool_total, 20971520);
  EXPECT_EQ(m.pool_used, 16780288);
  EXPECT_EQ(m.tid, 32u);
  EXPECT_EQ(rec.strings.get(m.stack_python), "a.py(1): f\nb.py(2): g");
  EXPECT_EQ(rec.strings.get(m.stack_c), "libc.so(malloc+0x1) [0x2]");
  const MemEvent& f = rec.events[2];
  EXPECT_EQ(f.kind, MemEventKind::kFree);
  EXPECT_EQ(f.allocation_id, 4u);  // JSON Attr with "" escapes inside the CSV quotes
  EXPECT_EQ(f.size_bytes, 16778240u);
  EXPECT_EQ(rec.events[3].kind, MemEventKind::kMark);
  EXPECT_EQ(rec.strings.get(rec.events[3].name), "[mstx]: step, 1 ");
}

TEST(DumpCsv, ColumnsFoundByNameInAnyOrderAndCase) {
  TempDir dir;
  const std::string path = dir.file("reordered.csv");
  test::write_file(path,
                   "Timestamp(ns),Event,Event Type,Thread ID,Device ID,Ptr,Attr\n"
                   "1746006014361575,MALLOC,HAL,9,host,20615843020800,\"{size:16384}\"\n");
  const Recording rec = read_ok(path);
  ASSERT_EQ(rec.events.size(), 1u);
  EXPECT_EQ(rec.events[0].ts_ns, 1746006014361575000);
  EXPECT_EQ(rec.events[0].tid, 9u);
  EXPECT_EQ(rec.events[0].pid, 0u);
  EXPECT_EQ(rec.events[0].device, kHostDevice);
  EXPECT_EQ(rec.events[0].addr, 20615843020800u);
}

TEST(DumpCsv, BadLinesAreSkippedByLineNumber) {
  TempDir dir;
  const std::string path = dir.file("bad.csv");
  test::write_file(path, std::string(kHeader) +
                             "1,MALLOC,HAL,N/A,1764753084425691000,1,1,0,0x10,,\"multi\nline\",\n"
                             "2,MALLOC,HAL,N/A,17647530844256910xx,1,1,0,0x10,,,\n"
                             "3,MALLOC,HAL,N/A,1764753084425691001,1,1,0,0x10,{size:1},x,y,z\n"
                             "4,MALLOC,HAL,N/A,1764753084425691002,1,1\n");
  const Recording rec = read_ok(path);
  EXPECT_EQ(rec.rows_read, 4u);
  EXPECT_EQ(rec.rows_skipped, 2u);
  EXPECT_EQ(rec.warning, path +
                             ": 2 of 4 rows skipped; the first, line 4: Timestamp(ns) "
                             "'17647530844256910xx' is not a number");
  ASSERT_EQ(rec.events.size(), 2u);
  EXPECT_EQ(rec.events[1].device, kNoDevice);  // short row: missing fields read as empty

  const std::string extra = dir.file("extra.csv");
  test::write_file(extra, std::string(kHeader) +
                              "1,MALLOC,HAL,N/A,1764753084425691000,1,1,0,0x10,,,\n"
                              "3,MALLOC,HAL,N/A,1764753084425691001,1,1,0,0x10,{a:1,b:2},,\n");
  EXPECT_EQ(read_ok(extra).warning,
            extra + ": 1 of 2 rows skipped; the first, line 3: 13 fields where the header has 12");
}

// Without Attr no block has a size: every figure would read 0 B, so the file is refused.
TEST(DumpCsv, AHeaderWithoutAttrIsAnError) {
  TempDir dir;
  const std::string path = dir.file("no_attr.csv");
  test::write_file(path,
                   "ID,Event,Event Type,Timestamp(ns),Ptr,Attrs\n"
                   "1,MALLOC,HAL,1746006014361575000,0x10,{size:1}\n");
  EXPECT_EQ(test::read_error(path),
            path +
                ": line 1: msMemScope CSV header has no column 'Attr' (header: "
                "'ID,Event,Event Type,Timestamp(ns),Ptr,Attrs')");
}

// Found by tests/fuzz/memscope_csv_fuzzer: in a file of microseconds, a later time of 17
// digits times 1000 overflowed int64 (undefined behaviour; a wrapped, negative time).
TEST(DumpCsv, MicrosecondTimeTooLargeForNanosecondsIsASkippedRow) {
  TempDir dir;
  const std::string path = dir.file("overflow.csv");
  test::write_file(path, std::string(kHeader) +
                             "1,MALLOC,HAL,N/A,1746006014361575,1,1,0,0x10,{size:1},,\n"
                             "2,MALLOC,HAL,N/A,17460060143620001,1,1,0,0x20,{size:1},,\n"
                             "3,MALLOC,HAL,N/A,-9300000000000000,1,1,0,0x30,{size:1},,\n");
  const Recording rec = read_ok(path);
  EXPECT_EQ(rec.rows_skipped, 2u);
  EXPECT_EQ(rec.warning, path +
                             ": 2 of 3 rows skipped; the first, line 3: Timestamp(ns) "
                             "17460060143620001 is out of range: the file's times are "
                             "microseconds (as its first one is), and this one is beyond what "
                             "nanoseconds since 1970 can hold");
  ASSERT_EQ(rec.events.size(), 1u);
  EXPECT_EQ(rec.events[0].ts_ns, 1746006014361575000);
}

}  // namespace
}  // namespace memtap
