// How fast the writer stores rows, and how large they are on disk. Prints, never asserts on
// time: the numbers depend on the machine, and a timing assertion would be flaky.
#include <gtest/gtest.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
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

// Writes `rows` (after defining `strings` as ids 1, 2, ...) and prints the rate.
void measure(const char* label, const std::vector<DumpRow>& rows,
             const std::vector<std::string>& strings = {}, bool compact = false) {
  constexpr size_t kAppendRows = 4096;  // about what one engine release hands over
  const size_t count = rows.size();
  test::TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string path = dir.file("memscope_dump_20260101000000.db");

  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  std::string error;
  MemscopeWriterOptions options;
  options.compact = compact;
  auto writer = MemscopeWriter::create(path, options, &error);
  ASSERT_NE(writer, nullptr) << error;
  for (size_t i = 0; i < strings.size(); ++i) writer->define_string(uint32_t(i + 1), strings[i]);
  for (size_t at = 0; at < count; at += kAppendRows) {
    writer->append(&rows[at], std::min(kAppendRows, count - at));
  }
  const Clock::time_point appended = Clock::now();
  while (writer->rows_written() < count) std::this_thread::yield();
  const Clock::time_point written = Clock::now();
  ASSERT_TRUE(writer->finish({}, {}, &error)) << error;
  const Clock::time_point finished = Clock::now();

  ASSERT_EQ(writer->rows_written(), count);
  const auto file_bytes = std::filesystem::file_size(path);
  const double total_s = std::chrono::duration<double>(finished - start).count();
  const double append_s = std::chrono::duration<double>(appended - start).count();
  const double written_s = std::chrono::duration<double>(written - start).count();
  std::printf(
      "[ throughput ] %s: %zu rows in %.2f s (append returned after %.3f s, rows committed "
      "after %.2f s: %.0f rows/s; finish %.2f s): %.0f rows/s, %.1f bytes/row (%.1f MiB)\n",
      label, count, total_s, append_s, written_s, count / written_s, total_s - written_s,
      count / total_s, double(file_bytes) / count, double(file_bytes) / (1 << 20));
  ::testing::Test::RecordProperty("rows_per_s", static_cast<int>(count / total_s));
  ::testing::Test::RecordProperty("bytes_per_row", static_cast<int>(file_bytes / count));

  if (const char* keep = std::getenv("MEMTAP_KEEP_THROUGHPUT_DB")) {
    std::filesystem::copy_file(path, keep, std::filesystem::copy_options::overwrite_existing);
  }
  test::Db db(path);
  EXPECT_EQ(db.value("SELECT count(*) FROM memscope_dump"), std::to_string(count));
  EXPECT_EQ(db.value("SELECT max(ID) FROM memscope_dump"), std::to_string(count - 1));
}

TEST(MemscopeWriterThroughput, TwoMillionRows) {
  measure("plain", workload(2'000'000));
}

TEST(MemscopeWriterThroughput, TwoMillionRowsCompact) {
  measure("plain, compact", workload(2'000'000), {}, true);
}

// The same mix with a training run's context: every block has one of 8 owners, every
// fourth MALLOC a Python stack (one of 16) and every eighth an operator name. The owner's
// Attr text is formatted once per owner, so this should cost little more than plain rows.
TEST(MemscopeWriterThroughput, HalfAMillionRowsWithOwnersAndStacks) {
  std::vector<std::string> strings;
  for (int i = 0; i < 8; ++i) strings.push_back("model@layer" + std::to_string(i));
  for (int i = 0; i < 16; ++i) {
    strings.push_back("train.py(" + std::to_string(i) +
                      "): step\nmodel.py(40): forward\ntorch/nn/module.py(1501): _call_impl\n");
  }
  strings.push_back("aten::mm");
  std::vector<DumpRow> rows = workload(500'000);
  for (size_t i = 0; i < rows.size(); ++i) {
    DumpRow& row = rows[i];
    const size_t block = i / 2;
    row.owner = uint32_t(1 + block % 8);
    if (row.event != DumpEvent::kMalloc) continue;
    if (block % 4 == 0) row.stack_python = uint32_t(9 + block % 16);
    if (block % 8 == 0) row.name = 25;
  }
  measure("owners and stacks", rows, strings);
}

}  // namespace
}  // namespace memtap
