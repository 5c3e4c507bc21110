// Attr in each of the spellings msMemScope has written, and malformed Attr named precisely.
#include "monitor/store/reader/attr_parser.h"

#include <gtest/gtest.h>

#include <map>
#include <string>

namespace memtap::reader {
namespace {

std::map<std::string, std::string> split_ok(std::string_view text) {
  std::vector<AttrPair> pairs;
  std::string scratch;
  std::string error;
  EXPECT_TRUE(split_attr(text, &pairs, &scratch, &error)) << text << ": " << error;
  std::map<std::string, std::string> out;
  for (const AttrPair& pair : pairs) out[std::string(pair.key)] = std::string(pair.value);
  return out;
}

std::string split_error(std::string_view text) {
  std::vector<AttrPair> pairs;
  std::string scratch;
  std::string error;
  EXPECT_FALSE(split_attr(text, &pairs, &scratch, &error)) << text;
  return error;
}

TEST(AttrParser, JsonWithStringValues) {
  const auto attr =
      split_ok(R"({"allocation_id":"4","addr":"0x000012c080000000","size":"6356992"})");
  EXPECT_EQ(attr.size(), 3u);
  EXPECT_EQ(attr.at("allocation_id"), "4");
  EXPECT_EQ(attr.at("addr"), "0x000012c080000000");
  EXPECT_EQ(attr.at("size"), "6356992");
}

TEST(AttrParser, UnquotedWithEmptyValues) {
  const auto attr = split_ok("{addr:20615843020800,size:16384,owner:,MID:7}");
  EXPECT_EQ(attr.at("addr"), "20615843020800");
  EXPECT_EQ(attr.at("owner"), "");
  EXPECT_EQ(attr.at("MID"), "7");
  EXPECT_EQ(split_ok("{allocation_id:4,addr:0x000012c041400000,size:16778240,total:20971520,"
                     "used:16780288}")
                .at("used"),
            "16780288");
}

TEST(AttrParser, MixedSpacesNumbersNestingAndEscapes) {
  const auto attr = split_ok(
      R"( { "size" : 12 , owner: a@b , "shape":[1, 2], "x":{"y":"1,2"}, "s":"q\"\u00e9\n" } )");
  EXPECT_EQ(attr.at("size"), "12");
  EXPECT_EQ(attr.at("owner"), "a@b");
  EXPECT_EQ(attr.at("shape"), "[1, 2]");
  EXPECT_EQ(attr.at("x"), R"({"y":"1,2"})");
  EXPECT_EQ(attr.at("s"), "q\"\xc3\xa9\n");
}

TEST(AttrParser, EscapedValuesStayValidTogether) {
  // Two unescaped strings share the scratch buffer; the first must survive the second.
  const auto attr = split_ok(R"({"a":"x\ty","b":"\\z"})");
  EXPECT_EQ(attr.at("a"), "x\ty");
  EXPECT_EQ(attr.at("b"), "\\z");
}

TEST(AttrParser, EmptyTextAndEmptyObject) {
  EXPECT_TRUE(split_ok("").empty());
  EXPECT_TRUE(split_ok("  ").empty());
  EXPECT_TRUE(split_ok("{}").empty());
  EXPECT_EQ(split_ok("{a:1,}").at("a"), "1");
}

TEST(AttrParser, MalformedAttrSaysWhereAndWhat) {
  EXPECT_EQ(split_error("size:1"), "offset 0: expected '{' at the start of Attr");
  EXPECT_EQ(split_error("{size}"), "offset 5: expected ':' after key 'size'");
  EXPECT_EQ(split_error(R"({"size":"12)"), "offset 8: unterminated string");
  EXPECT_EQ(split_error(R"({"a":"1" "b":"2"})"),
            "offset 9: expected ',' or '}' after the value of 'a'");
  EXPECT_EQ(split_error("{a:1} x"), "offset 6: unexpected text after '}'");
  EXPECT_EQ(split_error(R"({"a":"\q"})"), "offset 9: unknown escape '\\q' in a string");
}

// Found by memscope_csv_fuzzer: a key or an escape quoted from the text as it was put a
// newline (or any byte) into the message, and so into the reader's one-line warning.
TEST(AttrParser, MessagesQuotingTheTextStayOneLine) {
  EXPECT_EQ(split_error("{\"a\nb\"}"), "offset 6: expected ':' after key 'a\\x0ab'");
  EXPECT_EQ(split_error("{\"a\tb\":\"1\" x}"),
            "offset 11: expected ',' or '}' after the value of 'a\\x09b'");
  EXPECT_EQ(split_error("{\"a\":\"\\\n\"}"), "offset 9: unknown escape '\\\\x0a' in a string");
}

}  // namespace
}  // namespace memtap::reader
