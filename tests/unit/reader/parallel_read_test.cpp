// A large table is decoded by several threads, each a range of rowids with its own string
// table; merged, the result must be exactly the one-thread read: same events in file
// order, the same strings behind their ids, the first bad row still the first.
#include <gtest/gtest.h>

#include <string>

#include "monitor/store/reader/row_problems.h"
#include "monitor/store/reader/sqlite_dump_source.h"
#include "tests/unit/reader/reader_test_support.h"

namespace memtap {
namespace {

using test::exec_sql;
using test::TempDir;

struct Read {
  Recording rec;
  reader::RowProblems problems;
};

Read read_with_threads(const std::string& path, unsigned threads) {
  Read read;
  reader::SqliteReadOptions options;
  options.max_threads = threads;
  options.min_rows_per_thread = 10;
  std::string error;
  EXPECT_TRUE(reader::read_sqlite_recording(path, options, &read.rec, &read.problems, &error))
      << error;
  return read;
}

TEST(ParallelRead, PartsMergeIntoTheOneThreadResult) {
  TempDir dir;
  const std::string path = dir.file("memscope_dump_1.db");
  std::string sql = test::dump_schema() + "BEGIN;";
  // Sparse ids (msMemScope's are), names and owners that each part meets in its own order,
  // and bad rows only in the later parts.
  for (int i = 0; i < 1000; ++i) {
    const std::string ts = i == 700 || i == 900 ? "'bad'" : std::to_string(1779862930000000000 + i);
    sql += "INSERT INTO memscope_dump VALUES (" + std::to_string(i * 3 + 1) +
           ",'MALLOC','PTA','op" + std::to_string((1000 - i) % 37) + "'," + ts + ",1,1,'0','0x" +
           std::to_string(i + 16) + "','{\"owner\":\"o" + std::to_string(i % 11) +
           "\",\"size\":\"8\"}','py" + std::to_string(i % 5) + "','');";
  }
  exec_sql(path, sql + "COMMIT;");

  const Read one = read_with_threads(path, 1);
  const Read four = read_with_threads(path, 4);
  EXPECT_EQ(one.problems.rows, 1000u);
  EXPECT_EQ(four.problems.rows, 1000u);
  EXPECT_EQ(four.problems.skipped, 2u);
  EXPECT_EQ(four.problems.first, "ID 2101: Timestamp(ns) 'bad' is not a number");
  EXPECT_EQ(four.problems.first, one.problems.first);
  ASSERT_EQ(four.rec.events.size(), one.rec.events.size());
  EXPECT_EQ(four.rec.strings.size(), one.rec.strings.size());
  for (size_t i = 0; i < one.rec.events.size(); ++i) {
    const MemEvent& a = one.rec.events[i];
    const MemEvent& b = four.rec.events[i];
    ASSERT_EQ(a.ts_ns, b.ts_ns) << i;
    ASSERT_EQ(a.addr, b.addr) << i;
    ASSERT_EQ(one.rec.strings.get(a.name), four.rec.strings.get(b.name)) << i;
    ASSERT_EQ(one.rec.strings.get(a.owner), four.rec.strings.get(b.owner)) << i;
    ASSERT_EQ(one.rec.strings.get(a.stack_python), four.rec.strings.get(b.stack_python)) << i;
  }
}

}  // namespace
}  // namespace memtap
