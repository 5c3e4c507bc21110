// Recordings written on the spot for the window's tests: rows as the live engine makes
// them, written by the real MemscopeWriter into a real SQLite file (text or --compact), so
// the views' data is tested on the files memtap writes.
#pragma once

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "monitor/model/dump_row.h"
#include "monitor/model/process_info.h"
#include "monitor/store/memscope_writer.h"

namespace memtap::test {

class RecordingBuilder {
 public:
  explicit RecordingBuilder(uint32_t pid = 100, int64_t start_ns = 1'700'000'000'000'000'000)
      : pid_(pid), start_ns_(start_ns), pids_{pid} {
    DumpRow row = base(DumpEvent::kSystem, 0);
    row.event_type = DumpEventType::kStartTrace;
    rows_.push_back(row);
  }

  int64_t start_ns() const { return start_ns_; }
  uint32_t pid() const { return pid_; }
  // The rank a process's Hello gives (-1: none); by default the processes are ranks in the
  // order they came, when there are several.
  void set_rank(uint32_t pid, int32_t rank) { ranks_[pid] = rank; }

  // The rows that follow belong to process `pid` (a second rank, say), which starts then.
  void use_pid(uint32_t pid) {
    pid_ = pid;
    if (std::find(pids_.begin(), pids_.end(), pid) != pids_.end()) return;
    pids_.push_back(pid);
    DumpRow row = base(DumpEvent::kSystem, last_ms_);
    row.event_type = DumpEventType::kStartTrace;
    rows_.push_back(row);
  }
  // The time `ms` after the start, in epoch ns.
  int64_t at(double ms) const { return start_ns_ + int64_t(ms * 1e6); }

  // A string id for `text` (defined before the rows that use it).
  uint32_t text(const std::string& text) {
    for (size_t i = 0; i < strings_.size(); ++i) {
      if (strings_[i] == text) return uint32_t(i + 1);
    }
    strings_.push_back(text);
    return uint32_t(strings_.size());
  }

  // A heap block (or an anonymous mapping) allocated at `ms`; returns its allocation id.
  uint64_t malloc(double ms, uint64_t addr, uint64_t size, const std::string& owner = "",
                  const std::string& stack_python = "", bool mmap = false, uint32_t tid = 0) {
    DumpRow row = base(DumpEvent::kMalloc, ms);
    row.ptr = addr;
    row.size_bytes = size;
    row.is_mmap = mmap;
    row.allocation_id = ++allocations_;
    if (tid != 0) row.thread_id = tid;
    if (!owner.empty()) row.owner = text(owner);
    if (!stack_python.empty()) row.stack_python = text(stack_python);
    rows_.push_back(row);
    live_.push_back({addr, {row.allocation_id, size}});
    owners_.push_back({addr, row.owner});
    return row.allocation_id;
  }

  // A device block (HAL) on GPU `device`, allocated at `ms` by the API call `api` (the
  // rows' Name, as the agent records it); returns its allocation id.
  uint64_t device_malloc(double ms, uint64_t addr, uint64_t size, int32_t device,
                         const std::string& api = "") {
    DumpRow row = base(DumpEvent::kMalloc, ms);
    row.event_type = DumpEventType::kHal;
    row.device = device;
    if (!api.empty()) row.name = text(api);
    row.ptr = addr;
    row.size_bytes = size;
    row.allocation_id = ++allocations_;
    rows_.push_back(row);
    live_.push_back({addr, {row.allocation_id, size}});
    owners_.push_back({addr, 0});
    return row.allocation_id;
  }

  // The FREE of the device block at `addr` on GPU `device`.
  void device_free(double ms, uint64_t addr, int32_t device) {
    free(ms, addr);
    rows_.back().event_type = DumpEventType::kHal;
    rows_.back().device = device;
  }

  // A page-locked host block (HOST_PINNED: Device Id `cpu`, like the heap's).
  void pinned_malloc(double ms, uint64_t addr, uint64_t size) {
    malloc(ms, addr, size);
    rows_.back().event_type = DumpEventType::kHostPinned;
  }

  // A kernel launched on GPU `device` (a row of the device that holds no block).
  void kernel_launch(double ms, const std::string& kernel, int32_t device) {
    DumpRow row = base(DumpEvent::kKernelLaunch, ms);
    row.event_type = DumpEventType::kKernelLaunch;
    row.device = device;
    row.name = text(kernel);
    rows_.push_back(row);
  }

  void free(double ms, uint64_t addr, bool mmap = false) {
    DumpRow row = base(DumpEvent::kFree, ms);
    row.ptr = addr;
    row.is_mmap = mmap;
    for (size_t i = live_.size(); i-- > 0;) {
      if (live_[i].first != addr) continue;
      row.allocation_id = live_[i].second.first;
      row.size_bytes = live_[i].second.second;
      row.owner = owners_[i].second;
      live_.erase(live_.begin() + long(i));
      owners_.erase(owners_.begin() + long(i));
      break;
    }
    rows_.push_back(row);
  }

  void step(double ms, uint64_t number) {
    DumpRow row = base(DumpEvent::kSystem, ms);
    row.event_type = DumpEventType::kStep;
    row.step = number;
    rows_.push_back(row);
  }

  // memtap.mark(text): an MSTX Mark.
  void mark(double ms, const std::string& text) {
    DumpRow row = base(DumpEvent::kMstx, ms);
    row.event_type = DumpEventType::kMark;
    row.name = this->text(text);
    rows_.push_back(row);
  }

  // memtap.range(name): an MSTX Range_start, and its Range_end.
  void range_start(double ms, const std::string& name) {
    DumpRow row = base(DumpEvent::kMstx, ms);
    row.event_type = DumpEventType::kRangeStart;
    row.name = text(name);
    rows_.push_back(row);
  }
  void range_end(double ms, const std::string& name) {
    DumpRow row = base(DumpEvent::kMstx, ms);
    row.event_type = DumpEventType::kRangeEnd;
    row.name = text(name);
    rows_.push_back(row);
  }
  // Ranges nested in each other, the outermost first: the i-th begins at first_ms + i + 1
  // and ends at last_ms - i.
  void nested_ranges(double first_ms, double last_ms, const std::vector<std::string>& names) {
    for (size_t i = 0; i < names.size(); ++i) range_start(first_ms + double(i + 1), names[i]);
    for (size_t i = names.size(); i-- > 0;) range_end(last_ms - double(i), names[i]);
  }

  // The process's resident set, as the agent samples it.
  void rss(double ms, uint64_t bytes, uint64_t total = 0) {
    DumpRow row = base(DumpEvent::kSnapshot, ms);
    row.event_type = DumpEventType::kSnapshot;
    row.size_bytes = bytes;
    row.total_bytes = total;
    rows_.push_back(row);
  }

  // A Python tracer slice (python_trace_<pid>).
  void slice(double start_ms, double end_ms, const std::string& func_info, uint32_t tid = 0) {
    DumpRow row = base(DumpEvent::kTraceSlice, start_ms);
    row.end_ns = at(end_ms);
    row.name = text(func_info);
    if (tid != 0) row.thread_id = tid;
    rows_.push_back(row);
  }

  // Writes the recording at `path` (its final name), finished as memtap run finishes it.
  void write(const std::string& path, bool compact = false) {
    MemscopeWriterOptions options;
    options.compact = compact;
    std::string error;
    auto writer = MemscopeWriter::create(path, options, &error);
    ASSERT_NE(writer, nullptr) << error;
    for (size_t i = 0; i < strings_.size(); ++i)
      writer->define_string(uint32_t(i + 1), strings_[i]);
    std::vector<DumpRow> rows = rows_;
    std::vector<ProcessInfo> processes;
    for (uint32_t pid : pids_) {
      DumpRow stop = base(DumpEvent::kSystem, last_ms_);
      stop.event_type = DumpEventType::kStopTrace;
      stop.process_id = stop.thread_id = pid;
      rows.push_back(stop);
      ProcessInfo& p = processes.emplace_back();
      p.pid = pid;
      p.hostname = "testhost";
      p.command_line = {"test_program"};
      p.rank = pids_.size() > 1 ? int32_t(processes.size() - 1) : -1;
      if (auto it = ranks_.find(pid); it != ranks_.end()) p.rank = it->second;
      p.world_size = pids_.size() > 1 ? int32_t(pids_.size()) : -1;
      p.start_ns = start_ns_;
      p.end_ns = at(last_ms_);
      p.events_received = rows.size();
      p.bye_received = true;
    }
    writer->append(rows.data(), rows.size());
    ASSERT_TRUE(writer->finish(processes, {{"mode", "test"}}, &error)) << error;
  }

  // Writes the recording as a monitor killed before the end leaves it: its rows committed,
  // no memtap_meta complete=1.
  void write_cut(const std::string& path) {
    write(path);
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
    EXPECT_EQ(sqlite3_exec(db, "DELETE FROM memtap_meta WHERE key = 'complete'", nullptr, nullptr,
                           nullptr),
              SQLITE_OK);
    sqlite3_close(db);
  }

  // Writes the recording as a writer that ran out of disk leaves it: the rows so far, then
  // blocks of 64 bytes allocated and freed 1 ms apart until the file stops growing (SQLite's
  // max_page_count stands in for the full disk, as in MemscopeWriterErrors): memtap_meta
  // says where it stopped, and there is no `complete`. Returns the file it left
  // (`path`.partial), "" after a test failure.
  std::string write_stopped_by_full_disk(const std::string& path) {
    MemscopeWriterOptions options;
    options.rows_per_transaction = 1000;
    options.max_page_count = 64;
    std::string error;
    auto writer = MemscopeWriter::create(path, options, &error);
    EXPECT_NE(writer, nullptr) << error;
    if (!writer) return "";
    for (size_t i = 0; i < strings_.size(); ++i)
      writer->define_string(uint32_t(i + 1), strings_[i]);
    std::vector<DumpRow> rows = rows_;
    for (uint64_t i = 0; i < 20000; ++i) {
      const uint64_t addr = 0x7f0000000000 + 64 * (i % 16);
      DumpRow row = base(DumpEvent::kMalloc, last_ms_ + 1);
      row.ptr = addr;
      row.size_bytes = 64;
      row.allocation_id = ++allocations_;
      rows.push_back(row);
      row.event = DumpEvent::kFree;
      rows.push_back(row);
    }
    for (size_t at = 0; at < rows.size(); at += 500) {
      writer->append(&rows[at], std::min<size_t>(500, rows.size() - at));
    }
    EXPECT_FALSE(writer->finish({}, {{"mode", "test"}}, &error)) << "the disk never filled";
    EXPECT_FALSE(writer->stopped().reason.empty()) << error;
    return path + ".partial";
  }

 private:
  DumpRow base(DumpEvent event, double ms) {
    DumpRow row;
    row.event = event;
    row.event_type = DumpEventType::kHost;
    row.timestamp_ns = at(ms);
    row.process_id = pid_;
    row.thread_id = pid_;
    last_ms_ = std::max(last_ms_, ms);
    return row;
  }

  uint32_t pid_;
  int64_t start_ns_;
  double last_ms_ = 0;
  uint64_t allocations_ = 0;
  std::vector<uint32_t> pids_;         // every process, in the order they started
  std::map<uint32_t, int32_t> ranks_;  // set_rank's
  std::vector<DumpRow> rows_;
  std::vector<std::string> strings_;
  std::vector<std::pair<uint64_t, std::pair<uint64_t, uint64_t>>> live_;  // addr -> (id, size)
  std::vector<std::pair<uint64_t, uint32_t>> owners_;                     // addr -> owner id
};

// A host whose curves differ (heap, an anonymous mapping, the resident set) and GPU 0 with
// HAL blocks only, whose four curves are then one line: the recording the "lines drawn as
// one" tests of the curves (viewdata) and of the chart's note (gui) share.
inline void host_and_hal_only_gpu(RecordingBuilder& b) {
  b.malloc(1, 0x1000, 1000);
  b.malloc(2, 0x100000, 1 << 20, "", "", /*mmap=*/true);
  b.rss(3, 5 << 20);
  b.device_malloc(4, 0x7f0000000000, 8 << 20, 0);
  b.device_malloc(5, 0x7f0000800000, 2 << 20, 0);
  b.device_free(6, 0x7f0000000000, 0);
}

// `count` ranges nested in each other, "level0" the outermost, level i from 1 + i ms to
// 40 - i ms, inside a block from 0 to 50 ms (the curves' span): more levels than the range
// bars draw, or keep.
inline void nested_levels(RecordingBuilder& b, int count) {
  std::vector<std::string> names;
  for (int i = 0; i < count; ++i) names.push_back("level" + std::to_string(i));
  b.malloc(0, 0x1000, 8);
  b.nested_ranges(0, 40, names);
  b.free(50, 0x1000);
}

// A block at +0.5 ms (the curves' range begins with the first block), then `steps` steps
// numbered from 1, step N at +N ms with a small block half a millisecond into it: a long
// run's steps, for the tests of how they are thinned (viewdata) and labelled (gui).
inline void steps_a_millisecond_apart(RecordingBuilder& b, int steps) {
  b.malloc(0.5, 0x100, 16);
  for (int step = 1; step <= steps; ++step) {
    b.step(step, uint64_t(step));
    b.malloc(step + 0.5, 0x1000 + uint64_t(step) * 0x100, 64);
  }
}

}  // namespace memtap::test
