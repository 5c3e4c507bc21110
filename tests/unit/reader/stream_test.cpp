// stream_recording hands out the same events as read_recording, in batches and time order,
// and stops when asked.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/unit/reader/reader_test_support.h"

namespace memtap {
namespace {

using test::exec_sql;
using test::TempDir;

struct Streamed {
  std::vector<MemEvent> events;
  std::vector<size_t> batch_sizes;
  Recording rec;
};

Streamed stream(const std::string& path, size_t batch, size_t stop_after_batches = SIZE_MAX) {
  Streamed s;
  std::string error;
  EXPECT_TRUE(stream_recording(
      path, batch, &s.rec,
      [&](std::span<const MemEvent> events) {
        s.events.insert(s.events.end(), events.begin(), events.end());
        s.batch_sizes.push_back(events.size());
        return s.batch_sizes.size() < stop_after_batches;
      },
      &error))
      << error;
  return s;
}

void expect_same(const std::vector<MemEvent>& a, const std::vector<MemEvent>& b) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].ts_ns, b[i].ts_ns) << i;
    EXPECT_EQ(a[i].kind, b[i].kind) << i;
    EXPECT_EQ(a[i].addr, b[i].addr) << i;
    EXPECT_EQ(a[i].size_bytes, b[i].size_bytes) << i;
    EXPECT_EQ(a[i].device, b[i].device) << i;
    EXPECT_EQ(a[i].allocation_id, b[i].allocation_id) << i;
  }
}

std::string out_of_order_database(const TempDir& dir) {
  const std::string path = dir.file("memscope_dump_1.db");
  std::string sql = test::dump_schema() + "BEGIN;";
  // Blocks written when freed, as msMemScope does: each block's MALLOC and FREE rows come
  // together, so the file's MALLOCs are out of time order. FREEs lack size and device.
  for (int block = 0; block < 100; ++block) {
    const int64_t malloc_ts = 1779862930000000000 + block * 10;
    const int64_t free_ts = malloc_ts + (100 - block) * 20;
    const std::string addr = "'0x" + std::to_string(1000 + block) + "'";
    sql += "INSERT INTO memscope_dump VALUES (" + std::to_string(2 * block) +
           ",'MALLOC','HAL','N/A'," + std::to_string(malloc_ts) + ",1,1,'0'," + addr +
           ",'{size:" + std::to_string(block + 1) + "}','','');";
    sql += "INSERT INTO memscope_dump VALUES (" + std::to_string(2 * block + 1) +
           ",'FREE','HAL','N/A'," + std::to_string(free_ts) + ",1,1,'N/A'," + addr + ",'','','');";
  }
  exec_sql(path, sql + "COMMIT;");
  return path;
}

TEST(StreamRecording, DatabaseBatchesMatchTheSortedRead) {
  TempDir dir;
  const std::string path = out_of_order_database(dir);
  const Recording whole = test::read_ok(path);
  ASSERT_EQ(whole.events.size(), 200u);
  const Streamed s = stream(path, 64);
  expect_same(s.events, whole.events);
  EXPECT_EQ(s.batch_sizes, (std::vector<size_t>{64, 64, 64, 8}));
  EXPECT_TRUE(s.rec.events.empty());
  EXPECT_EQ(s.rec.rows_read, 200u);
  EXPECT_EQ(s.rec.format, "memscope_dump");
  ASSERT_EQ(s.rec.processes.size(), 1u);
  for (const MemEvent& e : s.events) {
    if (e.kind == MemEventKind::kFree) {
      EXPECT_GT(e.size_bytes, 0u);
      EXPECT_EQ(e.device, 0);
    }
  }
}

TEST(StreamRecording, CsvBatchesMatchTheSortedRead) {
  TempDir dir;
  const std::string path = dir.file("memscope_dump_1.csv");
  test::write_file(path,
                   "Event,Timestamp(ns),Process Id,Device Id,Ptr,Attr\n"
                   "FREE,1779862930000000030,1,0,0x10,\n"
                   "MALLOC,1779862930000000010,1,0,0x10,\"{size:5}\"\n"
                   "MALLOC,1779862930000000020,2,0,0x20,\"{size:6}\"\n");
  const Recording whole = test::read_ok(path);
  const Streamed s = stream(path, 2);
  expect_same(s.events, whole.events);
  EXPECT_EQ(s.batch_sizes, (std::vector<size_t>{2, 1}));
  EXPECT_EQ(s.events.back().size_bytes, 5u);
  EXPECT_EQ(s.rec.processes.size(), 2u);
}

TEST(StreamRecording, StopsWhenTheCallbackSaysSo) {
  TempDir dir;
  const std::string path = out_of_order_database(dir);
  const Streamed s = stream(path, 10, 2);
  EXPECT_EQ(s.events.size(), 20u);
  EXPECT_EQ(s.batch_sizes.size(), 2u);
}

TEST(StreamRecording, ErrorsAreTheSameAsForARead) {
  Recording rec;
  std::string error;
  EXPECT_FALSE(stream_recording(
      "/nonexistent/x.db", 10, &rec, [](std::span<const MemEvent>) { return true; }, &error));
  EXPECT_EQ(error, "/nonexistent/x.db: cannot open: No such file or directory");
}

}  // namespace
}  // namespace memtap
