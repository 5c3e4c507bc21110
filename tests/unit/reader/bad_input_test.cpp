// Input that cannot be read gives one line naming the file and what is wrong, never a
// crash: missing, empty, unknown, truncated or corrupt files, databases without a dump
// table, CSVs with the wrong header, files where no row can be read.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "tests/unit/reader/reader_test_support.h"

namespace memtap {
namespace {

using test::exec_sql;
using test::read_error;
using test::TempDir;
using test::write_file;

const std::string kExpected =
    "expected an SQLite database with a memscope_dump or leaks_dump table, or a CSV headed "
    "msMemScope's 'ID,Event,Event Type,Name,Timestamp(ns),...', operator_memory's "
    "'Name,Size(KB),Allocation Time(us),...' or memory_record's "
    "'Component,Timestamp(us),Total Allocated(MB),...', or a PyTorch memory snapshot (the "
    "pickle of torch.cuda.memory._dump_snapshot)";

// A real-sized recording: enough rows to span many pages.
std::string make_database(const TempDir& dir, const std::string& name) {
  const std::string path = dir.file(name);
  std::string sql = test::dump_schema() + "BEGIN;";
  for (int i = 0; i < 3000; ++i) {
    sql += "INSERT INTO memscope_dump VALUES (" + std::to_string(i) + ",'MALLOC','HOST','N/A'," +
           std::to_string(1779862930000000000 + i) +
           ",1,1,'cpu','0x10','{\"size\":\"16\"}','a.py(1): f','');";
  }
  exec_sql(path, sql + "COMMIT;");
  return path;
}

std::string file_prefix(const std::string& path, size_t bytes) {
  std::ifstream file(path, std::ios::binary);
  std::string data(bytes, '\0');
  file.read(data.data(), std::streamsize(bytes));
  data.resize(size_t(file.gcount()));
  return data;
}

TEST(BadInput, MissingFile) {
  EXPECT_EQ(read_error("/nonexistent/run.db"),
            "/nonexistent/run.db: cannot open: No such file or directory");
}

TEST(BadInput, Directory) {
  TempDir dir;
  EXPECT_EQ(read_error(dir.path()), dir.path() + ": is a directory, not a recording file");
}

TEST(BadInput, EmptyFile) {
  TempDir dir;
  const std::string path = dir.file("memscope_dump_1.db");
  write_file(path, "");
  EXPECT_EQ(read_error(path), path + ": empty file (0 bytes); " + kExpected);
}

TEST(BadInput, NeitherSqliteNorAKnownCsv) {
  TempDir dir;
  const std::string text = dir.file("notes.txt");
  write_file(text, "hello, world\nsecond line\n");
  EXPECT_EQ(read_error(text), text + ": not a recording memtap can read: " + kExpected +
                                  "; its first line is 'hello,world'");
  const std::string binary = dir.file("memscope_dump_2.db");  // the name promises SQLite
  write_file(binary, std::string("\x7f"
                                 "ELF\x02\x01\x01\0\0\0\n\x03\0",
                                 14));
  EXPECT_EQ(read_error(binary), binary + ": not a recording memtap can read: " + kExpected +
                                    "; its first line is '\\x7fELF\\x02\\x01\\x01\\x00\\x00\\x00'");
  const std::string blank = dir.file("blank.csv");
  write_file(blank, "\n\r\n\n");
  EXPECT_EQ(read_error(blank), blank + ": no header line (only blank lines); " + kExpected);
}

TEST(BadInput, TruncatedDatabase) {
  TempDir dir;
  const std::string whole = make_database(dir, "whole.db");
  const auto size = std::filesystem::file_size(whole);
  ASSERT_GT(size, 8u * 4096);
  const std::string half = dir.file("memscope_dump_3.db");
  write_file(half, file_prefix(whole, size / 2 / 4096 * 4096));
  EXPECT_EQ(read_error(half), half + ": truncated SQLite database: its header says " +
                                  std::to_string(size / 4096) + " pages of 4096 bytes (" +
                                  std::to_string(size) + " bytes) but the file has " +
                                  std::to_string(size / 2 / 4096 * 4096));
  const std::string stub = dir.file("stub.db");
  write_file(stub, file_prefix(whole, 60));
  EXPECT_EQ(read_error(stub),
            stub + ": truncated SQLite database: 60 bytes, shorter than the 100-byte header");
}

TEST(BadInput, FirstHalfOfTheRealSample) {
  const std::string sample = std::string(MEMTAP_SHARED_DATA_DIR) +
                             "/msmemscope/msinsight__memscope_dump_20260527062213.db";
  if (!std::filesystem::exists(sample)) GTEST_SKIP() << sample << " is absent";
  TempDir dir;
  const std::string half = dir.file("memscope_dump_20260527062213.db");
  write_file(half, file_prefix(sample, 49152 / 2));
  EXPECT_EQ(read_error(half), half +
                                  ": truncated SQLite database: its header says 12 pages of "
                                  "4096 bytes (49152 bytes) but the file has 24576");
}

TEST(BadInput, CorruptDatabase) {
  TempDir dir;
  const std::string whole = make_database(dir, "whole.db");
  std::string data = file_prefix(whole, std::filesystem::file_size(whole));
  // Keep the header page, scribble over every page after it: same length, no valid b-tree.
  for (size_t i = 4096; i < data.size(); ++i) data[i] = char(i * 7 + 3);
  const std::string corrupt = dir.file("memscope_dump_4.db");
  write_file(corrupt, data);
  const std::string error = read_error(corrupt);
  EXPECT_EQ(error.rfind(corrupt + ": corrupt or truncated SQLite database (", 0), 0u) << error;
  EXPECT_NE(error.find("[SQLITE_CORRUPT]"), std::string::npos) << error;

  const std::string not_a_db = dir.file("memscope_dump_5.db");
  write_file(not_a_db, std::string("SQLite format 3\0", 16) + std::string(4080, '\x55'));
  const std::string notadb_error = read_error(not_a_db);
  EXPECT_EQ(notadb_error.rfind(not_a_db + ": corrupt or truncated SQLite database (", 0), 0u)
      << notadb_error;
  EXPECT_NE(notadb_error.find("[SQLITE_NOTADB]"), std::string::npos) << notadb_error;
}

TEST(BadInput, DatabaseWithoutADumpTableListsItsTables) {
  TempDir dir;
  const std::string path = dir.file("insight.db");
  exec_sql(path, "CREATE TABLE memory_block (x); CREATE TABLE status_info (y);");
  EXPECT_EQ(read_error(path), path +
                                  ": no memscope_dump or leaks_dump table in this SQLite database "
                                  "(its tables: memory_block, status_info)");
  const std::string bare = dir.file("bare.db");
  exec_sql(bare, "PRAGMA user_version = 1;");
  EXPECT_EQ(read_error(bare),
            bare +
                ": no memscope_dump or leaks_dump table in this SQLite database (it has no "
                "tables)");
}

// Found by memscope_db_fuzzer: SQLite's message about a damaged schema quotes the schema,
// newlines and all, and table names may hold any bytes; the error was then several lines.
TEST(BadInput, DamagedSchemaAndOddTableNamesStayOneLine) {
  TempDir dir;
  const std::string damaged = dir.file("memscope_dump_10.db");
  exec_sql(damaged,
           "CREATE TABLE memscope_dump (\"Timestamp(ns)\" INTEGER, Event TEXT);"
           "PRAGMA writable_schema = ON;"
           "UPDATE sqlite_master SET sql = 'CREATE TABLE memscope_dump (\"Timestamp(n' || "
           "char(10) || 's) INTEGER, Event TEXT)' WHERE name = 'memscope_dump';");
  EXPECT_EQ(read_error(damaged),
            damaged +
                ": corrupt or truncated SQLite database (malformed database schema "
                "(memscope_dump) - unrecognized token: \"\"Timestamp(n\\x0as) INTEGER, Event "
                "TEXT)\" [SQLITE_CORRUPT])");

  const std::string names = dir.file("memscope_dump_11.db");
  exec_sql(names, "CREATE TABLE \"two\nlines\" (x);");
  EXPECT_EQ(read_error(names), names +
                                   ": no memscope_dump or leaks_dump table in this SQLite "
                                   "database (its tables: two\\x0alines)");
}

TEST(BadInput, DumpTableWithoutTimestamps) {
  TempDir dir;
  const std::string path = dir.file("memscope_dump_6.db");
  exec_sql(path, "CREATE TABLE memscope_dump (ID INTEGER, Event TEXT, Ptr TEXT);");
  EXPECT_EQ(read_error(path), path +
                                  ": table memscope_dump has no column \"Timestamp(ns)\" (its "
                                  "columns: ID, Event, Ptr)");
}

// Attr holds the sizes: a table without it would report every figure as 0 B.
TEST(BadInput, DumpTableWithoutAttr) {
  TempDir dir;
  const std::string path = dir.file("memscope_dump_8.db");
  exec_sql(path,
           "CREATE TABLE memscope_dump (ID INTEGER, Event TEXT, \"Timestamp(ns)\" INTEGER, "
           "Ptr TEXT, Attrs TEXT);");
  EXPECT_EQ(read_error(path), path +
                                  ": table memscope_dump has no column \"Attr\" (its "
                                  "columns: ID, Event, Timestamp(ns), Ptr, Attrs)");
}

TEST(BadInput, CsvHeadersWithoutARequiredColumn) {
  TempDir dir;
  const std::string dump = dir.file("memscope_dump_1.csv");
  write_file(dump, "ID,Event,Event Type,Time(ns)\n1,MALLOC,HOST,5\n");
  EXPECT_EQ(read_error(dump), dump +
                                  ": line 1: msMemScope CSV header has no column "
                                  "'Timestamp(ns)' (header: 'ID,Event,Event Type,Time(ns)')");
  const std::string op = dir.file("operator_memory.csv");
  write_file(op, "Name,Size(KB),Release Time(us)\na,1,2\n");
  EXPECT_EQ(read_error(op), op +
                                ": line 1: operator_memory CSV header has no column "
                                "'Allocation Time(us)' (header: 'Name,Size(KB),Release Time(us)')");
  const std::string record = dir.file("memory_record.csv");
  write_file(record, "Component,Total Reserved(MB)\nAPP,1\n");
  EXPECT_EQ(read_error(record), record +
                                    ": line 1: memory_record CSV header has no column "
                                    "'Timestamp(us)' (header: 'Component,Total Reserved(MB)')");
}

TEST(BadInput, NoRowReadable) {
  TempDir dir;
  const std::string csv = dir.file("memscope_dump_2.csv");
  write_file(csv, "Event,Timestamp(ns),Attr\nMALLOC,x,\nFREE,y,\n");
  EXPECT_EQ(read_error(csv), csv +
                                 ": none of the 2 rows could be read; the first, line 2: "
                                 "Timestamp(ns) 'x' is not a number");
  const std::string db = dir.file("memscope_dump_7.db");
  exec_sql(db, test::dump_schema() +
                   "INSERT INTO memscope_dump VALUES (4,'MALLOC','HOST','N/A',1,1,1,'gpu','','','',"
                   "'');");
  EXPECT_EQ(read_error(db), db + ": none of the 1 rows could be read; the first, ID 4: Device Id "
                                 "'gpu' is not cpu, host, N/A or a device number");
}

}  // namespace
}  // namespace memtap
