// The profiler CSVs' numbers as memtap writes them: torch_npu's spelling, and exact, so that
// the reader (profiler_csv_values.h) gets every byte and nanosecond back.
#include "monitor/store/export/profiler_csv_text.h"

#include <gtest/gtest.h>

#include "monitor/model/mem_event.h"
#include "monitor/store/reader/text_values.h"

namespace memtap {
namespace {

TEST(ProfilerCsvText, SpellsAsTheSamplesDo) {
  // Values from ../shared/data/msmemscope/msinsight__test_rank_1__operator_memory.csv.
  EXPECT_EQ(kb_text(75776 * 1024), "75776.0");
  EXPECT_EQ(kb_text(301056 * 1024 + 512), "301056.5");
  EXPECT_EQ(mb_text(int64_t(443.79541015625 * 1048576)), "443.79541015625");
  EXPECT_EQ(mb_text(int64_t(25722) * 1048576), "25722.0");
  EXPECT_EQ(us_text(1706704429088523015), "1706704429088523.015");
  EXPECT_EQ(us_cell(174949), "174.949\t");
  EXPECT_EQ(us_text(5), "0.005");
  EXPECT_EQ(kb_text(-5555), "-5.4248046875");
  EXPECT_EQ(mb_text(1), "0.00000095367431640625");
  EXPECT_EQ(device_type_text(1), "NPU:1");
  EXPECT_EQ(device_type_text(kHostDevice), "CPU");
  EXPECT_EQ(device_type_text(kNoDevice), "");
  EXPECT_EQ(stream_text(0), "");
  EXPECT_EQ(stream_text(94509039890976), "94509039890976");
}

TEST(ProfilerCsvText, TheReaderGetsEveryByteBack) {
  for (int64_t bytes :
       {int64_t(0), int64_t(1), int64_t(1023), int64_t(1048575), int64_t(1) << 40,
        (int64_t(1) << 40) + 12345, int64_t(-7), int64_t(-1) << 35, int64_t(9007199254740993)}) {
    int64_t kb = 0, mb = 0;
    ASSERT_TRUE(reader::parse_decimal_times(kb_text(bytes), 1024, 0, &kb)) << kb_text(bytes);
    ASSERT_TRUE(reader::parse_decimal_times(mb_text(bytes), 1048576, 0, &mb)) << mb_text(bytes);
    EXPECT_EQ(kb, bytes) << kb_text(bytes);
    EXPECT_EQ(mb, bytes) << mb_text(bytes);
  }
  for (int64_t ns : {int64_t(0), int64_t(999), int64_t(1795759223146777183)}) {
    int64_t back = 0;
    ASSERT_TRUE(reader::parse_decimal_times(reader::trim(us_cell(ns)), 1, 3, &back));
    EXPECT_EQ(back, ns);
  }
}

}  // namespace
}  // namespace memtap
