// RowSpool, the writer's queue on disk: rows come back in the order they went in, in the
// pieces claimed, the file empties once read, and a file that lost its rows says so.
#include "monitor/store/row_spool.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <climits>
#include <cstdint>
#include <cstdio>
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
  // Claims take whole pushes: the first even when it is larger than asked.
  const RowSpool::Claim first = spool->claim(400);
  EXPECT_EQ(first.count, 700u);
  EXPECT_EQ(spool->unread(), 300u);
  // Pushing while a claim is being read does not disturb it.
  ASSERT_TRUE(spool->push(numbered(1000, 50).data(), 50, &error)) << error;
  ASSERT_TRUE(spool->read(first, &out, &error)) << error;
  // Then more pushes at once, while they stay within what is asked.
  const RowSpool::Claim rest = spool->claim(400);
  EXPECT_EQ(rest.count, 350u);
  ASSERT_TRUE(spool->read(rest, &out, &error)) << error;
  EXPECT_EQ(spool->unread(), 0u);
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
  for (int i = 0; i < 10; ++i) {
    ASSERT_TRUE(spool->push(numbered(10 * i, 10).data(), 10, &error)) << error;
  }
  const uint64_t first_block = spool->claim(10).bytes;
  // Someone cut it short, in the middle of the second block.
  std::filesystem::resize_file(path, first_block + 7);
  std::vector<DumpRow> out;
  const RowSpool::Claim first{0, 10, 0, first_block};
  ASSERT_TRUE(spool->read(first, &out, &error)) << error;
  EXPECT_FALSE(spool->read(spool->claim(90), &out, &error));
  EXPECT_EQ(out.size(), 10u);
  EXPECT_NE(error.find(path), std::string::npos) << error;
  EXPECT_NE(error.find("at byte " + std::to_string(first_block)), std::string::npos) << error;
}

TEST(RowSpool, BytesThatAreNotWhatWasWrittenAreAnErrorNamingTheByte) {
  test::TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string path = dir.file("q.spool");
  std::string error;
  auto spool = RowSpool::create(path, &error);
  ASSERT_NE(spool, nullptr) << error;
  ASSERT_TRUE(spool->push(numbered(0, 10).data(), 10, &error)) << error;
  const uint64_t second = std::filesystem::file_size(path);
  ASSERT_TRUE(spool->push(numbered(10, 10).data(), 10, &error)) << error;
  const RowSpool::Claim both = spool->claim(100);
  ASSERT_EQ(both.count, 20u);
  // Overwrite the second block's rows with bytes no packed row starts with.
  std::FILE* f = std::fopen(path.c_str(), "r+b");
  ASSERT_NE(f, nullptr);
  std::fseek(f, long(second + 12), SEEK_SET);
  const char junk[8] = {'\x7f', '\x7f', '\x7f', '\x7f', '\x7f', '\x7f', '\x7f', '\x7f'};
  std::fwrite(junk, 1, sizeof junk, f);
  std::fclose(f);
  std::vector<DumpRow> out;
  EXPECT_FALSE(spool->read(both, &out, &error));
  EXPECT_TRUE(out.empty());  // nothing of a claim that failed
  EXPECT_NE(error.find(path + ": reading rows back at byte " + std::to_string(second)),
            std::string::npos)
      << error;
}

// Every field comes back exactly, whatever its value, and a heap row takes a sixth of
// DumpRow's size on disk.
TEST(RowSpool, EveryFieldComesBackAndHeapRowsPackSmall) {
  test::TempDir dir;
  ASSERT_TRUE(dir.ok());
  std::string error;
  auto spool = RowSpool::create(dir.file("q.spool"), &error);
  ASSERT_NE(spool, nullptr) << error;
  std::vector<DumpRow> rows;
  uint64_t state = 42;
  auto next = [&state] {
    state = state * 6364136223846793005ULL + 1442695040888963407ULL;
    return state >> 16;
  };
  int64_t ts = 1'700'000'000'000'000'000;
  for (int i = 0; i < 10000; ++i) {
    DumpRow r;
    r.event = i % 2 ? DumpEvent::kFree : DumpEvent::kMalloc;
    r.timestamp_ns = ts += int64_t(next() % 200);
    r.process_id = 4242;
    r.thread_id = 4243;
    r.ptr = 0x5555'5555'0000 + (next() % 4096) * 16;
    r.size_bytes = 16 + next() % 240;
    r.allocation_id = 1000 + uint64_t(i / 2) * 3;
    r.owner = 7;
    rows.push_back(r);
  }
  ASSERT_TRUE(spool->push(rows.data(), rows.size(), &error)) << error;
  const uint64_t heap_bytes = std::filesystem::file_size(spool->path());
  EXPECT_LE(heap_bytes, rows.size() * sizeof(DumpRow) / 6) << heap_bytes << " bytes";

  // Extremes: every field at its largest, negative times, every event kind and type (device
  // rows: a device and a stream; pool rows: used, total, pending and peaks, known or not),
  // then back.
  std::vector<DumpRow> odd;
  for (int e = 0; e <= int(DumpEventType::kPta); ++e) {
    DumpRow r;
    r.event = DumpEvent(e % (int(DumpEvent::kFreeCompleted) + 1));
    r.event_type = DumpEventType(e);
    r.is_mmap = e % 2 == 0;
    r.has_stream = e % 3 != 0;
    r.device = e % 4 == 0 ? kDumpNoDevice : e % 4 == 1 ? INT32_MAX : e;
    r.stream = UINT64_MAX - uint64_t(e);
    r.timestamp_ns = e % 3 == 0 ? INT64_MIN : INT64_MAX - e;
    r.process_id = r.thread_id = r.inherited_from_pid = UINT32_MAX;
    r.name = r.owner = r.stack_python = r.stack_c = UINT32_MAX - uint32_t(e);
    r.ptr = r.size_bytes = r.total_bytes = r.allocation_id = r.step = UINT64_MAX - uint64_t(e);
    r.end_ns = -int64_t(e);
    r.pool_used = e % 3 == 0 ? -1 : e % 3 == 1 ? INT64_MAX - e : INT64_MIN + e;
    r.pool_total = e % 5 == 0 ? -1 : int64_t(e) << 40;
    r.free_pending = e % 4 == 3;
    r.has_pool_peaks = e % 7 == 2;
    odd.push_back(r);
    odd.push_back(DumpRow{});
  }
  ASSERT_TRUE(spool->push(odd.data(), odd.size(), &error)) << error;
  rows.insert(rows.end(), odd.begin(), odd.end());

  std::vector<DumpRow> out;
  while (spool->unread() != 0) ASSERT_TRUE(spool->read(spool->claim(100), &out, &error)) << error;
  ASSERT_EQ(out.size(), rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    const DumpRow& a = rows[i];
    const DumpRow& b = out[i];
    ASSERT_TRUE(a.event == b.event && a.event_type == b.event_type && a.is_mmap == b.is_mmap &&
                a.timestamp_ns == b.timestamp_ns && a.process_id == b.process_id &&
                a.thread_id == b.thread_id && a.ptr == b.ptr && a.size_bytes == b.size_bytes &&
                a.total_bytes == b.total_bytes && a.allocation_id == b.allocation_id &&
                a.inherited_from_pid == b.inherited_from_pid && a.name == b.name &&
                a.owner == b.owner && a.stack_python == b.stack_python && a.stack_c == b.stack_c &&
                a.step == b.step && a.end_ns == b.end_ns && a.has_stream == b.has_stream &&
                a.device == b.device && a.stream == b.stream && a.pool_used == b.pool_used &&
                a.pool_total == b.pool_total && a.free_pending == b.free_pending &&
                a.has_pool_peaks == b.has_pool_peaks)
        << "row " << i;
  }
}

// A framework pool's rows (PTA) keep their used, total and pending between heap rows that
// have none, and pay a few bytes for them; the heap rows pay nothing.
TEST(RowSpool, PoolFiguresComeBackBetweenRowsWithout) {
  test::TempDir dir;
  ASSERT_TRUE(dir.ok());
  std::string error;
  auto spool = RowSpool::create(dir.file("q.spool"), &error);
  ASSERT_NE(spool, nullptr) << error;
  std::vector<DumpRow> rows;
  int64_t used = 0;
  for (int i = 0; i < 3000; ++i) {
    DumpRow r;
    r.timestamp_ns = 1'700'000'000'000'000'000 + i * 100;
    r.process_id = r.thread_id = 4242;
    r.ptr = 0x7f00'0000'0000 + uint64_t(i % 64) * 4096;
    r.size_bytes = 512 + uint64_t(i % 7) * 512;
    r.allocation_id = uint64_t(i);
    if (i % 3 != 2) {  // two pool rows, then a heap row
      r.event = i % 2 ? DumpEvent::kFree : DumpEvent::kMalloc;
      r.event_type = DumpEventType::kPta;
      r.device = i % 5 == 0 ? 1 : 0;
      r.has_stream = true;
      used += r.event == DumpEvent::kMalloc ? int64_t(r.size_bytes) : -int64_t(r.size_bytes) / 2;
      r.pool_used = used;
      r.pool_total = i < 1000 ? -1 : 64 << 20;  // until the pool's first state
      r.free_pending = r.event == DumpEvent::kFree && i % 4 == 1;
    } else {
      r.event = DumpEvent::kMalloc;
    }
    rows.push_back(r);
  }
  ASSERT_TRUE(spool->push(rows.data(), rows.size(), &error)) << error;
  const auto bytes = std::filesystem::file_size(spool->path());
  EXPECT_LE(bytes, rows.size() * 20) << bytes << " bytes";
  std::vector<DumpRow> out;
  ASSERT_TRUE(spool->read(spool->claim(rows.size()), &out, &error)) << error;
  ASSERT_EQ(out.size(), rows.size());
  for (size_t i = 0; i < rows.size(); ++i) {
    SCOPED_TRACE("row " + std::to_string(i));
    EXPECT_EQ(out[i].event, rows[i].event);
    EXPECT_EQ(out[i].event_type, rows[i].event_type);
    EXPECT_EQ(out[i].pool_used, rows[i].pool_used);
    EXPECT_EQ(out[i].pool_total, rows[i].pool_total);
    EXPECT_EQ(out[i].free_pending, rows[i].free_pending);
    EXPECT_EQ(out[i].size_bytes, rows[i].size_bytes);
    EXPECT_EQ(out[i].device, rows[i].device);
  }
}

TEST(RowSpool, ACreateThatFailsNamesThePath) {
  std::string error;
  EXPECT_EQ(RowSpool::create("/nonexistent-dir/q.spool", &error), nullptr);
  EXPECT_NE(error.find("/nonexistent-dir/q.spool"), std::string::npos) << error;
}

}  // namespace
}  // namespace memtap
