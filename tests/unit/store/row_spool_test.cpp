// RowSpool, the writer's queue on disk: rows come back in the order they went in, in the
// pieces claimed, the file empties once read, and a file that lost its rows says so.
#include "monitor/store/row_spool.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>
#include <vector>

#include "tests/unit/store/store_test_support.h"

namespace memtap {
namespace {

std::vector<DumpRow> numbered(uint64_t first, size_t count) {
  std::vector<DumpRow> rows(count);
  for (size_t i = 0; i < count; ++i) {
    rows[i].allocation_id = first + i;
    rows[i].timestamp_ns = int64_t(first + i) * 10;
  }
  return rows;
}

TEST(RowSpool, RowsComeBackInOrderAcrossPushesAndClaims) {
  test::TempDir dir;
  ASSERT_TRUE(dir.ok());
  std::string error;
  auto spool = RowSpool::create(dir.file("q.spool"), &error);
  ASSERT_NE(spool, nullptr) << error;
  ASSERT_TRUE(spool->push(numbered(0, 700).data(), 700, &error)) << error;
  ASSERT_TRUE(spool->push(numbered(700, 300).data(), 300, &error)) << error;
  EXPECT_EQ(spool->unread(), 1000u);

  std::vector<DumpRow> out;
  const RowSpool::Claim first = spool->claim(400);
  EXPECT_EQ(first.count, 400u);
  EXPECT_EQ(spool->unread(), 600u);
  // Pushing while a claim is being read does not disturb it.
  ASSERT_TRUE(spool->push(numbered(1000, 50).data(), 50, &error)) << error;
  ASSERT_TRUE(spool->read(first, &out, &error)) << error;
  while (spool->unread() != 0) ASSERT_TRUE(spool->read(spool->claim(400), &out, &error)) << error;
  ASSERT_EQ(out.size(), 1050u);
  for (size_t i = 0; i < out.size(); ++i) {
    ASSERT_EQ(out[i].allocation_id, i);
    ASSERT_EQ(out[i].timestamp_ns, int64_t(i) * 10);
  }
  EXPECT_GT(std::filesystem::file_size(spool->path()), 0u);
  spool->truncate_if_drained();
  EXPECT_EQ(std::filesystem::file_size(spool->path()), 0u);
  // And it goes on from the start of the emptied file.
  ASSERT_TRUE(spool->push(numbered(5, 2).data(), 2, &error)) << error;
  out.clear();
  ASSERT_TRUE(spool->read(spool->claim(10), &out, &error)) << error;
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1].allocation_id, 6u);
}

TEST(RowSpool, TheFileIsRemovedWithTheSpool) {
  test::TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string path = dir.file("q.spool");
  std::string error;
  {
    auto spool = RowSpool::create(path, &error);
    ASSERT_NE(spool, nullptr) << error;
    ASSERT_TRUE(spool->push(numbered(0, 10).data(), 10, &error)) << error;
    EXPECT_TRUE(std::filesystem::exists(path));
    EXPECT_EQ(std::filesystem::status(path).permissions() & std::filesystem::perms::all,
              std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  }
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(RowSpool, RowsThatCannotBeReadBackAreAnErrorNamingTheFileAndByte) {
  test::TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string path = dir.file("q.spool");
  std::string error;
  auto spool = RowSpool::create(path, &error);
  ASSERT_NE(spool, nullptr) << error;
  ASSERT_TRUE(spool->push(numbered(0, 100).data(), 100, &error)) << error;
  std::filesystem::resize_file(path, 10 * sizeof(DumpRow));  // someone cut it short
  std::vector<DumpRow> out;
  ASSERT_TRUE(spool->read(spool->claim(10), &out, &error)) << error;
  EXPECT_FALSE(spool->read(spool->claim(90), &out, &error));
  EXPECT_EQ(out.size(), 10u);
  EXPECT_NE(error.find(path), std::string::npos) << error;
  EXPECT_NE(error.find("at byte " + std::to_string(10 * sizeof(DumpRow))), std::string::npos)
      << error;
}

TEST(RowSpool, ACreateThatFailsNamesThePath) {
  std::string error;
  EXPECT_EQ(RowSpool::create("/nonexistent-dir/q.spool", &error), nullptr);
  EXPECT_NE(error.find("/nonexistent-dir/q.spool"), std::string::npos) << error;
}

}  // namespace
}  // namespace memtap
