// Fuzzes the reading of a recording database: the input is the file's bytes, opened the
// way `memtap report FILE` opens it (format sniffing, msMemScope's dump table or memtap's
// compact tables, memtap_session, memtap_meta), held and streamed, and then read once more
// as the window reads one process's past (stream_recording_range with a filter).
//
// Seeds: msMemScope's and MindStudio Insight's databases (../shared/data/msmemscope) and
// small memtap recordings in both forms, written by make_fuzz_seeds.
#include <unistd.h>

#include <cstdint>
#include <string>

#include "monitor/store/reader/recording_reader.h"
#include "tests/fuzz/fuzz_support.h"

using namespace memtap;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = fuzz::input_path("memscope_db", ".db");
  fuzz::write_input(path, data, size);
  fuzz::read_both_ways(path);

  // One process up to a time, names and stacks left out: the SQL filter's paths.
  RecordingFilter filter;
  filter.pid = size > 0 ? uint32_t(data[size - 1]) : 1;
  filter.max_ts_ns = int64_t(1779862930000000000) + int64_t(size) * 1000;
  filter.skip_names_and_stacks = true;
  Recording range;
  std::string error;
  int64_t last_ts = INT64_MIN;
  bool ordered = true;
  const bool ok = stream_recording_range(
      path, filter, 5, &range,
      [&](std::span<const MemEvent> batch) {
        ordered = fuzz::check_events(batch, range.strings, &last_ts) && ordered;
        for (const MemEvent& e : batch) {
          if (!filter.passes(e)) fuzz::fail("stream_recording_range let an event through");
        }
        return true;
      },
      &error);
  fuzz::check_read(path, ok, error, range);
  if (!ordered && !fuzz::sqlite_says_damaged(path)) fuzz::fail("range read out of time order");
  // A database in WAL mode leaves its -shm behind (and a -wal when it makes one).
  for (const char* suffix : {"", "-wal", "-shm", "-journal"}) unlink((path + suffix).c_str());
  return 0;
}
