// How fast a memscope_dump reads, for a file in time order (memtap's) and one written
// block by block (msMemScope's). Prints rows per second, never asserts on time: the
// numbers depend on the machine. MEMTAP_READER_SPEED_ROWS sets the size (default 300,000 rows,
// five of the writer's batches, read whole and streamed in batches of 65,536;
// MEMTAP_READER_SPEED_ROWS=10000000 measures the ten-million-row case, as tests/bench/run
// monitor does for `memtap report`).
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "monitor/store/memscope_writer.h"
#include "tests/unit/reader/reader_test_support.h"

namespace memtap {
namespace {

size_t speed_rows() {
  const char* text = std::getenv("MEMTAP_READER_SPEED_ROWS");
  return text != nullptr ? std::strtoull(text, nullptr, 10) : 300'000;
}

// A heap-like mix of MALLOC/FREE pairs. `blockwise` reverses each run of 16 rows, so the
// file is out of time order the way a recorder writing blocks when they are freed makes it.
void write_recording(const std::string& path, size_t count, bool blockwise) {
  std::string error;
  auto writer = MemscopeWriter::create(path, &error);
  ASSERT_NE(writer, nullptr) << error;
  std::vector<DumpRow> rows(count);
  for (size_t i = 0; i < count; ++i) {
    DumpRow& row = rows[i];
    const uint64_t block = i / 2;
    row.event = i % 2 == 0 ? DumpEvent::kMalloc : DumpEvent::kFree;
    row.event_type = DumpEventType::kHost;
    row.timestamp_ns = 1779862930000000000 + int64_t(i) * 250;
    row.process_id = 41000;
    row.thread_id = 41000 + uint32_t(block % 8);
    row.ptr = 0x5555a0000000 + (block % 4096) * 256;
    row.size_bytes = 16 + (block * 37) % 8192;
    row.allocation_id = block + 1;
  }
  if (blockwise) {
    for (size_t at = 0; at + 16 <= count; at += 16) {
      std::reverse(rows.begin() + long(at), rows.begin() + long(at + 16));
    }
  }
  for (size_t at = 0; at < count; at += 65536) {
    writer->append(&rows[at], std::min<size_t>(65536, count - at));
  }
  ASSERT_TRUE(writer->finish({}, {}, &error)) << error;
}

void measure(const char* label, bool blockwise) {
  const size_t count = speed_rows();
  test::TempDir dir;
  const std::string path = dir.file("memscope_dump_20260101000000.db");
  write_recording(path, count, blockwise);

  using Clock = std::chrono::steady_clock;
  const Clock::time_point start = Clock::now();
  const Recording rec = test::read_ok(path);
  const double read_s = std::chrono::duration<double>(Clock::now() - start).count();
  ASSERT_EQ(rec.events.size(), count);
  EXPECT_TRUE(test::time_ordered(rec));

  const Clock::time_point stream_start = Clock::now();
  size_t streamed = 0;
  Recording header;
  std::string error;
  EXPECT_TRUE(stream_recording(
      path, 65536, &header,
      [&](std::span<const MemEvent> batch) {
        streamed += batch.size();
        return true;
      },
      &error))
      << error;
  const double stream_s = std::chrono::duration<double>(Clock::now() - stream_start).count();
  EXPECT_EQ(streamed, count);
  std::printf(
      "[ read speed ] %s: %zu rows: read_recording %.2f s (%.0f rows/s), "
      "stream_recording %.2f s (%.0f rows/s)\n",
      label, count, read_s, count / read_s, stream_s, count / stream_s);
  ::testing::Test::RecordProperty(std::string(label) + "_rows_per_s", int(count / read_s));
}

TEST(ReadSpeed, TimeOrderedMemtapFile) {
  measure("time-ordered", false);
}
TEST(ReadSpeed, BlockwiseOutOfOrderFile) {
  measure("blockwise", true);
}

}  // namespace
}  // namespace memtap
