// Attr in msMemScope's CSV spelling: `{key:value,...}` as msMemScope's tools search it, and
// every value back as it was through memtap's reader, however odd an owner label is.
#include <gtest/gtest.h>

#include <vector>

#include "monitor/store/export/dump_csv_writer.h"
#include "monitor/store/memscope_format.h"
#include "monitor/store/reader/attr_parser.h"

namespace memtap {
namespace {

TEST(CsvAttr, MemtapsAttrInMsMemScopesCsvForm) {
  EXPECT_EQ(msmemscope_csv_attr(""), "");
  EXPECT_EQ(msmemscope_csv_attr(R"({"allocation_id":"4","addr":"0x000012c041400000",)"
                                R"("size":"16778240","total":"20971520","used":"16780288"})"),
            "{allocation_id:4,addr:0x000012c041400000,size:16778240,total:20971520,"
            "used:16780288}");
}

TEST(CsvAttr, ValuesThatWouldEndEarlyKeepTheirQuotesAndReadBack) {
  for (const std::string owner : {"model@layer1", "a,b", "x}y", "say \"hi\"", "k:v", " pad ", "",
                                  "tab\there", "back\\slash"}) {
    DumpRow row;
    row.event = DumpEvent::kMalloc;
    row.event_type = DumpEventType::kPta;
    row.ptr = 0x1000;
    row.size_bytes = 512;
    row.allocation_id = 7;
    row.pool_used = 512;
    AttrText buffer;
    std::string spill;
    const std::string json(dump_attr_text(row, format_owner_attr(owner), buffer, spill));
    const std::string csv = msmemscope_csv_attr(json);
    std::vector<reader::AttrPair> want, got;
    std::string scratch_want, scratch_got, error;
    ASSERT_TRUE(reader::split_attr(json, &want, &scratch_want, &error)) << json;
    ASSERT_TRUE(reader::split_attr(csv, &got, &scratch_got, &error)) << csv << ": " << error;
    ASSERT_EQ(got.size(), want.size()) << csv;
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ(got[i].key, want[i].key) << csv;
      EXPECT_EQ(got[i].value, want[i].value) << csv;
    }
    EXPECT_NE(csv.find("size:512,"), std::string::npos) << csv;
  }
}

}  // namespace
}  // namespace memtap
