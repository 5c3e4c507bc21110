// A compact recording (MemscopeWriterOptions::compact) read from its integer tables gives
// exactly the Recording that the same rows give as msMemScope's text table, and that the
// text reader makes of the compact file's own memscope_dump view: every event kind, owners
// that need escaping, stacks, mmap and inherited blocks, several processes and threads, a
// row out of time order. Also streamed, split over threads, filtered (with the chunk
// table stopping the scan early), and refused when its format version is not 1.
#include <gtest/gtest.h>

#include <cstdint>
#include <filesystem>
#include <limits>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "monitor/engine/row_events.h"
#include "monitor/store/memscope_writer.h"
#include "monitor/store/reader/row_problems.h"
#include "monitor/store/reader/sqlite_dump_source.h"
#include "tests/unit/reader/reader_test_support.h"

namespace memtap {
namespace {

using test::count_kind;
using test::exec_sql;
using test::read_error;
using test::read_ok;
using test::TempDir;

constexpr int64_t kStart = 1779862930000000000;  // ns since the epoch
constexpr uint32_t kPid = 4242;
constexpr uint32_t kChild = 4300;

// Session strings the rows refer to; owners that JSON must escape, an owner spelled `N/A`
// (the reader's "no value") and an empty one.
const std::vector<std::pair<uint32_t, std::string>> kStrings = {
    {1, "aten::empty"},
    {2, "model@enc\"oder\"@back\\slash@new\nline\ttab"},
    {3, "train.py(12): step\nmodel.py(40): forward"},
    {4, "libc.so.6(malloc+0x10) [0x7f00]\nlibtorch.so(alloc+0x2) [0x7f10]"},
    {5, "optimizer"},
    {6, "N/A"},
    {7, ""},
    {8, "epoch 1"},
    {9, "forward pass"},
    {10, "layer \xe5\xb1\x82 0"},
    {11, "cudaMalloc"},
    {12, "cudaHostAlloc"},
    {13, "void gemm<\"tn\">(float*)"},
};

DumpRow row(DumpEvent event, DumpEventType type, int64_t at, uint32_t pid = kPid,
            uint32_t tid = kPid) {
  DumpRow r;
  r.event = event;
  r.event_type = type;
  r.timestamp_ns = kStart + at;
  r.process_id = pid;
  r.thread_id = tid;
  return r;
}

DumpRow block(DumpEvent event, int64_t at, uint64_t ptr, uint64_t size, uint64_t id,
              uint32_t owner = 0, uint32_t tid = kPid) {
  DumpRow r = row(event, DumpEventType::kHost, at, kPid, tid);
  r.ptr = ptr;
  r.size_bytes = size;
  r.allocation_id = id;
  r.owner = owner;
  return r;
}

DumpRow on_device(DumpRow r, int32_t device, bool has_stream = false, uint64_t stream = 0) {
  r.device = device;
  r.has_stream = has_stream;
  r.stream = stream;
  return r;
}

// What the session makes of device events: HAL blocks on two devices, one at the address
// of a heap block (and of a pinned one), streams (0 and a top-bit handle among them), a
// kernel launch, an OOM with a block live then, a device's capacity.
std::vector<DumpRow> device_rows() {
  using E = DumpEvent;
  using T = DumpEventType;
  std::vector<DumpRow> rows;
  DumpRow hal = block(E::kMalloc, 151, 0x5555a0000000, 1 << 20, 8, 5);
  hal.event_type = T::kHal;
  hal.name = 1;
  hal.stack_python = 3;
  hal.stack_c = 4;
  rows.push_back(on_device(hal, 0, true, 0x55));
  DumpRow hal1 = block(E::kMalloc, 152, 0x7f1000000000, 4 << 20, 9);
  hal1.event_type = T::kHal;
  hal1.name = 11;
  rows.push_back(on_device(hal1, 1));
  DumpRow pinned = block(E::kMalloc, 153, 0x5555a0000000, 8192, 10);
  pinned.event_type = T::kHostPinned;
  pinned.name = 12;
  rows.push_back(pinned);
  DumpRow kernel = row(E::kKernelLaunch, T::kKernelLaunch, 154, kPid, kPid + 1);
  kernel.name = 13;
  rows.push_back(on_device(kernel, 1, true, 0x7f00aa00));
  DumpRow oom = row(E::kOomDetail, T::kOomTrigger, 155);
  oom.name = 11;
  oom.size_bytes = uint64_t{1} << 33;
  oom.stack_python = 3;
  rows.push_back(on_device(oom, 0, true, 0));
  DumpRow top = hal;
  top.event = E::kOomDetail;
  top.event_type = T::kOomTopAlloc;
  top.timestamp_ns = kStart + 155;
  rows.push_back(on_device(top, 0));
  DumpRow info = row(E::kSystem, T::kStartTrace, 156, kPid, kPid + 1);
  info.size_bytes = uint64_t{3} << 30;
  info.total_bytes = uint64_t{80} << 30;
  rows.push_back(on_device(info, 1));
  DumpRow hal_free = block(E::kFree, 157, 0x5555a0000000, 1 << 20, 8, 5);
  hal_free.event_type = T::kHal;
  rows.push_back(on_device(hal_free, 0, true, 0));
  DumpRow hal1_free = block(E::kFree, 158, 0x7f1000000000, 4 << 20, 9);
  hal1_free.event_type = T::kHal;
  rows.push_back(on_device(hal1_free, 1, true, 0xffff000000000001));
  DumpRow pinned_free = block(E::kFree, 159, 0x5555a0000000, 8192, 10);
  pinned_free.event_type = T::kHostPinned;
  rows.push_back(pinned_free);
  return rows;
}

// What the session makes of the framework pool (PTA): blocks with their pool's used and total
// (unknown before its first state), a FREE whose completion folded into it and a pending one
// with its FREE_COMPLETED later, a device pool's SNAPSHOT, an OOM listing a pool block.
std::vector<DumpRow> pool_rows() {
  using E = DumpEvent;
  using T = DumpEventType;
  std::vector<DumpRow> rows;
  DumpRow tensor = block(E::kMalloc, 161, 0x7f2000000000, 512, 11, 5);
  tensor.event_type = T::kPta;
  tensor.name = 1;
  tensor.stack_python = 3;
  tensor.pool_used = 512;
  tensor.pool_total = 2 << 20;
  rows.push_back(on_device(tensor, 0, true, 0x55));
  DumpRow other = block(E::kMalloc, 162, 0x7f3000000000, 1024, 12);
  other.event_type = T::kPta;
  other.pool_used = 1024;  // device 1's pool said nothing yet: no total
  rows.push_back(on_device(other, 1, true, 0));
  DumpRow state = row(E::kSnapshot, T::kPta, 163, kPid, kPid + 1);
  state.pool_used = 1024;
  state.pool_total = 4 << 20;
  rows.push_back(on_device(state, 1));
  DumpRow top = tensor;
  top.event = E::kOomDetail;
  top.event_type = T::kOomTopAlloc;
  top.timestamp_ns = kStart + 164;
  top.device = 0;
  top.has_stream = false;
  top.pool_used = top.pool_total = -1;
  rows.push_back(top);
  DumpRow freed = block(E::kFree, 165, 0x7f2000000000, 512, 11, 5);
  freed.event_type = T::kPta;
  freed.pool_used = 0;
  freed.pool_total = 2 << 20;
  rows.push_back(on_device(freed, 0, true, 0x55));
  DumpRow waits = block(E::kFree, 166, 0x7f3000000000, 1024, 12);
  waits.event_type = T::kPta;
  waits.pool_used = 0;
  waits.pool_total = 4 << 20;
  waits.free_pending = true;
  rows.push_back(on_device(waits, 1, true, 7));
  DumpRow done = row(E::kFreeCompleted, T::kPta, 167);
  done.ptr = 0x7f3000000000;
  done.size_bytes = 1024;
  rows.push_back(on_device(done, 1));
  return rows;
}

constexpr size_t kDeviceRows = 10;
constexpr size_t kPoolRows = 7;

// Every kind of row memtap writes, in the order a session would hand them over.
std::vector<DumpRow> rich_rows() {
  using E = DumpEvent;
  using T = DumpEventType;
  std::vector<DumpRow> rows;
  rows.push_back(row(E::kSystem, T::kStartTrace, 0));
  DumpRow step = row(E::kSystem, T::kStep, 10);
  step.step = 1;
  rows.push_back(step);
  DumpRow op = row(E::kOpLaunch, T::kAtenStart, 20);
  op.name = 1;
  rows.push_back(op);
  DumpRow named = block(E::kMalloc, 30, 0x5555a0000000, 4096, 1, 2);
  named.name = 1;
  named.stack_python = 3;
  named.stack_c = 4;
  rows.push_back(named);
  rows.push_back(block(E::kMalloc, 40, 0x5555a0001000, 64, 2, 5, kPid + 1));
  rows.push_back(block(E::kMalloc, 41, 0x5555a0002000, 32, 3, 6, kPid + 2));  // owner `N/A`
  rows.push_back(block(E::kMalloc, 42, 0x5555a0003000, 16, 4, 7));            // owner ""
  rows.push_back(block(E::kMalloc, 43, 0x5555a0004000, 48, 5, 10));
  rows.push_back(row(E::kOpLaunch, T::kAtenEnd, 50));
  DumpRow mmap = block(E::kMalloc, 60, 0x7f0000000000, 1 << 20, 6);
  mmap.is_mmap = true;
  rows.push_back(mmap);
  // A kernel-half address: the top bit set, which SQLite holds as a negative integer.
  rows.push_back(block(E::kMalloc, 61, 0xffff800000001000, 128, 7));
  DumpRow mark = row(E::kMstx, T::kMark, 70);
  mark.name = 8;
  rows.push_back(mark);
  DumpRow range = row(E::kMstx, T::kRangeStart, 80, kPid, kPid + 1);
  range.name = 9;
  rows.push_back(range);
  rows.push_back(row(E::kMstx, T::kRangeEnd, 90, kPid, kPid + 1));
  DumpRow snapshot = row(E::kSnapshot, T::kSnapshot, 100);
  snapshot.size_bytes = 123456789;
  snapshot.total_bytes = 64ull << 30;
  rows.push_back(snapshot);
  snapshot.timestamp_ns += 5;
  snapshot.total_bytes = 0;  // the capacity unknown: no "total"
  rows.push_back(snapshot);
  rows.push_back(block(E::kFree, 110, 0x5555a0001000, 64, 2, 5, kPid + 1));
  DumpRow unmap = block(E::kFree, 120, 0x7f0000000000, 1 << 20, 6);
  unmap.is_mmap = true;
  rows.push_back(unmap);
  rows.push_back(block(E::kFree, 121, 0x5555a0009000, 0, 0));  // a FREE that matched nothing
  // A fork child: its own threads, a block inherited from its parent freed.
  DumpRow inherited = block(E::kFree, 130, 0x5555a0000000, 4096, 1, 2);
  inherited.process_id = kChild;
  inherited.thread_id = kChild;
  inherited.inherited_from_pid = kPid;
  rows.push_back(inherited);
  DumpRow child_malloc = block(E::kMalloc, 131, 0x5555b0000000, 256, 1);
  child_malloc.process_id = kChild;
  child_malloc.thread_id = kChild + 1;
  child_malloc.stack_python = 3;
  rows.push_back(child_malloc);
  step = row(E::kSystem, T::kStep, 140);
  step.step = 2;
  rows.push_back(step);
  // Late: an event that reached the writer after later ones.
  rows.push_back(block(E::kFree, 35, 0x5555a0003000, 16, 4, 7));
  rows.push_back(block(E::kFree, 150, 0xffff800000001000, 128, 7));
  for (DumpRow& r : device_rows()) rows.push_back(r);
  for (DumpRow& r : pool_rows()) rows.push_back(r);
  rows.push_back(row(E::kSystem, T::kStopTrace, 200));
  return rows;
}

std::vector<ProcessInfo> processes() {
  ProcessInfo parent;
  parent.pid = kPid;
  parent.hostname = "node-1";
  parent.command_line = {"python", "train.py"};
  parent.rank = 0;
  parent.world_size = 2;
  ProcessInfo child = parent;
  child.pid = kChild;
  child.forked_from_pid = kPid;
  child.events_dropped = 3;
  return {parent, child};
}

// The rows through the real writer, finished; the file's path.
std::string write(const std::string& path, const std::vector<DumpRow>& rows, bool compact) {
  MemscopeWriterOptions options;
  options.compact = compact;
  std::string error;
  auto writer = MemscopeWriter::create(path, options, &error);
  if (writer == nullptr) {
    ADD_FAILURE() << error;
    return path;
  }
  for (const auto& [id, text] : kStrings) writer->define_string(id, text);
  writer->append(rows.data(), rows.size());
  if (!writer->finish(processes(), {}, &error)) ADD_FAILURE() << error;
  return path;
}

// The compact file's view as a table of its own, so the text reader reads what the view
// spells (a view is no dump table to it, and the compact tables would take the fast path).
std::string materialize_view(const std::string& compact, const std::string& path) {
  exec_sql(path, "ATTACH '" + compact +
                     "' AS src; CREATE TABLE memscope_dump AS SELECT * FROM src.memscope_dump;"
                     "CREATE TABLE memtap_session AS SELECT * FROM src.memtap_session;");
  return path;
}

void expect_same_event(const MemEvent& a, const StringTable& sa, const MemEvent& b,
                       const StringTable& sb) {
  EXPECT_EQ(a.ts_ns, b.ts_ns);
  EXPECT_EQ(a.pid, b.pid);
  EXPECT_EQ(a.tid, b.tid);
  EXPECT_EQ(a.device, b.device);
  EXPECT_EQ(a.kind, b.kind);
  EXPECT_EQ(a.layer, b.layer);
  EXPECT_EQ(a.is_mmap, b.is_mmap);
  EXPECT_EQ(a.addr, b.addr);
  EXPECT_EQ(a.size_bytes, b.size_bytes);
  EXPECT_EQ(a.allocation_id, b.allocation_id);
  EXPECT_EQ(sa.get(a.name), sb.get(b.name));
  EXPECT_EQ(sa.get(a.owner), sb.get(b.owner));
  EXPECT_EQ(sa.get(a.stack_python), sb.get(b.stack_python));
  EXPECT_EQ(sa.get(a.stack_c), sb.get(b.stack_c));
  EXPECT_EQ(a.stream, b.stream);
  EXPECT_EQ(a.free_pending, b.free_pending);
  EXPECT_EQ(a.pool_used, b.pool_used);
  EXPECT_EQ(a.pool_total, b.pool_total);
  EXPECT_EQ(a.snap_allocated, b.snap_allocated);
  EXPECT_EQ(a.snap_reserved, b.snap_reserved);
  EXPECT_EQ(a.snap_app_reserved, b.snap_app_reserved);
  EXPECT_EQ(a.snap_total, b.snap_total);
  EXPECT_EQ(a.snap_free, b.snap_free);
}

void expect_same_events(const std::vector<MemEvent>& a, const StringTable& sa,
                        const std::vector<MemEvent>& b, const StringTable& sb) {
  ASSERT_EQ(a.size(), b.size());
  for (size_t i = 0; i < a.size(); ++i) {
    SCOPED_TRACE("event " + std::to_string(i));
    expect_same_event(a[i], sa, b[i], sb);
  }
}

void expect_same_recording(const Recording& a, const Recording& b) {
  EXPECT_EQ(a.format, b.format);
  EXPECT_EQ(a.rows_read, b.rows_read);
  EXPECT_EQ(a.rows_skipped, b.rows_skipped);
  EXPECT_EQ(a.warning, b.warning);
  expect_same_events(a.events, a.strings, b.events, b.strings);
  ASSERT_EQ(a.processes.size(), b.processes.size());
  for (size_t i = 0; i < a.processes.size(); ++i) {
    EXPECT_EQ(a.processes[i].pid, b.processes[i].pid);
    EXPECT_EQ(a.processes[i].hostname, b.processes[i].hostname);
    EXPECT_EQ(a.processes[i].command_line, b.processes[i].command_line);
    EXPECT_EQ(a.processes[i].rank, b.processes[i].rank);
    EXPECT_EQ(a.processes[i].world_size, b.processes[i].world_size);
    EXPECT_EQ(a.processes[i].forked_from_pid, b.processes[i].forked_from_pid);
    EXPECT_EQ(a.processes[i].events_dropped, b.processes[i].events_dropped);
  }
}

// stream_recording (or stream_recording_range when `filter` is given), batches collected;
// each batch's strings resolved when it arrives, as they are promised to be.
struct Streamed {
  Recording rec;
  std::vector<MemEvent> events;
};

Streamed stream(const std::string& path, size_t batch, const RecordingFilter* filter = nullptr) {
  Streamed out;
  std::string error;
  const auto take = [&](std::span<const MemEvent> events) {
    EXPECT_LE(events.size(), batch + 1);
    for (const MemEvent& e : events) {
      EXPECT_LT(e.name, out.rec.strings.size());
      EXPECT_LT(e.owner, out.rec.strings.size());
      EXPECT_LT(e.stack_python, out.rec.strings.size());
      EXPECT_LT(e.stack_c, out.rec.strings.size());
    }
    out.events.insert(out.events.end(), events.begin(), events.end());
    return true;
  };
  const bool ok = filter != nullptr
                      ? stream_recording_range(path, *filter, batch, &out.rec, take, &error)
                      : stream_recording(path, batch, &out.rec, take, &error);
  EXPECT_TRUE(ok) << error;
  return out;
}

class CompactRead : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(dir.ok());
    text = write(dir.file("text.db"), rich_rows(), false);
    compact = write(dir.file("compact.db"), rich_rows(), true);
    view = materialize_view(compact, dir.file("view.db"));
  }

  TempDir dir;
  std::string text, compact, view;
};

TEST_F(CompactRead, GivesTheRecordingOfTheTextTableAndOfTheView) {
  const Recording from_text = read_ok(text);
  const Recording from_compact = read_ok(compact);
  const Recording from_view = read_ok(view);
  ASSERT_EQ(from_compact.events.size(), rich_rows().size());
  EXPECT_EQ(from_compact.format, "memscope_dump");
  EXPECT_EQ(from_compact.rows_skipped, 0u) << from_compact.warning;
  {
    SCOPED_TRACE("compact against text");
    expect_same_recording(from_compact, from_text);
  }
  {
    SCOPED_TRACE("compact against its view read as text");
    expect_same_recording(from_compact, from_view);
  }
  // The strings are interned in the text reader's order, so even the ids agree.
  for (size_t i = 0; i < from_compact.events.size(); ++i) {
    EXPECT_EQ(from_compact.events[i].owner, from_text.events[i].owner) << i;
    EXPECT_EQ(from_compact.events[i].stack_c, from_text.events[i].stack_c) << i;
  }
  // What the rows were written to mean, not only what the other readings agree on.
  const MemEvent& named = from_compact.events[3];
  EXPECT_EQ(named.kind, MemEventKind::kMalloc);
  EXPECT_EQ(from_compact.strings.get(named.owner), kStrings[1].second);
  EXPECT_EQ(from_compact.strings.get(named.stack_c), kStrings[3].second);
  EXPECT_EQ(count_kind(from_compact, MemEventKind::kStep), 2u);
  EXPECT_EQ(count_kind(from_compact, MemEventKind::kSnapshot), 3u);  // two of the host, a pool
  EXPECT_EQ(count_kind(from_compact, MemEventKind::kRangeEnd), 1u);
  EXPECT_EQ(count_kind(from_compact, MemEventKind::kOpEnd), 1u);
  EXPECT_TRUE(test::time_ordered(from_compact));
}

TEST_F(CompactRead, StreamsTheSameEventsInSmallBatches) {
  const Recording whole = read_ok(text);
  for (const size_t batch : {size_t(1), size_t(3), size_t(1000)}) {
    SCOPED_TRACE("batch " + std::to_string(batch));
    const Streamed from_compact = stream(compact, batch);
    expect_same_events(from_compact.events, from_compact.rec.strings, whole.events, whole.strings);
    EXPECT_EQ(from_compact.rec.rows_read, whole.rows_read);
    EXPECT_EQ(from_compact.rec.processes.size(), whole.processes.size());
  }
}

TEST_F(CompactRead, SplitOverThreadsGivesTheOneThreadRead) {
  auto read_with = [&](unsigned threads) {
    Recording rec;
    reader::RowProblems problems;
    reader::SqliteReadOptions options;
    options.max_threads = threads;
    options.min_rows_per_thread = 2;
    std::string error;
    EXPECT_TRUE(reader::read_sqlite_recording(compact, options, &rec, &problems, &error)) << error;
    EXPECT_EQ(problems.rows, rich_rows().size());
    return rec;
  };
  const Recording one = read_with(1), four = read_with(4);
  expect_same_events(four.events, four.strings, one.events, one.strings);
  EXPECT_EQ(four.strings.size(), one.strings.size());
}

TEST_F(CompactRead, LeavesNamesAndStacksUnreadWhenAsked) {
  RecordingFilter lean;
  lean.skip_names_and_stacks = true;
  const Streamed got = stream(compact, 4, &lean), want = stream(text, 4, &lean);
  expect_same_events(got.events, got.rec.strings, want.events, want.rec.strings);
  for (const MemEvent& e : got.events) {
    EXPECT_EQ(e.name, 0u);
    EXPECT_EQ(e.stack_python, 0u);
    EXPECT_EQ(e.stack_c, 0u);
  }
}

TEST_F(CompactRead, AnotherFormatVersionIsRefusedByName) {
  exec_sql(compact, "UPDATE memtap_format SET version = 99");
  const std::string error = read_error(compact);
  EXPECT_NE(error.find(compact), std::string::npos) << error;
  EXPECT_NE(error.find("version 99"), std::string::npos) << error;
  EXPECT_NE(error.find("versions 1 to 3"), std::string::npos) << error;
}

// Version 1 files (before the device rows) have no memtap_event_stream table: still read.
TEST_F(CompactRead, AVersionOneFileIsStillRead) {
  const std::vector<DumpRow> all = rich_rows();
  const std::vector<DumpRow> host(all.begin(),
                                  all.end() - 1 - kDeviceRows - kPoolRows);  // no device rows
  const std::string old = write(dir.file("old.db"), host, true);
  exec_sql(old,
           "UPDATE memtap_format SET version = 1; DROP TABLE memtap_event_stream;"
           "DROP TABLE memtap_event_pool");
  const Recording rec = read_ok(old);
  EXPECT_EQ(rec.rows_skipped, 0u) << rec.warning;
  EXPECT_EQ(rec.events.size(), host.size());
}

// Version 2 files (before the pool rows) have no memtap_event_pool table: still read.
TEST_F(CompactRead, AVersionTwoFileIsStillRead) {
  const std::vector<DumpRow> all = rich_rows();
  const std::vector<DumpRow> before(all.begin(), all.end() - 1 - kPoolRows);  // no pool rows
  const std::string old = write(dir.file("old.db"), before, true);
  exec_sql(old, "UPDATE memtap_format SET version = 2; DROP TABLE memtap_event_pool");
  const Recording rec = read_ok(old);
  EXPECT_EQ(rec.rows_skipped, 0u) << rec.warning;
  const Recording now = read_ok(write(dir.file("now.db"), before, true));
  expect_same_events(rec.events, rec.strings, now.events, now.strings);
}

// The device rows as the text table spells them, column by column, and the compact view
// spelling them the same.
TEST_F(CompactRead, DeviceRowsAreSpelledAsMsMemScopeAndTheViewAgrees) {
  const std::string columns =
      "SELECT Event, \"Event Type\", Name, \"Device Id\", Ptr, Attr, \"Call Stack(Python)\" "
      "FROM memscope_dump WHERE ID >= " +
      std::to_string(rich_rows().size() - 1 - kPoolRows - kDeviceRows) + " AND ID < " +
      std::to_string(rich_rows().size() - 1 - kPoolRows) + " ORDER BY ID";
  const test::Rows want = {
      {"MALLOC", "HAL", "aten::empty", "0", "0x00005555a0000000",
       R"({"allocation_id":"8","addr":"0x00005555a0000000","size":"1048576","owner":"optimizer","stream":"85"})",
       kStrings[2].second},
      {"MALLOC", "HAL", "cudaMalloc", "1", "0x00007f1000000000",
       R"({"allocation_id":"9","addr":"0x00007f1000000000","size":"4194304"})", ""},
      {"MALLOC", "HOST_PINNED", "cudaHostAlloc", "cpu", "0x00005555a0000000",
       R"({"allocation_id":"10","addr":"0x00005555a0000000","size":"8192"})", ""},
      {"KERNEL_LAUNCH", "KERNEL_LAUNCH", kStrings[12].second, "1", "N/A",
       R"({"stream":"2130749952"})", ""},
      {"OOM_DETAIL", "OOM_TRIGGER", "cudaMalloc", "0", "N/A",
       R"({"func":"cudaMalloc","req_size":"8589934592","size":"8589934592","stream":"0"})",
       kStrings[2].second},
      {"OOM_DETAIL", "OOM_TOP_ALLOC", "aten::empty", "0", "0x00005555a0000000",
       R"({"allocation_id":"8","addr":"0x00005555a0000000","size":"1048576","owner":"optimizer"})",
       kStrings[2].second},
      {"SYSTEM", "START_TRACE", "N/A", "1", "N/A", R"({"free":"3221225472","total":"85899345920"})",
       ""},
      {"FREE", "HAL", "N/A", "0", "0x00005555a0000000",
       R"({"allocation_id":"8","addr":"0x00005555a0000000","size":"1048576","owner":"optimizer","stream":"0"})",
       ""},
      {"FREE", "HAL", "N/A", "1", "0x00007f1000000000",
       R"({"allocation_id":"9","addr":"0x00007f1000000000","size":"4194304","stream":"18446462598732840961"})",
       ""},
      {"FREE", "HOST_PINNED", "N/A", "cpu", "0x00005555a0000000",
       R"({"allocation_id":"10","addr":"0x00005555a0000000","size":"8192"})", ""},
  };
  EXPECT_EQ(test::Db(text).query(columns), want);
  EXPECT_EQ(test::Db(compact).query(columns), want);
}

// What the device rows mean once read, from either form.
TEST_F(CompactRead, DeviceRowsReadBackAsDeviceEvents) {
  for (const std::string& path : {text, compact}) {
    SCOPED_TRACE(path);
    const Recording rec = read_ok(path);
    ASSERT_EQ(rec.events.size(), rich_rows().size());
    // Read in time order: the device rows are the ten before the pool rows and STOP_TRACE.
    const MemEvent* e = &rec.events[rec.events.size() - 1 - kPoolRows - kDeviceRows];
    EXPECT_EQ(e[0].kind, MemEventKind::kMalloc);
    EXPECT_EQ(e[0].layer, Layer::kHal);
    EXPECT_EQ(e[0].device, 0);
    EXPECT_EQ(e[0].stream, 0x55u);
    EXPECT_EQ(e[1].device, 1);
    EXPECT_EQ(e[1].stream, 0u);
    EXPECT_EQ(e[2].layer, Layer::kHostPinned);
    EXPECT_EQ(e[2].device, kHostDevice);
    EXPECT_EQ(e[3].kind, MemEventKind::kKernelLaunch);
    EXPECT_EQ(e[3].device, 1);
    EXPECT_EQ(e[3].stream, 0x7f00aa00u);
    EXPECT_EQ(rec.strings.get(e[3].name), kStrings[12].second);
    EXPECT_EQ(e[4].kind, MemEventKind::kOom);
    EXPECT_EQ(e[4].device, 0);
    EXPECT_EQ(e[4].size_bytes, uint64_t{1} << 33);
    EXPECT_EQ(rec.strings.get(e[4].name), "cudaMalloc");
    EXPECT_EQ(e[5].kind, MemEventKind::kOomTopAlloc);
    EXPECT_EQ(e[5].addr, 0x5555a0000000u);
    EXPECT_EQ(e[5].size_bytes, 1u << 20);
    EXPECT_EQ(e[5].allocation_id, 8u);
    EXPECT_EQ(rec.strings.get(e[5].owner), "optimizer");
    EXPECT_EQ(rec.strings.get(e[5].stack_c), kStrings[3].second);
    EXPECT_EQ(e[6].kind, MemEventKind::kTraceStart);
    EXPECT_EQ(e[6].device, 1);
    EXPECT_EQ(e[6].snap_free, int64_t{3} << 30);
    EXPECT_EQ(e[6].snap_total, int64_t{80} << 30);
    EXPECT_EQ(e[7].kind, MemEventKind::kFree);
    EXPECT_EQ(e[7].device, 0);
    EXPECT_EQ(e[8].stream, 0xffff000000000001u);
    EXPECT_EQ(e[9].layer, Layer::kHostPinned);
  }
}

// The live engine's events for the device rows (row_events.h) are the events read back from
// the recording: a replay and the live run give the same report.
TEST_F(CompactRead, DeviceRowsGiveTheLiveEventsBack) {
  StringTable live_strings;
  RowStrings strings(&live_strings);
  for (const auto& [id, text] : kStrings) strings.add(id, text);
  const std::vector<DumpRow> rows = device_rows();
  std::vector<MemEvent> live;
  append_events(rows.data(), rows.size(), strings, &live);
  const Recording rec = read_ok(compact);
  const std::vector<MemEvent> read(rec.events.end() - 1 - kPoolRows - kDeviceRows,
                                   rec.events.end() - 1 - kPoolRows);
  expect_same_events(read, rec.strings, live, live_strings);
}

// The pool rows as the text table spells them (msMemScope's PTA keys, memtap's pending and
// FREE_COMPLETED), and the compact view spelling them the same.
TEST_F(CompactRead, PoolRowsAreSpelledAsMsMemScopeAndTheViewAgrees) {
  const std::string columns =
      "SELECT Event, \"Event Type\", Name, \"Device Id\", Ptr, Attr, \"Call Stack(Python)\" "
      "FROM memscope_dump WHERE ID >= " +
      std::to_string(rich_rows().size() - 1 - kPoolRows) + " AND ID < " +
      std::to_string(rich_rows().size() - 1) + " ORDER BY ID";
  const test::Rows want = {
      {"MALLOC", "PTA", "aten::empty", "0", "0x00007f2000000000",
       R"({"allocation_id":"11","addr":"0x00007f2000000000","size":"512","owner":"optimizer",)"
       R"("total":"2097152","used":"512","stream":"85"})",
       kStrings[2].second},
      {"MALLOC", "PTA", "N/A", "1", "0x00007f3000000000",
       R"({"allocation_id":"12","addr":"0x00007f3000000000","size":"1024","used":"1024",)"
       R"("stream":"0"})",
       ""},
      {"SNAPSHOT", "PTA", "N/A", "1", "N/A", R"({"allocated":"1024","reserved":"4194304"})", ""},
      {"OOM_DETAIL", "OOM_TOP_ALLOC", "aten::empty", "0", "0x00007f2000000000",
       R"({"allocation_id":"11","addr":"0x00007f2000000000","size":"512","owner":"optimizer"})",
       kStrings[2].second},
      {"FREE", "PTA", "N/A", "0", "0x00007f2000000000",
       R"({"allocation_id":"11","addr":"0x00007f2000000000","size":"512","owner":"optimizer",)"
       R"("total":"2097152","used":"0","stream":"85"})",
       ""},
      {"FREE", "PTA", "N/A", "1", "0x00007f3000000000",
       R"({"allocation_id":"12","addr":"0x00007f3000000000","size":"1024","total":"4194304",)"
       R"("used":"0","pending":"1","stream":"7"})",
       ""},
      {"FREE_COMPLETED", "PTA", "N/A", "1", "0x00007f3000000000", R"({"size":"1024"})", ""},
  };
  EXPECT_EQ(test::Db(text).query(columns), want);
  EXPECT_EQ(test::Db(compact).query(columns), want);
}

// What the pool rows mean once read, from either form.
TEST_F(CompactRead, PoolRowsReadBackAsPoolEvents) {
  for (const std::string& path : {text, compact}) {
    SCOPED_TRACE(path);
    const Recording rec = read_ok(path);
    ASSERT_EQ(rec.events.size(), rich_rows().size());
    const MemEvent* e = &rec.events[rec.events.size() - 1 - kPoolRows];
    EXPECT_EQ(e[0].kind, MemEventKind::kMalloc);
    EXPECT_EQ(e[0].layer, Layer::kPta);
    EXPECT_EQ(e[0].device, 0);
    EXPECT_EQ(e[0].stream, 0x55u);
    EXPECT_EQ(e[0].pool_used, 512);
    EXPECT_EQ(e[0].pool_total, 2 << 20);
    EXPECT_EQ(rec.strings.get(e[0].owner), "optimizer");
    EXPECT_EQ(e[1].device, 1);
    EXPECT_EQ(e[1].pool_used, 1024);
    EXPECT_EQ(e[1].pool_total, kUnknown);
    EXPECT_EQ(e[2].kind, MemEventKind::kSnapshot);
    EXPECT_EQ(e[2].layer, Layer::kPta);
    EXPECT_EQ(e[2].device, 1);
    EXPECT_EQ(e[2].snap_allocated, 1024);
    EXPECT_EQ(e[2].snap_reserved, 4 << 20);
    EXPECT_EQ(e[2].snap_app_reserved, kUnknown);
    EXPECT_EQ(e[2].snap_total, kUnknown);
    EXPECT_EQ(e[3].kind, MemEventKind::kOomTopAlloc);
    EXPECT_EQ(e[4].kind, MemEventKind::kFree);
    EXPECT_EQ(e[4].layer, Layer::kPta);
    EXPECT_FALSE(e[4].free_pending);
    EXPECT_EQ(e[4].pool_used, 0);
    EXPECT_EQ(e[5].kind, MemEventKind::kFree);
    EXPECT_TRUE(e[5].free_pending);
    EXPECT_EQ(e[5].stream, 7u);
    EXPECT_EQ(e[6].kind, MemEventKind::kFreeCompleted);
    EXPECT_EQ(e[6].layer, Layer::kPta);
    EXPECT_EQ(e[6].device, 1);
    EXPECT_EQ(e[6].addr, 0x7f3000000000u);
    EXPECT_EQ(e[6].size_bytes, 1024u);
    EXPECT_EQ(e[6].allocation_id, 0u);
  }
}

// The live engine's events for the pool rows are the events read back from the recording.
TEST_F(CompactRead, PoolRowsGiveTheLiveEventsBack) {
  StringTable live_strings;
  RowStrings strings(&live_strings);
  for (const auto& [id, text] : kStrings) strings.add(id, text);
  const std::vector<DumpRow> rows = pool_rows();
  std::vector<MemEvent> live;
  append_events(rows.data(), rows.size(), strings, &live);
  for (const std::string& path : {text, compact, view}) {
    SCOPED_TRACE(path);
    const Recording rec = read_ok(path);
    const std::vector<MemEvent> read(rec.events.end() - 1 - kPoolRows, rec.events.end() - 1);
    expect_same_events(read, rec.strings, live, live_strings);
  }
}

TEST_F(CompactRead, UnknownCodesAreSkippedRowsNamedInTheWarning) {
  exec_sql(compact, "UPDATE memtap_event SET event = 10 WHERE ID = 4");
  const Recording rec = read_ok(compact);
  EXPECT_EQ(rec.rows_read, rich_rows().size());
  EXPECT_EQ(rec.rows_skipped, 1u);
  EXPECT_EQ(rec.events.size(), rich_rows().size() - 1);
  EXPECT_NE(rec.warning.find("ID 4: event 10"), std::string::npos) << rec.warning;
  EXPECT_NE(rec.warning.find(compact), std::string::npos) << rec.warning;
}

// A file made otherwise than memtap writes it may hold a thread number as text, which SQLite
// sorts after every integer, and may repeat one: the reader orders them itself. (Taking
// SQLite's order, it sized its index by the last number and wrote past the end.)
TEST_F(CompactRead, ThreadNumbersOutOfOrderOrRepeatedAreFoundAsNumbers) {
  exec_sql(compact,
           "CREATE TABLE kept AS SELECT * FROM memtap_thread; DROP TABLE memtap_thread; "
           "CREATE TABLE memtap_thread (thread, process_id INTEGER, thread_id INTEGER); "
           "INSERT INTO memtap_thread SELECT CASE WHEN thread = 0 THEN '0' ELSE thread END, "
           "process_id, thread_id FROM kept; "
           "INSERT INTO memtap_thread SELECT thread, 1, 1 FROM kept WHERE thread = 1; "
           "DROP TABLE kept");
  expect_same_recording(read_ok(text), read_ok(compact));
}

// Rows of two processes over several chunks, times rising with a few going back: among
// them one far into the file that is older than most rows before it.
std::vector<DumpRow> long_rows(size_t count) {
  std::vector<DumpRow> rows;
  for (size_t i = 0; i < count; ++i) {
    const uint32_t pid = i % 3 == 2 ? kChild : kPid;
    const uint64_t slot = i / 2;
    DumpRow r = block(i % 2 == 0 ? DumpEvent::kMalloc : DumpEvent::kFree, int64_t(i) * 1000,
                      0x5555a0000000 + slot * 64, 16 + slot % 512, slot + 1, slot % 7 == 0 ? 5 : 0,
                      kPid + uint32_t(i % 4));
    r.process_id = pid;
    if (i % 1000 == 999) r.timestamp_ns -= 500'000;  // a little late
    if (i == 5000) r.timestamp_ns = kStart + 1500;   // very late: its chunk's minimum
    rows.push_back(r);
  }
  return rows;
}

TEST(CompactReadRange, FiltersAsTheFullReadAndStopsAtTheChunks) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  constexpr size_t kRows = 5 * 4096 + 100;
  const std::vector<DumpRow> rows = long_rows(kRows);
  const std::string text = write(dir.file("text.db"), rows, false);
  const std::string compact = write(dir.file("compact.db"), rows, true);
  // As a live file may be: the last chunks not written yet, their rows covered by none.
  const std::string uncovered = dir.file("uncovered.db");
  std::filesystem::copy_file(compact, uncovered);
  exec_sql(uncovered, "DELETE FROM memtap_event_chunk WHERE first_id >= 3 * 4096");

  const Recording all = read_ok(text);
  ASSERT_EQ(all.events.size(), kRows);
  const int64_t mid = all.events[kRows / 3].ts_ns;
  for (const RecordingFilter& filter :
       {RecordingFilter{kPid, mid}, RecordingFilter{kChild, mid - 1},
        RecordingFilter{std::nullopt, kStart + 2000}, RecordingFilter{kChild, INT64_MAX},
        RecordingFilter{12345, INT64_MAX}, RecordingFilter{kPid, kStart - 1},
        RecordingFilter{std::nullopt, std::numeric_limits<int64_t>::min()}}) {
    std::vector<MemEvent> want;
    for (const MemEvent& e : all.events) {
      if (filter.passes(e)) want.push_back(e);
    }
    for (const std::string& path : {compact, uncovered}) {
      SCOPED_TRACE(path + " pid " + (filter.pid ? std::to_string(*filter.pid) : "any") + " max " +
                   std::to_string(filter.max_ts_ns));
      const Streamed got = stream(path, 100, &filter);
      expect_same_events(got.events, got.rec.strings, want, all.strings);
    }
  }
  // The chunks stop the scan after the last one that may hold a row at or before the
  // bound: a row made to break their promise further on is not visited; where no chunk
  // row covers it yet, it is.
  const RecordingFilter early{std::nullopt, kStart + 2000};
  EXPECT_EQ(stream(compact, 100, &early).events.size(), 4u);  // 0, 1000, 2000 and the late one
  for (const std::string& path : {compact, uncovered}) {
    exec_sql(path, "UPDATE memtap_event SET timestamp_offset_ns = 0 WHERE ID = 15000");
  }
  EXPECT_EQ(stream(compact, 100, &early).events.size(), 4u);
  EXPECT_EQ(stream(uncovered, 100, &early).events.size(), 5u);
}

}  // namespace
}  // namespace memtap
