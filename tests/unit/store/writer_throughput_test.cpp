// How fast the writer stores rows, and how large they are on disk. Prints, never asserts on
// time: the numbers depend on the machine, and a timing assertion would be flaky.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <vector>

#include "monitor/store/memscope_writer.h"
#include "tests/unit/store/store_test_support.h"

namespace memtap {
namespace {

// A heap-like mix: allocations and their frees, some mmap blocks, a few threads.
std::vector<DumpRow> workload(size_t count) {
  std::vector<DumpRow> rows(count);
  for (size_t i = 0; i < count; ++i) {
    DumpRow& row = rows[i];
    const uint64_t block = i / 2;
    row.event = i % 2 == 0 ? DumpEvent::kMalloc : DumpEvent::kFree;
    row.event_type = DumpEventType::kHost;
    row.is_mmap = block % 64 == 0;
    row.timestamp_ns = 1779862930000000000 + static_cast<int64_t>(i) * 250;
    row.process_id = 41000;
    row.thread_id = 41000 + static_cast<uint32_t>(block % 8);
    row.ptr = 0x5555a0000000 + (block % 4096) * 256;
    row.size_bytes = 16 + (block * 37) % 8192;
    row.allocation_id = block + 1;
  }
  return rows;
}

TEST(MemscopeWriterThroughput, TwoMillionRows) {
  constexpr size_t kRows = 2'000'000;
  constexpr size_t kAppendRows = 4096;  // about what one engine release hands over
  test::TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::vector<DumpRow> rows = workload(kRows);
  const std::string path = dir.file("memscope_dump_20260101000000.db");

  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  std::string error;
  auto writer = MemscopeWriter::create(path, &error);
  ASSERT_NE(writer, nullptr) << error;
  for (size_t at = 0; at < kRows; at += kAppendRows) {
    writer->append(&rows[at], std::min(kAppendRows, kRows - at));
  }
  const Clock::time_point appended = Clock::now();
  ASSERT_TRUE(writer->finish({}, {}, &error)) << error;
  const Clock::time_point finished = Clock::now();

  ASSERT_EQ(writer->rows_written(), kRows);
  const auto file_bytes = std::filesystem::file_size(path);
  const double total_s = std::chrono::duration<double>(finished - start).count();
  const double append_s = std::chrono::duration<double>(appended - start).count();
  std::printf(
      "[ throughput ] %zu rows in %.2f s (append returned after %.3f s): %.0f rows/s, "
      "%.1f bytes/row (%.1f MiB with indexes)\n",
      kRows, total_s, append_s, kRows / total_s, double(file_bytes) / kRows,
      double(file_bytes) / (1 << 20));
  RecordProperty("rows_per_s", static_cast<int>(kRows / total_s));
  RecordProperty("bytes_per_row", static_cast<int>(file_bytes / kRows));

  test::Db db(path);
  EXPECT_EQ(db.value("SELECT count(*) FROM memscope_dump"), std::to_string(kRows));
  EXPECT_EQ(db.value("SELECT max(ID) FROM memscope_dump"), std::to_string(kRows - 1));
}

}  // namespace
}  // namespace memtap
