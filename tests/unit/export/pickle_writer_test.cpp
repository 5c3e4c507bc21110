// The pickle writer of the torch-snapshot export: its bytes for a small value are the
// opcodes PyTorch's memory viewer reads (no frame, no memo unless asked), and what it writes
// reads back through memtap's own pickle reader as the same values: integers at every width
// and sign, long and non-ASCII text, containers past a batch of 1000 items, a tuple, and a
// value given again through the memo.
#include "monitor/store/export/pickle_writer.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <fstream>
#include <limits>
#include <string>
#include <vector>

#include "monitor/store/reader/torch/pickle_reader.h"

namespace memtap {
namespace {

class PickleWriterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    path_ = (std::filesystem::temp_directory_path() /
             ("memtap_pickle_writer_" + std::to_string(::getpid()) + ".pickle"))
                .string();
    std::string error;
    file_ = TextFile::create(path_, &error);
    ASSERT_TRUE(file_) << error;
  }
  void TearDown() override { std::filesystem::remove(path_); }

  std::string bytes() {
    std::string error;
    EXPECT_TRUE(file_->close(&error)) << error;
    std::ifstream in(path_, std::ios::binary);
    return std::string((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  }

  pickle::Document read_back() {
    pickle::Document doc;
    std::string error;
    EXPECT_TRUE(pickle::read_pickle(bytes(), &doc, &error)) << error;
    return doc;
  }

  std::string path_;
  std::unique_ptr<TextFile> file_;
};

TEST_F(PickleWriterTest, ASmallDictIsTheViewersOpcodes) {
  PickleWriter w(file_.get());
  w.begin_dict();
  w.key("a");
  w.integer(1);
  w.end_dict();
  w.finish();
  // PROTO 4, EMPTY_DICT, MARK, SHORT_BINUNICODE "a", BININT1 1, SETITEMS, STOP.
  EXPECT_EQ(bytes(), std::string("\x80\x04}(\x8c\x01"
                                 "aK\x01u.",
                                 11));
}

TEST_F(PickleWriterTest, IntegersOfEveryWidthAndSignReadBack) {
  const std::vector<int64_t> signed_values = {0,
                                              1,
                                              255,
                                              256,
                                              65535,
                                              65536,
                                              INT32_MAX,
                                              int64_t(INT32_MAX) + 1,
                                              -1,
                                              -128,
                                              -129,
                                              INT32_MIN,
                                              int64_t(INT32_MIN) - 1,
                                              -(int64_t(1) << 40),
                                              std::numeric_limits<int64_t>::min(),
                                              std::numeric_limits<int64_t>::max()};
  const std::vector<uint64_t> unsigned_values = {
      uint64_t(1) << 47, 0x7fffffffffffffffull, 0x8000000000000000ull, UINT64_MAX, 0x80, 0x8000,
      0x80000000ull};
  PickleWriter w(file_.get());
  w.begin_list();
  for (int64_t v : signed_values) w.integer(v);
  for (uint64_t v : unsigned_values) w.unsigned_integer(v);
  w.end_list();
  w.finish();
  const pickle::Document doc = read_back();
  std::vector<pickle::ValueId> items;
  doc.visit_items(doc.root(), [&](pickle::ValueId id) {
    items.push_back(id);
    return true;
  });
  ASSERT_EQ(items.size(), signed_values.size() + unsigned_values.size());
  for (size_t i = 0; i < signed_values.size(); ++i) {
    int64_t got = 0;
    ASSERT_TRUE(doc.get_int(items[i], &got)) << i;
    EXPECT_EQ(got, signed_values[i]) << i;
  }
  for (size_t i = 0; i < unsigned_values.size(); ++i) {
    uint64_t got = 0;
    ASSERT_TRUE(doc.get_uint(items[signed_values.size() + i], &got)) << i;
    EXPECT_EQ(got, unsigned_values[i]) << i;
  }
}

TEST_F(PickleWriterTest, TextContainersPastABatchATupleAndTheMemoReadBack) {
  const std::string long_text(70000, 'x');
  const std::string accented = "caf\xc3\xa9 \xe2\x9c\x93";
  PickleWriter w(file_.get());
  w.begin_dict();
  w.key("long");
  w.str(long_text);
  w.key("accented");
  w.str(accented);
  w.key("list");
  w.begin_list();
  for (int i = 0; i < 2500; ++i) w.integer(i);
  w.end_list();
  w.key("dict");
  w.begin_dict();
  for (int i = 0; i < 2500; ++i) {
    w.key("k" + std::to_string(i));
    w.begin_pair();
    w.integer(i);
    w.boolean(i % 2 == 0);
    w.end_pair();
  }
  w.end_dict();
  w.key("kept");
  w.begin_list();
  w.real(0.5);
  w.none();
  w.end_list();
  const uint32_t kept = w.memo_put();
  w.key("again");
  w.memo_get(kept);
  w.end_dict();
  w.finish();

  const pickle::Document doc = read_back();
  const pickle::ValueId root = doc.root();
  EXPECT_EQ(doc.text(doc.find(root, "long")), long_text);
  EXPECT_EQ(doc.text(doc.find(root, "accented")), accented);
  const pickle::ValueId list = doc.find(root, "list");
  ASSERT_EQ(doc.item_count(list), 2500u);
  int64_t expected = 0;
  doc.visit_items(list, [&](pickle::ValueId id) {
    int64_t v = -1;
    EXPECT_TRUE(doc.get_int(id, &v));
    EXPECT_EQ(v, expected++);
    return true;
  });
  const pickle::ValueId dict = doc.find(root, "dict");
  ASSERT_EQ(doc.item_count(dict), 5000u);  // keys and values
  const pickle::ValueId pair = doc.find(dict, "k2499");
  ASSERT_TRUE(doc.is(pair, pickle::Kind::kTuple));
  std::vector<pickle::ValueId> parts;
  doc.visit_items(pair, [&](pickle::ValueId id) {
    parts.push_back(id);
    return true;
  });
  ASSERT_EQ(parts.size(), 2u);
  int64_t first = 0;
  EXPECT_TRUE(doc.get_int(parts[0], &first));
  EXPECT_EQ(first, 2499);
  EXPECT_FALSE(doc.get_bool(parts[1]));
  const pickle::ValueId kept_list = doc.find(root, "kept");
  EXPECT_EQ(doc.find(root, "again"), kept_list) << "the same value, not a copy";
  std::vector<pickle::ValueId> kept_items;
  doc.visit_items(kept_list, [&](pickle::ValueId id) {
    kept_items.push_back(id);
    return true;
  });
  ASSERT_EQ(kept_items.size(), 2u);
  double half = 0;
  EXPECT_TRUE(doc.get_float(kept_items[0], &half));
  EXPECT_EQ(half, 0.5);
  EXPECT_EQ(doc.kind(kept_items[1]), pickle::Kind::kNone);
}

}  // namespace
}  // namespace memtap
