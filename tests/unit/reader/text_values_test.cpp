// The field parsers every format shares: addresses in hex or decimal, device ids in all
// their spellings, and decimal times and sizes converted exactly.
#include "monitor/store/reader/text_values.h"

#include <gtest/gtest.h>

#include <limits>

#include "monitor/model/mem_event.h"

namespace memtap::reader {
namespace {

TEST(TextValues, U64ReadsHexAndDecimalAndRejectsTheRest) {
  uint64_t v = 0;
  EXPECT_TRUE(parse_u64("0x000012c080000000", &v));
  EXPECT_EQ(v, 0x12c080000000u);
  EXPECT_TRUE(parse_u64("20615843020800", &v));
  EXPECT_EQ(v, 20615843020800u);
  EXPECT_TRUE(parse_u64("0XFF", &v));
  EXPECT_EQ(v, 255u);
  EXPECT_TRUE(parse_u64("18446744073709551615", &v));
  EXPECT_EQ(v, std::numeric_limits<uint64_t>::max());
  for (const char* bad : {"", "0x", "-1", "+1", "12a", "0xzz", " 1", "18446744073709551616"}) {
    EXPECT_FALSE(parse_u64(bad, &v)) << bad;
  }
}

TEST(TextValues, I64ReadsSignedDecimal) {
  int64_t v = 0;
  EXPECT_TRUE(parse_i64("-7", &v));
  EXPECT_EQ(v, -7);
  EXPECT_TRUE(parse_i64("+7", &v));
  EXPECT_EQ(v, 7);
  EXPECT_FALSE(parse_i64("7.5", &v));
  EXPECT_FALSE(parse_i64("", &v));
}

TEST(TextValues, DecimalTimesIsExactForMicrosecondTimes) {
  int64_t ns = 0;
  // A double would lose the last digits: 1.695e18 has a 256 ns spacing as a double.
  ASSERT_TRUE(parse_decimal_times("1695115378653323.5", 1, 3, &ns));
  EXPECT_EQ(ns, 1695115378653323500);
  ASSERT_TRUE(parse_decimal_times("1706704429088523.015", 1, 3, &ns));
  EXPECT_EQ(ns, 1706704429088523015);
  ASSERT_TRUE(parse_decimal_times("1695115378739328", 1, 3, &ns));
  EXPECT_EQ(ns, 1695115378739328000);
  ASSERT_TRUE(parse_decimal_times("1.69512E+15", 1, 3, &ns));  // after a spreadsheet
  EXPECT_EQ(ns, 1695120000000000000);
}

TEST(TextValues, DecimalTimesConvertsUnitsAndRounds) {
  int64_t bytes = 0;
  ASSERT_TRUE(parse_decimal_times("301056.5", 1024, 0, &bytes));  // KB
  EXPECT_EQ(bytes, 308281856);
  ASSERT_TRUE(parse_decimal_times("4599.74072265625", 1 << 20, 0, &bytes));  // MB
  EXPECT_EQ(bytes, 4823177728);
  ASSERT_TRUE(parse_decimal_times("-192", 1024, 0, &bytes));
  EXPECT_EQ(bytes, -196608);
  ASSERT_TRUE(parse_decimal_times("0.0004", 1024, 0, &bytes));  // 0.41 bytes
  EXPECT_EQ(bytes, 0);
  ASSERT_TRUE(parse_decimal_times("2.5", 1, 0, &bytes));  // half away from zero
  EXPECT_EQ(bytes, 3);
  ASSERT_TRUE(parse_decimal_times(".5e1", 1, 0, &bytes));
  EXPECT_EQ(bytes, 5);
  for (const char* bad : {"", "-", ".", "1e", "1.2.3", "abc", "12 ", "1e+", "1e19"}) {
    EXPECT_FALSE(parse_decimal_times(bad, 1, 3, &bytes)) << bad;
  }
}

TEST(TextValues, DeviceIdsInEverySpelling) {
  int32_t d = 99;
  EXPECT_TRUE(parse_device("cpu", &d));
  EXPECT_EQ(d, kHostDevice);
  EXPECT_TRUE(parse_device("host", &d));
  EXPECT_EQ(d, kHostDevice);
  EXPECT_TRUE(parse_device("N/A", &d));
  EXPECT_EQ(d, kNoDevice);
  EXPECT_TRUE(parse_device("", &d));
  EXPECT_EQ(d, kNoDevice);
  EXPECT_TRUE(parse_device("3", &d));
  EXPECT_EQ(d, 3);
  EXPECT_TRUE(parse_device("npu:0", &d));
  EXPECT_EQ(d, 0);
  EXPECT_TRUE(parse_device("NPU:1", &d));
  EXPECT_EQ(d, 1);
  EXPECT_TRUE(parse_device("cuda:2", &d));
  EXPECT_EQ(d, 2);
  for (const char* bad : {"gpu", "npu:", "-1", "1.5", "npu:x", "99999999999"}) {
    EXPECT_FALSE(parse_device(bad, &d)) << bad;
  }
}

TEST(TextValues, AbsentAndTrim) {
  EXPECT_TRUE(is_absent(""));
  EXPECT_TRUE(is_absent(" n/a "));
  EXPECT_FALSE(is_absent("0"));
  EXPECT_EQ(trim("\t 12\r\n"), "12");
}

TEST(TextValues, QuoteForMessageEscapesAndShortens) {
  EXPECT_EQ(quote_for_message("ab"), "'ab'");
  EXPECT_EQ(quote_for_message(std::string("a\0b\n", 4)), "'a\\x00b\\x0a'");
  EXPECT_EQ(quote_for_message("abcdef", 3), "'abc...'");
  EXPECT_EQ(printable_for_message(std::string("a\0b\n", 4)), "a\\x00b\\x0a");
  EXPECT_EQ(printable_for_message("abcdef", 3), "abc...");
}

}  // namespace
}  // namespace memtap::reader
