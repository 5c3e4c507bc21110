// See c_stack_frames.h.
#include "tests/e2e/c_stack_frames.h"

#include <gtest/gtest.h>

#include <memory>
#include <regex>

#include "tests/e2e/db_query.h"
#include "tests/e2e/e2e_support.h"

namespace memtap::e2e {

std::vector<CFrame> c_frames_of(const std::string& stack) {
  // A demangled C++ name may hold spaces ("grow(unsigned long) at ..."): the last " at ".
  static const std::regex kDebugInfo(R"(^(.+) at \S+ \((.+)\+0x([0-9a-f]+)\)$)");
  static const std::regex kSymbolTable(R"(^(.+)\(([^()+]*)\+0x([0-9a-f]+)\) \[0x[0-9a-f]+\]$)");
  std::vector<CFrame> frames;
  for (const std::string& line : split_lines(stack)) {
    if (line.size() >= 10 && line.compare(line.size() - 10, 10, " (inlined)") == 0) continue;
    std::smatch m;
    if (std::regex_match(line, m, kDebugInfo)) {
      frames.push_back({line, m[1].str(), m[2].str(), std::stoull(m[3].str(), nullptr, 16)});
    } else if (std::regex_match(line, m, kSymbolTable)) {
      frames.push_back({line, m[2].str(), m[1].str(), std::stoull(m[3].str(), nullptr, 16)});
    } else {
      frames.push_back({line, "", "", 0});
    }
  }
  return frames;
}

std::vector<std::string> c_stacks_of_size(const std::string& db, int64_t size) {
  std::string error;
  std::unique_ptr<DbQuery> q = DbQuery::open(db, &error);
  EXPECT_TRUE(q) << error;
  if (!q) return {};
  DbRows rows;
  EXPECT_TRUE(
      q->query("SELECT \"Call Stack(C)\" FROM memscope_dump WHERE Event = 'MALLOC' AND "
               "CAST(json_extract(Attr, '$.size') AS INTEGER) = ?1 ORDER BY ID",
               {std::to_string(size)}, &rows, &error))
      << error;
  std::vector<std::string> stacks;
  for (const auto& row : rows.rows) stacks.push_back(row[0].text);
  return stacks;
}

}  // namespace memtap::e2e
