// Sizes no allocation can have (2^63 - 1 bytes, a hostile sender's or a corrupt file's) reach
// the analyses as blocks: their sums go past int64 and past uint64, and no figure of the
// report may wrap (a peak of -2 bytes, a total below one of its blocks).
#include <gtest/gtest.h>

#include <limits>
#include <string>
#include <vector>

#include "monitor/engine/analyzer.h"
#include "monitor/engine/row_events.h"
#include "monitor/engine/saturating.h"
#include "monitor/report/report_render.h"

namespace memtap {
namespace {

constexpr uint64_t kHuge = uint64_t(std::numeric_limits<int64_t>::max());
constexpr int64_t kMax = std::numeric_limits<int64_t>::max();

DumpRow block_row(DumpEvent event, int64_t ts, uint64_t ptr, uint64_t size, uint64_t id) {
  DumpRow r;
  r.event = event;
  r.timestamp_ns = ts;
  r.process_id = r.thread_id = 100;
  r.ptr = ptr;
  r.size_bytes = size;
  r.allocation_id = id;
  r.owner = 1;
  return r;
}

// Three heap blocks of 2^63 - 1 bytes live at once, then freed.
Report report_of_three_huge_blocks() {
  std::vector<DumpRow> rows;
  const int64_t t = 1'800'000'000'000'000'000;
  for (uint64_t i = 0; i < 3; ++i)
    rows.push_back(block_row(DumpEvent::kMalloc, t + int64_t(i), 0x1000 * (i + 1), kHuge, i + 1));
  for (uint64_t i = 0; i < 3; ++i)
    rows.push_back(
        block_row(DumpEvent::kFree, t + 10 + int64_t(i), 0x1000 * (i + 1), kHuge, i + 1));
  StringTable strings;
  RowStrings row_strings(&strings);
  row_strings.add(1, "model");
  Analyzer analyzer(&strings);
  std::vector<MemEvent> events;
  append_events(rows.data(), rows.size(), row_strings, &events);
  analyzer.add(events.data(), events.size());
  RecordedProcess p;
  p.pid = 100;
  return analyzer.report({p});
}

TEST(AbsurdSizes, ReportFiguresSaturateAtInt64sTopInsteadOfWrapping) {
  const Report r = report_of_three_huge_blocks();
  ASSERT_EQ(r.devices.size(), 1u);
  const DeviceReport& d = r.devices[0];
  EXPECT_EQ(d.peak.bytes, kMax);
  EXPECT_EQ(d.bytes_allocated, kMax);
  ASSERT_FALSE(d.peak.by_owner.empty());
  EXPECT_EQ(d.peak.by_owner[0].bytes, kMax);
  for (const CurveSummary& c : d.curves) {
    if (c.peak_bytes == kUnknown) continue;
    EXPECT_GE(c.peak_bytes, 0) << c.name;
    EXPECT_EQ(c.final_bytes, 0) << c.name << ": every block was freed";
  }
  for (const ScopeEntry& s : d.scopes) {
    EXPECT_EQ(s.inclusive_bytes, kMax) << s.name;
    EXPECT_EQ(s.peak_bytes, kMax) << s.name;
  }
  const std::string json = report_json(r);
  EXPECT_EQ(json.find("bytes\":-"), std::string::npos) << "no negative byte count: " << json;
}

// A product of a size or time with a factor, back to an integer: each type's top is a
// power of two as a double that no such integer holds, and converting it is undefined.
TEST(Saturating, DoublesBackToIntegersStayWithinTheirRange) {
  EXPECT_EQ(int64_from_double(double(kMax)), kMax);  // 2^63
  EXPECT_EQ(int64_from_double(1e300), kMax);
  EXPECT_EQ(int64_from_double(-1e300), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(int64_from_double(-9223372036854775808.0), std::numeric_limits<int64_t>::min());
  EXPECT_EQ(int64_from_double(std::numeric_limits<double>::quiet_NaN()), 0);
  EXPECT_EQ(int64_from_double(-2.5), -2);
  EXPECT_EQ(uint64_from_double(double(std::numeric_limits<uint64_t>::max())),  // 2^64
            std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(uint64_from_double(std::numeric_limits<double>::infinity()),
            std::numeric_limits<uint64_t>::max());
  EXPECT_EQ(uint64_from_double(-1), 0u);
  EXPECT_EQ(uint64_from_double(9223372036854775808.0), uint64_t{1} << 63);
}

}  // namespace
}  // namespace memtap
