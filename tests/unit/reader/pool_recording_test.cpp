// The framework pool (PTA) end to end inside the monitor: wire messages through a Session,
// its rows written by the real writer as msMemScope's text table and in the compact form, and
// read back. The events read from either file are the events the live analyses get from the
// same rows (row_events.h): a replay and the live run see the same pool.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "monitor/engine/row_events.h"
#include "monitor/store/memscope_writer.h"
#include "tests/unit/engine/session_support.h"
#include "tests/unit/reader/reader_test_support.h"

namespace memtap {
namespace {

using namespace session_test;  // NOLINT: the session tests' wire builders

std::vector<Ev> block_event(uint64_t ts, Kind kind, uint16_t device, uint64_t addr,
                            uint64_t size = 0, uint64_t stream = 0) {
  return {{ts, Kind::DEVICE_STREAM, stream, 0, 0, device}, {ts + 1, kind, addr, size, 0, device}};
}

std::vector<Ev> cat(std::initializer_list<std::vector<Ev>> parts) {
  std::vector<Ev> all;
  for (const auto& part : parts) all.insert(all.end(), part.begin(), part.end());
  return all;
}

struct Live {
  std::vector<DumpRow> rows;
  std::vector<std::string> strings{""};
};

// A training step's pool on two devices: tensors inside an operator with an owner and a
// stack, a FREE folded (also across two batches), one pending on another stream and its
// completion, the pool's state, and an OOM listing the live tensors.
Live session_rows() {
  Live live;
  Session session([&](const DumpRow* r, size_t n) { live.rows.insert(live.rows.end(), r, r + n); },
                  [&](uint32_t, std::string_view text) { live.strings.emplace_back(text); });
  const Strings strings = {
      {1, "aten::empty"}, {2, "model@layer1"}, {3, "train.py(9): step"}, {4, "cudaMalloc"}};
  const std::vector<Ev> first =
      cat({{{2000, Kind::DEVICE_MALLOC, 0x7f0000000000, 2 << 20, 4, 0},
            {2001, Kind::POOL_STATE, 0, 2 << 20, 0, 0},
            {2002, Kind::OWNER_PUSH, 0, 0, 2},
            {2003, Kind::OP_START, 0, 0, 1},
            {2004, Kind::PYTHON_STACK, 0, 0, 3}},
           block_event(2010, Kind::POOL_MALLOC, 0, 0x7f0000000000, 512, 0x55),
           block_event(2020, Kind::POOL_MALLOC, 0, 0x7f0000000200, 1024),
           block_event(2030, Kind::POOL_MALLOC, 1, 0x7f1000000000, 4096),
           {{2035, Kind::OP_END, 0, 0, 1}, {2036, Kind::DEVICE_OOM, 0, 8 << 20, 4, 0}},
           block_event(2040, Kind::POOL_FREE, 0, 0x7f0000000000, 0, 0x55),
           block_event(2042, Kind::POOL_FREE_COMPLETED, 0, 0x7f0000000000, 0, 0x55),
           block_event(2050, Kind::POOL_FREE, 0, 0x7f0000000200),
           block_event(2070, Kind::POOL_FREE, 1, 0x7f1000000000)});  // the batch ends here
  const std::vector<Ev> second =
      cat({block_event(2080, Kind::POOL_FREE_COMPLETED, 1, 0x7f1000000000),
           {{2089, Kind::POOL_PEAKS, 8 << 20, 16 << 20, 0, 1},  // memtap.step()'s sample
            {2090, Kind::POOL_STATE, 0, 4 << 20, 0, 1}},
           block_event(2100, Kind::POOL_FREE_COMPLETED, 0, 0x7f0000000200, 0, 9)});
  for (const Bytes& m :
       {hello(kPid, kInst), batch_with(kPid, kInst, 1, 2075, strings, {{7, first}}),
        batch(kPid, kInst, 2, kFar, {{7, second}}), bye(kPid, kInst, 3, 2200)}) {
    const IngestResult r = session.ingest(m.data(), m.size());
    EXPECT_TRUE(r.ok) << r.error;
  }
  session.finish();
  return live;
}

std::string write(const std::string& path, const Live& live, bool compact) {
  MemscopeWriterOptions options;
  options.compact = compact;
  std::string error;
  auto writer = MemscopeWriter::create(path, options, &error);
  if (writer == nullptr) {
    ADD_FAILURE() << error;
    return path;
  }
  for (uint32_t id = 1; id < live.strings.size(); ++id) writer->define_string(id, live.strings[id]);
  writer->append(live.rows.data(), live.rows.size());
  if (!writer->finish({}, {}, &error)) ADD_FAILURE() << error;
  return path;
}

void expect_same(const MemEvent& a, const StringTable& sa, const MemEvent& b,
                 const StringTable& sb) {
  EXPECT_EQ(a.ts_ns, b.ts_ns);
  EXPECT_EQ(a.pid, b.pid);
  EXPECT_EQ(a.tid, b.tid);
  EXPECT_EQ(a.device, b.device);
  EXPECT_EQ(a.kind, b.kind);
  EXPECT_EQ(a.layer, b.layer);
  EXPECT_EQ(a.addr, b.addr);
  EXPECT_EQ(a.size_bytes, b.size_bytes);
  EXPECT_EQ(a.allocation_id, b.allocation_id);
  EXPECT_EQ(sa.get(a.name), sb.get(b.name));
  EXPECT_EQ(sa.get(a.owner), sb.get(b.owner));
  EXPECT_EQ(sa.get(a.stack_python), sb.get(b.stack_python));
  EXPECT_EQ(a.stream, b.stream);
  EXPECT_EQ(a.free_pending, b.free_pending);
  EXPECT_EQ(a.pool_used, b.pool_used);
  EXPECT_EQ(a.pool_total, b.pool_total);
  EXPECT_EQ(a.snap_allocated, b.snap_allocated);
  EXPECT_EQ(a.snap_reserved, b.snap_reserved);
  EXPECT_EQ(a.snap_max_allocated, b.snap_max_allocated);
  EXPECT_EQ(a.snap_max_reserved, b.snap_max_reserved);
  EXPECT_EQ(a.snap_app_reserved, b.snap_app_reserved);
  EXPECT_EQ(a.snap_total, b.snap_total);
}

TEST(PoolRecording, TheFileGivesTheEventsTheLiveRowsGive) {
  const Live live = session_rows();
  StringTable live_strings;
  RowStrings strings(&live_strings);
  for (uint32_t id = 0; id < live.strings.size(); ++id) strings.add(id, live.strings[id]);
  std::vector<MemEvent> want;
  append_events(live.rows.data(), live.rows.size(), strings, &want);
  // What the session made of it, in short: the pool's rows are all there.
  size_t pending = 0, completed = 0, pool_snapshots = 0, tops = 0;
  std::vector<std::pair<int64_t, int64_t>> peaks;
  for (const MemEvent& e : want) {
    pending += e.free_pending;
    completed += e.kind == MemEventKind::kFreeCompleted;
    pool_snapshots += e.kind == MemEventKind::kSnapshot && e.layer == Layer::kPta;
    tops += e.kind == MemEventKind::kOomTopAlloc;
    if (e.kind == MemEventKind::kSnapshot && e.layer == Layer::kPta)
      peaks.emplace_back(e.snap_max_allocated, e.snap_max_reserved);
  }
  EXPECT_EQ(pending, 1u);  // the other two FREEs folded their completions
  EXPECT_EQ(completed, 1u);
  EXPECT_EQ(pool_snapshots, 2u);
  // The sampled state's peaks; the first state came without any.
  EXPECT_EQ(peaks,
            (std::vector<std::pair<int64_t, int64_t>>{{kUnknown, kUnknown}, {8 << 20, 16 << 20}}));
  EXPECT_EQ(tops, 2u);  // device 0's two live tensors, not its segment

  test::TempDir dir;
  ASSERT_TRUE(dir.ok());
  for (const bool compact : {false, true}) {
    SCOPED_TRACE(compact ? "compact" : "text");
    const std::string path =
        write(dir.file(compact ? "memscope_dump_2.db" : "memscope_dump_1.db"), live, compact);
    // msMemScope's SNAPSHOT keys, the peaks after allocated and reserved, in either form.
    EXPECT_EQ(test::Db(path).query("SELECT Attr FROM memscope_dump WHERE Event = 'SNAPSHOT' "
                                   "AND \"Event Type\" = 'PTA' ORDER BY ID"),
              (test::Rows{{R"({"allocated":"0","reserved":"2097152"})"},
                          {R"({"allocated":"0","reserved":"4194304","max_allocated":"8388608",)"
                           R"("max_reserved":"16777216"})"}}));
    const Recording rec = test::read_ok(path);
    EXPECT_EQ(rec.rows_skipped, 0u) << rec.warning;
    ASSERT_EQ(rec.events.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      SCOPED_TRACE("event " + std::to_string(i));
      expect_same(rec.events[i], rec.strings, want[i], live_strings);
    }
  }
}

}  // namespace
}  // namespace memtap
