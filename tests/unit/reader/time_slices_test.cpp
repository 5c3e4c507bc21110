// A time-ordered read split over threads by time (time_slices.h) gives exactly what the
// one-thread read gives: the same events in the same order with the same strings behind
// their ids, the same rows counted and the same first bad row, whatever the file order,
// ties at a slice's edge, NULL and text timestamps. Tables without a timestamp
// index are not sliced.
#include "monitor/store/reader/time_slices.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "monitor/store/reader/row_problems.h"
#include "monitor/store/reader/sqlite_dump_source.h"
#include "tests/unit/reader/reader_test_support.h"

namespace memtap {
namespace {

using test::exec_sql;
using test::TempDir;

struct Read {
  std::vector<MemEvent> events;
  Recording rec;
  reader::RowProblems problems;
  size_t drains = 0;
};

Read read_in_time_order(const std::string& path, unsigned threads) {
  Read read;
  reader::SqliteReadOptions options;
  options.time_order = true;
  options.batch_events = 64;
  options.max_threads = threads;
  options.min_rows_per_slice = 100;
  options.drain = [&] {
    ++read.drains;
    read.events.insert(read.events.end(), read.rec.events.begin(), read.rec.events.end());
    read.rec.events.clear();
    return true;
  };
  std::string error;
  EXPECT_TRUE(reader::read_sqlite_recording(path, options, &read.rec, &read.problems, &error))
      << error;
  read.events.insert(read.events.end(), read.rec.events.begin(), read.rec.events.end());
  return read;
}

std::string sliced_database(const TempDir& dir, bool with_index) {
  const std::string path = dir.file(with_index ? "indexed.db" : "plain.db");
  std::string sql = test::dump_schema() + "BEGIN;";
  const int64_t base = 1779862930000000000;
  for (int i = 0; i < 2000; ++i) {
    // File order is not time order, every timestamp of the range is there twice (ties at
    // each slice's edge), and each slice meets the strings in its own order.
    const int64_t t = base + (int64_t(i) * 37) % 1000;
    std::string ts = std::to_string(t);
    if (i == 50 || i == 1500) ts = "NULL";
    if (i == 700) ts = "'bad'";
    sql += "INSERT INTO memscope_dump VALUES (" + std::to_string(i * 2 + 1) +
           ",'MALLOC','PTA','op" + std::to_string((i * 7) % 23) + "'," + ts + ",1,1,'0','0x" +
           std::to_string(4096 + i) + "','{\"owner\":\"o" + std::to_string(i % 13) +
           "\",\"size\":\"" + std::to_string(i + 1) + "\"}','py" + std::to_string(i % 5) + "','');";
  }
  sql += "COMMIT;";
  if (with_index) sql += "CREATE INDEX idx_ts ON memscope_dump(\"Timestamp(ns)\");";
  exec_sql(path, sql);
  return path;
}

void expect_same(const Read& one, const Read& sliced) {
  EXPECT_EQ(sliced.problems.rows, one.problems.rows);
  EXPECT_EQ(sliced.problems.skipped, one.problems.skipped);
  EXPECT_EQ(sliced.problems.first, one.problems.first);
  ASSERT_EQ(sliced.events.size(), one.events.size());
  for (size_t i = 0; i < one.events.size(); ++i) {
    const MemEvent& a = one.events[i];
    const MemEvent& b = sliced.events[i];
    ASSERT_EQ(a.ts_ns, b.ts_ns) << i;
    ASSERT_EQ(a.addr, b.addr) << i;
    ASSERT_EQ(a.size_bytes, b.size_bytes) << i;
    ASSERT_EQ(one.rec.strings.get(a.name), sliced.rec.strings.get(b.name)) << i;
    ASSERT_EQ(one.rec.strings.get(a.owner), sliced.rec.strings.get(b.owner)) << i;
    ASSERT_EQ(one.rec.strings.get(a.stack_python), sliced.rec.strings.get(b.stack_python)) << i;
  }
}

TEST(TimeSlices, SlicesGiveTheOneThreadReadInOrder) {
  TempDir dir;
  const std::string path = sliced_database(dir, true);
  const Read one = read_in_time_order(path, 1);
  ASSERT_EQ(one.problems.rows, 2000u);
  EXPECT_EQ(one.problems.skipped, 3u);  // two NULL timestamps and 'bad'
  for (unsigned threads : {2u, 3u, 8u}) {
    SCOPED_TRACE(threads);
    const Read sliced = read_in_time_order(path, threads);
    expect_same(one, sliced);
  }
}

TEST(TimeSlices, ATableWithoutATimestampIndexIsNotSliced) {
  TempDir dir;
  const std::string path = sliced_database(dir, false);
  reader::DbHandle handle;
  std::string error;
  ASSERT_TRUE(reader::open_for_reading(path, &handle, &error)) << error;
  reader::DumpQuery query;
  ASSERT_TRUE(reader::plan_dump_query(path, handle.db, "memscope_dump", &query, &error));
  reader::SqliteReadOptions options;
  options.time_order = true;
  options.max_threads = 4;
  options.min_rows_per_slice = 100;
  options.drain = [] { return true; };
  Recording rec;
  reader::RowProblems problems;
  bool used = true;
  ASSERT_TRUE(
      reader::read_time_slices(path, handle.db, query, 1, options, &rec, &problems, &used, &error));
  EXPECT_FALSE(used);
  EXPECT_EQ(problems.rows, 0u);
  // ... and the read still gives every row, in time order.
  expect_same(read_in_time_order(path, 1), read_in_time_order(path, 4));
}

TEST(TimeSlices, StoppingMidwayStopsEveryWorker) {
  TempDir dir;
  const std::string path = sliced_database(dir, true);
  reader::SqliteReadOptions options;
  options.time_order = true;
  options.batch_events = 64;
  options.max_threads = 4;
  options.min_rows_per_slice = 100;
  Recording rec;
  size_t delivered = 0;
  options.drain = [&] {
    delivered += rec.events.size();
    rec.events.clear();
    return false;
  };
  reader::RowProblems problems;
  std::string error;
  ASSERT_TRUE(reader::read_sqlite_recording(path, options, &rec, &problems, &error)) << error;
  EXPECT_GT(delivered, 0u);  // the first span is handed on at once, however short
  EXPECT_LT(delivered, 2000u);
}

}  // namespace
}  // namespace memtap
