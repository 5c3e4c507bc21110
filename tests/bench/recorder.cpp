// memtap_bench_recorder [ROWS] [text|compact]: how fast the recording's writer stores rows,
// and how large they are on disk, for msMemScope's text table and for --compact (default:
// both; issue 5: at least 1 M rows per second into SQLite, at most 40 bytes per event
// without stacks).
//
// One MemscopeWriter per form, ROWS rows (default 4,000,000) of a heap-like mix appended
// in releases of 4,096 as the engine hands them over, with the queue held in memory (so
// SQLite alone is timed, not the disk queue). Prints, per form: rows/s until every row is
// committed (the live rate the writer sustains), the time finish() then takes (indexes,
// checkpoint), and bytes per row of the finished file; then RESULT lines for tests/bench/run.
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <string>
#include <thread>
#include <vector>

#include "monitor/store/memscope_writer.h"

namespace {

using Clock = std::chrono::steady_clock;

// A heap-like run: allocations and their frees 300 ns apart, 4 threads, sizes from 16 B to
// 4 KiB, 1 block in 16 with an owner; no stacks.
std::vector<memtap::DumpRow> workload(size_t count) {
  std::vector<memtap::DumpRow> rows(count);
  const int64_t start_ns = std::chrono::duration_cast<std::chrono::nanoseconds>(
                               std::chrono::system_clock::now().time_since_epoch())
                               .count();
  for (size_t i = 0; i < count; ++i) {
    memtap::DumpRow& row = rows[i];
    const uint64_t block = i / 2;
    row.event = i % 2 == 0 ? memtap::DumpEvent::kMalloc : memtap::DumpEvent::kFree;
    row.timestamp_ns = start_ns + static_cast<int64_t>(i) * 300;
    row.process_id = 4242;
    row.thread_id = 4242 + static_cast<uint32_t>(block % 4);
    row.ptr = 0x55d3a0000000 + (block % 8192) * 4096;
    row.size_bytes = block % 8 == 0 ? 4096 : 16 + (block * 37) % 1024;
    row.allocation_id = block + 1;
    row.owner = block % 16 == 0 ? 1 : 0;
  }
  return rows;
}

struct Figures {
  double rows_per_s = 0;
  double finish_s = 0;
  double bytes_per_row = 0;
};

bool measure(const std::vector<memtap::DumpRow>& rows, bool compact, const std::string& path,
             Figures* out) {
  memtap::MemscopeWriterOptions options;
  options.compact = compact;
  options.max_memory_rows = 0;  // SQLite's rate, not the disk queue's
  std::string error;
  // Each form starts on a quiet disk: without this, the compact run began while the kernel
  // still wrote back the text run's 700 MB, and measured that writeback.
  sync();
  const Clock::time_point start = Clock::now();
  auto writer = memtap::MemscopeWriter::create(path, options, &error);
  if (writer == nullptr) {
    std::fprintf(stderr, "memtap_bench_recorder: %s\n", error.c_str());
    return false;
  }
  writer->define_string(1, "model@layer1");
  constexpr size_t kRelease = 4096;
  for (size_t at = 0; at < rows.size(); at += kRelease) {
    writer->append(&rows[at], std::min(kRelease, rows.size() - at));
  }
  // Polling is fine here: this measures, it does not synchronise a test.
  while (writer->rows_written() < rows.size()) {
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  const Clock::time_point written = Clock::now();
  if (!writer->finish({}, {}, &error)) {
    std::fprintf(stderr, "memtap_bench_recorder: %s\n", error.c_str());
    return false;
  }
  const Clock::time_point finished = Clock::now();
  out->rows_per_s = rows.size() / std::chrono::duration<double>(written - start).count();
  out->finish_s = std::chrono::duration<double>(finished - written).count();
  out->bytes_per_row = double(std::filesystem::file_size(path)) / rows.size();
  std::filesystem::remove(path);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  const size_t count = argc > 1 ? std::strtoull(argv[1], nullptr, 10) : 4'000'000;
  const std::string only = argc > 2 ? argv[2] : "";
  if (!only.empty() && only != "text" && only != "compact") {
    std::fprintf(stderr, "usage: %s [ROWS] [text|compact]  (default: both forms)\n", argv[0]);
    return 2;
  }
  const std::string dir = std::filesystem::temp_directory_path().string();
  const std::vector<memtap::DumpRow> rows = workload(count);
  std::printf("recorder: %zu rows (malloc/free, 4 threads, no stacks), queue in memory\n", count);
  Figures text, compact;
  if ((only != "compact" && !measure(rows, false, dir + "/memtap_bench_recorder_text.db", &text)) ||
      (only != "text" &&
       !measure(rows, true, dir + "/memtap_bench_recorder_compact.db", &compact))) {
    return 1;
  }
  for (const auto& [name, f] :
       {std::pair{"text (default)", text}, std::pair{"--compact", compact}}) {
    if (f.rows_per_s == 0) continue;
    std::printf("  %-15s %5.2f M rows/s until committed, finish %.2f s, %6.1f bytes/row\n", name,
                f.rows_per_s / 1e6, f.finish_s, f.bytes_per_row);
  }
  // A form not measured reads "n/a", not 0.
  const auto figure = [](double value, double scale, const char* format) {
    if (value == 0) return std::string("n/a");
    char text[32];
    std::snprintf(text, sizeof text, format, value / scale);
    return std::string(text);
  };
  std::printf("RESULT recorder_mrows_s=%s recorder_text_mrows_s=%s\n",
              figure(compact.rows_per_s, 1e6, "%.2f").c_str(),
              figure(text.rows_per_s, 1e6, "%.2f").c_str());
  std::printf("RESULT recorder_compact_bytes_per_row=%s recorder_text_bytes_per_row=%s\n",
              figure(compact.bytes_per_row, 1, "%.1f").c_str(),
              figure(text.bytes_per_row, 1, "%.1f").c_str());
  return 0;
}
