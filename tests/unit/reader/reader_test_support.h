// Helpers for the reader tests: files and databases written on the spot, and reading with
// the failure explained.
#pragma once

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <algorithm>
#include <fstream>
#include <string>
#include <string_view>

#include "monitor/store/memscope_schema.h"
#include "monitor/store/reader/recording_reader.h"
#include "tests/unit/store/store_test_support.h"

namespace memtap::test {

inline void write_file(const std::string& path, std::string_view text) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file.write(text.data(), std::streamsize(text.size()));
  ASSERT_TRUE(file.good()) << "cannot write " << path;
}

// Creates (or opens) the database at `path` and runs `sql` in it.
inline void exec_sql(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK) << path;
  char* message = nullptr;
  const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &message);
  const std::string text = message != nullptr ? message : "";
  sqlite3_free(message);
  sqlite3_close(db);
  ASSERT_EQ(rc, SQLITE_OK) << text << "\nin: " << sql;
}

// msMemScope's table as memtap creates it, under `table` (memscope_dump or leaks_dump).
inline std::string dump_schema(const std::string& table = "memscope_dump") {
  std::string sql = kCreateMemscopeDumpSql;
  const std::string from = "\"memscope_dump\"";
  sql.replace(sql.find(from), from.size(), "\"" + table + "\"");
  return sql + ";";
}

// Reads `path`, failing the test (with the error) if it cannot be read.
inline Recording read_ok(const std::string& path) {
  Recording recording;
  std::string error;
  EXPECT_TRUE(read_recording(path, &recording, &error)) << error;
  return recording;
}

// Reads `path` expecting failure; the error (empty, after a test failure, if it read).
inline std::string read_error(const std::string& path) {
  Recording recording;
  std::string error;
  EXPECT_FALSE(read_recording(path, &recording, &error)) << "read " << path << " without error";
  EXPECT_EQ(error.find('\n'), std::string::npos) << "not one line: " << error;
  return error;
}

inline size_t count_kind(const Recording& recording, MemEventKind kind) {
  return size_t(std::count_if(recording.events.begin(), recording.events.end(),
                              [kind](const MemEvent& e) { return e.kind == kind; }));
}

inline bool time_ordered(const Recording& recording) {
  return std::is_sorted(recording.events.begin(), recording.events.end(),
                        [](const MemEvent& a, const MemEvent& b) { return a.ts_ns < b.ts_ns; });
}

}  // namespace memtap::test
