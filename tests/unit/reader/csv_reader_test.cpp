// CSV records as RFC 4180 has them: quoted commas and newlines, doubled quotes, CRLF, a
// byte order mark, and records longer than one read of the file.
#include "monitor/store/reader/csv_reader.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "tests/unit/reader/reader_test_support.h"

namespace memtap::reader {
namespace {

struct Record {
  std::vector<std::string> fields;
  uint64_t line;
  std::string malformed;
  bool unterminated = false;
};

std::vector<Record> read_all(const std::string& text) {
  test::TempDir dir;
  const std::string path = dir.file("x.csv");
  test::write_file(path, text);
  std::string error;
  auto csv = CsvReader::open(path, &error);
  EXPECT_NE(csv, nullptr) << error;
  std::vector<Record> records;
  std::vector<std::string_view> fields;
  if (csv == nullptr) return records;
  while (csv->next(&fields, &error) == CsvReader::Next::kRecord) {
    records.push_back({{fields.begin(), fields.end()},
                       csv->record_line(),
                       csv->malformed(),
                       csv->unterminated()});
  }
  return records;
}

TEST(CsvReader, QuotedFieldsHoldCommasNewlinesAndQuotes) {
  const auto records = read_all(
      "ID,Attr,Stack\n"
      "1,\"{addr:1,size:2}\",\"a.py(1): f\nb.py(2): g\"\n"
      "2,\"say \"\"hi\"\"\",\n");
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records[1].fields,
            (std::vector<std::string>{"1", "{addr:1,size:2}", "a.py(1): f\nb.py(2): g"}));
  EXPECT_EQ(records[2].fields, (std::vector<std::string>{"2", "say \"hi\"", ""}));
  EXPECT_EQ(records[1].line, 2u);
  EXPECT_EQ(records[2].line, 4u);  // the newline inside the quotes counts
}

TEST(CsvReader, CrlfBomBlankLinesAndNoFinalNewline) {
  const auto records = read_all(
      "\xEF\xBB\xBF"
      "a,b\r\n\r\n1,\"x\r\ny\"\r\n2,3");
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records[0].fields, (std::vector<std::string>{"a", "b"}));
  EXPECT_EQ(records[1].fields, (std::vector<std::string>{"1", "x\r\ny"}));
  EXPECT_EQ(records[2].fields, (std::vector<std::string>{"2", "3"}));
  EXPECT_EQ(records[2].line, 5u);
}

TEST(CsvReader, RecordsLargerThanOneReadArriveWhole) {
  std::string big(3 << 20, 'x');  // three times the reader's chunk
  std::string text = "h1,h2\n1,\"" + big + ",\n\"\n2,end\n";
  const auto records = read_all(text);
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records[1].fields[1], big + ",\n");
  EXPECT_EQ(records[2].fields, (std::vector<std::string>{"2", "end"}));
  EXPECT_EQ(records[2].line, 4u);
}

TEST(CsvReader, AnOpenQuoteAtTheEndIsReportedNotLost) {
  const auto records = read_all("a,b\n1,\"never closed\n");
  ASSERT_EQ(records.size(), 2u);
  EXPECT_EQ(records[1].malformed,
            "a quoted field opened here is still open at the end of the file (1 line read as "
            "this one row)");
  EXPECT_EQ(records[0].malformed, "");
  // A stray quote takes every later line with it: the message says how many.
  const auto swallowed = read_all("a,b\n1,\"stray\n2,x\n3,y\n4,z");
  ASSERT_EQ(swallowed.size(), 2u);
  EXPECT_EQ(swallowed[1].malformed,
            "a quoted field opened here is still open at the end of the file (4 lines read as "
            "this one row)");
}

// The last line of a file cut short has no newline; the reader says so.
TEST(CsvReader, SaysWhetherTheLastRecordEndedWithTheFile) {
  const auto cut = read_all("a,b\n1,2\n3");
  ASSERT_EQ(cut.size(), 3u);
  EXPECT_FALSE(cut[1].unterminated);
  EXPECT_TRUE(cut[2].unterminated);
  EXPECT_FALSE(read_all("a,b\n1,2\n").back().unterminated);
}

TEST(CsvReader, MissingFileIsAnError) {
  std::string error;
  EXPECT_EQ(CsvReader::open("/nonexistent/x.csv", &error), nullptr);
  EXPECT_EQ(error, "cannot open: No such file or directory");
}

}  // namespace
}  // namespace memtap::reader
