// The store as the timeline's detail source: a range the window has forgotten comes back
// from the recording with exactly the points the series had (checked against a timeline
// whose window holds everything), for the curves, Group By Layer, Owner and Stream, on a
// finished file, on one still being written, and never at the price of a crash on a bad
// file. Also the reader's filtered stream the source is built on.
#include "monitor/store/detail/store_detail_source.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <deque>
#include <filesystem>
#include <fstream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include "monitor/store/memscope_schema.h"
#include "monitor/store/memscope_writer.h"
#include "monitor/store/reader/recording_reader.h"
#include "tests/unit/store/store_test_support.h"

namespace memtap {
namespace {

using test::TempDir;
using timeline::CurvePoint;
using timeline::CurveQuery;
using timeline::GroupBy;
using timeline::Resolution;
using timeline::SeriesId;
using timeline::SeriesInfo;
using timeline::SeriesKey;
using timeline::Timeline;
using timeline::TimelineConfig;

constexpr int64_t kStart = 1779862930000000000;  // ns since the epoch
constexpr int64_t kStep = 1000;

// One row of memscope_dump, as the columns hold it.
struct Row {
  std::string event;  // MALLOC, FREE, SNAPSHOT
  std::string type;   // HOST, HAL, PTA, SNAPSHOT
  int64_t ts = 0;     // in the file's unit
  uint32_t pid = 0;
  std::string device;  // "cpu", "0"
  uint64_t ptr = 0;
  std::string attr;
};

// A connection to a database with msMemScope's table, kept open so a test can write while
// the source reads (WAL).
class DumpDb {
 public:
  explicit DumpDb(const std::string& path, bool wal = false) {
    EXPECT_EQ(sqlite3_open(path.c_str(), &db_), SQLITE_OK) << path;
    if (wal) exec("PRAGMA journal_mode=WAL");
    exec(kCreateMemscopeDumpSql);
  }
  ~DumpDb() {
    sqlite3_finalize(insert_);
    sqlite3_close(db_);
  }
  DumpDb(const DumpDb&) = delete;
  DumpDb& operator=(const DumpDb&) = delete;

  void exec(const std::string& sql) {
    char* message = nullptr;
    const int rc = sqlite3_exec(db_, sql.c_str(), nullptr, nullptr, &message);
    EXPECT_EQ(rc, SQLITE_OK) << (message != nullptr ? message : "") << "\nin: " << sql;
    sqlite3_free(message);
  }
  // Inserts the rows in their own transaction, committed unless `commit` is false.
  void insert(const std::vector<Row>& rows, bool commit = true) {
    if (insert_ == nullptr) {
      ASSERT_EQ(sqlite3_prepare_v2(db_, kInsertMemscopeDumpSql, -1, &insert_, nullptr), SQLITE_OK);
    }
    exec("BEGIN");
    for (const Row& r : rows) {
      char ptr[32];
      std::snprintf(ptr, sizeof ptr, "0x%016llx", static_cast<unsigned long long>(r.ptr));
      const std::string values[] = {r.event, r.type, "N/A", r.device, ptr, r.attr, "", ""};
      sqlite3_bind_int64(insert_, 1, next_id_++);
      sqlite3_bind_text(insert_, 2, values[0].c_str(), -1, SQLITE_TRANSIENT);
      sqlite3_bind_text(insert_, 3, values[1].c_str(), -1, SQLITE_TRANSIENT);
      sqlite3_bind_text(insert_, 4, values[2].c_str(), -1, SQLITE_TRANSIENT);
      sqlite3_bind_int64(insert_, 5, r.ts);
      sqlite3_bind_int64(insert_, 6, r.pid);
      sqlite3_bind_int64(insert_, 7, r.pid);
      sqlite3_bind_text(insert_, 8, values[3].c_str(), -1, SQLITE_TRANSIENT);
      sqlite3_bind_text(insert_, 9, r.event == "SNAPSHOT" ? "N/A" : ptr, -1, SQLITE_TRANSIENT);
      sqlite3_bind_text(insert_, 10, values[5].c_str(), -1, SQLITE_TRANSIENT);
      sqlite3_bind_text(insert_, 11, "", -1, SQLITE_STATIC);
      sqlite3_bind_text(insert_, 12, "", -1, SQLITE_STATIC);
      ASSERT_EQ(sqlite3_step(insert_), SQLITE_DONE) << sqlite3_errmsg(db_);
      sqlite3_reset(insert_);
    }
    if (commit) exec("COMMIT");
  }
  void add_indexes() {
    exec(kCreateMemscopeDumpTimestampIndexSql);
    exec(kCreateMemscopeDumpPartialIndexesSql);
  }

 private:
  sqlite3* db_ = nullptr;
  sqlite3_stmt* insert_ = nullptr;
  int64_t next_id_ = 0;
};

// Runs `sql` in the database at `path` (created if need be).
void exec_sql(const std::string& path, const std::string& sql) {
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK) << path;
  char* message = nullptr;
  const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &message);
  EXPECT_EQ(rc, SQLITE_OK) << (message != nullptr ? message : "") << "\nin: " << sql;
  sqlite3_free(message);
  sqlite3_close(db);
}

void write_db(const std::string& path, const std::vector<Row>& rows, bool index = true) {
  DumpDb db(path);
  db.insert(rows);
  if (index) db.add_indexes();
}

std::string block_attr(uint64_t size, const std::string& extra = "") {
  return "{\"size\":\"" + std::to_string(size) + "\"" + extra + "}";
}

// A heap that fills and empties in waves of different heights, anonymous mappings now and
// then, RSS samples, and a second process interleaved with the first. Several events share
// a time, so "the point in force at t0" has ties to get right.
std::vector<Row> host_rows(size_t count, uint32_t pid, int64_t ts_div = 1) {
  std::vector<Row> rows;
  std::vector<std::pair<uint64_t, uint64_t>> heap[2];  // (address, size), newest last
  std::map<uint64_t, uint64_t> mapped[2];
  int64_t ts = kStart;
  for (size_t i = 0; i < count; ++i) {
    if (i % 7 != 0) ts += kStep;
    const uint32_t p = i % 3 == 2 ? pid + 1 : pid;
    const size_t wave = 64 + (i / 4096) % 5 * 48;
    Row r{"MALLOC", "HOST", ts / ts_div, p, "cpu", 0, ""};
    if (i % 997 == 0) {
      r = {"SNAPSHOT",
           "SNAPSHOT",
           ts / ts_div,
           p,
           "N/A",
           0,
           "{\"app_reserved\":\"" + std::to_string((1 << 24) + int64_t(i) * 64) + "\"}"};
    } else if (i % 211 == 0) {
      r.ptr = 0x7f0000000000 + (i % 4) * 0x100000;
      const bool unmap = mapped[p - pid].erase(r.ptr) != 0;
      if (!unmap) mapped[p - pid][r.ptr] = 1 << 20;
      r.event = unmap ? "FREE" : "MALLOC";
      r.attr = block_attr(1 << 20, ",\"kind\":\"mmap\"");
    } else if ((i / wave) % 2 == 0 || heap[p - pid].empty()) {
      r.ptr = 0x5555a0000000 + i * 64;
      const uint64_t size = 16 + (i * 37) % 4096;
      r.attr = block_attr(size);
      heap[p - pid].emplace_back(r.ptr, size);
    } else {
      r.event = "FREE";
      r.ptr = heap[p - pid].back().first;
      r.attr = block_attr(heap[p - pid].back().second);
      heap[p - pid].pop_back();
    }
    rows.push_back(r);
  }
  return rows;
}

// A device: driver segments first (HAL), then the framework's pool (PTA) handing out blocks
// to owners on streams, more segments now and then; and host heap events in between.
struct DeviceStream {
  static constexpr uint32_t kPid = 5150;
  static inline const std::string kOwners[] = {"model@encoder@layer0", "model@encoder@layer1",
                                               "model@decoder", "optimizer", "workspace"};
  std::vector<Row> rows;
  int64_t hal_end_ts = 0;  // the last driver-only moment
};

DeviceStream device_rows(size_t hal_events, size_t pta_events) {
  DeviceStream s;
  int64_t ts = kStart;
  uint64_t segments = 0;
  for (size_t i = 0; i < hal_events; ++i) {
    ts += kStep;
    const bool free = i % 3 == 2;
    const uint64_t addr = 0x120000000000 + (free ? i - 1 : i) * 0x200000;
    s.rows.push_back(
        {free ? "FREE" : "MALLOC", "HAL", ts, DeviceStream::kPid, "0", addr, block_attr(2 << 20)});
    if (free) {
      --segments;
    } else {
      ++segments;
    }
    if (i % 10 == 0) {
      s.rows.push_back({"MALLOC", "HOST", ts, DeviceStream::kPid, "cpu", 0x5555a0000000 + i * 64,
                        block_attr(100 + i)});
    }
  }
  s.hal_end_ts = ts;
  std::map<uint64_t, uint64_t> live;
  std::deque<std::pair<size_t, std::pair<uint64_t, uint64_t>>> completions;
  int64_t used = 0;
  int64_t total = int64_t(segments) * (2 << 20);
  for (size_t i = 0; i < pta_events; ++i) {
    ts += kStep;
    total = int64_t(segments) * (2 << 20) + int64_t(i % 17) * 4096;  // the pool breathes
    if (i % 50 == 49) {
      s.rows.push_back({"MALLOC", "HAL", ts, DeviceStream::kPid, "0", 0x130000000000 + i * 0x200000,
                        block_attr(2 << 20)});
      continue;
    }
    if (i % 10 == 5) {
      s.rows.push_back({"SNAPSHOT", "SNAPSHOT", ts, DeviceStream::kPid, "0", 0,
                        "{\"app_reserved\":\"" + std::to_string(total + int64_t(i) * 512) + "\"}"});
      continue;
    }
    // Every 13th free waits for another stream: Active keeps the block until its
    // FREE_COMPLETED, four events later.
    if (!completions.empty() && completions.front().first <= i) {
      s.rows.push_back({"FREE_COMPLETED", "PTA", ts, DeviceStream::kPid, "0",
                        completions.front().second.first,
                        block_attr(completions.front().second.second)});
      completions.pop_front();
      continue;
    }
    const bool grow = (i / 300) % 2 == 0 || live.empty();
    if (grow) {
      const uint64_t addr = 0x120000000000 + i * 512, size = 512 + (i * 131) % 65536;
      live[addr] = size;
      used += int64_t(size);
      const std::string& owner = DeviceStream::kOwners[(i / 7) % 5];
      s.rows.push_back(
          {"MALLOC", "PTA", ts, DeviceStream::kPid, "0", addr,
           block_attr(size, ",\"owner\":\"" + owner + "\",\"stream\":\"" + std::to_string(i % 3) +
                                "\",\"used\":\"" + std::to_string(used) + "\",\"total\":\"" +
                                std::to_string(total) + "\"")});
    } else {
      auto block = live.begin();
      std::advance(block, long(i % live.size()));
      used -= int64_t(block->second);
      const bool pending = i % 13 == 0;
      s.rows.push_back(
          {"FREE", "PTA", ts, DeviceStream::kPid, "0", block->first,
           block_attr(block->second, ",\"used\":\"" + std::to_string(used) + "\",\"total\":\"" +
                                         std::to_string(total) + "\"" +
                                         (pending ? ",\"pending\":\"1\"" : ""))});
      if (pending) completions.push_back({i + 4, {block->first, block->second}});
      live.erase(block);
    }
  }
  return s;
}

// Small windows, so that most of a stream of tens of thousands of events leaves them.
TimelineConfig small_config() {
  TimelineConfig c;
  c.curve_limits = {1024, {16, 64, 6}};
  c.group_limits = {256, {16, 64, 4}};
  c.max_groups = 3;  // five owners: two of them share the overflow series
  return c;
}

// The same, with windows that hold every point: the truth the source must reproduce.
TimelineConfig huge_config() {
  TimelineConfig c = small_config();
  c.curve_limits.window_points = 1u << 24;
  c.group_limits.window_points = 1u << 24;
  return c;
}

Recording read_all(const std::string& path) {
  Recording rec;
  std::string error;
  EXPECT_TRUE(read_recording(path, &rec, &error)) << error;
  return rec;
}

// The live timeline (small windows) and the reference (windows that hold everything), fed
// the recording's events as `memtap replay` would.
struct Timelines {
  std::string path;
  Recording rec;
  Timeline live{small_config()};
  Timeline reference{huge_config()};

  // `source`: the file the detail source reads, when not the one the events came from.
  explicit Timelines(const std::string& file, std::string source = "")
      : path(source.empty() ? file : source), rec(read_all(file)) {
    live.add(rec.events.data(), rec.events.size());
    reference.add(rec.events.data(), rec.events.size());
  }

  StoreDetailOptions options() const {
    StoreDetailOptions o;
    o.config = small_config();
    o.owner_label = [this](uint64_t owner) { return rec.strings.get(uint32_t(owner)); };
    return o;
  }

  // The points of `info` in [t0, t1] as the reference holds them must be what the store
  // gives, asked directly and, where the range has left the live window, through the live
  // timeline's points(). Returns whether it went through points() (the window had lost
  // the range); curves that change rarely keep all of a short stream in their window.
  bool expect_exact(const SeriesInfo& info, int64_t t0, int64_t t1) const {
    SCOPED_TRACE("series curve " + std::to_string(int(info.key.curve)) + " by " +
                 std::to_string(int(info.key.group_by)) + " group " +
                 std::to_string(info.key.group) + ", range [" + std::to_string(t0) + ", " +
                 std::to_string(t1) + "]");
    const SeriesId ref_id = reference.find(info.key);
    EXPECT_NE(ref_id, timeline::kNoSeries);
    if (ref_id == timeline::kNoSeries) return false;
    const CurveQuery want = reference.points(ref_id, t0, t1, SIZE_MAX);
    EXPECT_EQ(want.resolution, Resolution::kFull);
    EXPECT_FALSE(want.points.empty());

    std::vector<CurvePoint> direct;
    std::string error;
    EXPECT_TRUE(read_series_detail(path, info.key, t0, t1, options(), &direct, &error)) << error;
    expect_points(direct, want.points);
    if (live.data(info.id).window_covers(t0)) return false;
    const CurveQuery got = live.points(info.id, t0, t1, SIZE_MAX);
    EXPECT_TRUE(got.from_detail_source);
    EXPECT_EQ(got.resolution, Resolution::kFull);
    expect_points(got.points, want.points);
    return true;
  }

  static void expect_points(const std::vector<CurvePoint>& got,
                            const std::vector<CurvePoint>& want) {
    ASSERT_EQ(got.size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      EXPECT_EQ(got[i].ts_ns, want[i].ts_ns) << "point " << i;
      EXPECT_EQ(got[i].value_bytes, want[i].value_bytes) << "point " << i;
    }
  }
};

int64_t ts_of(const Recording& rec, size_t event) {
  return rec.events.at(event).ts_ns;
}

// memtap's own rows for a heap filling and emptying in waves of 1,000 blocks: every
// event changes Allocated.
std::vector<DumpRow> heap_dump_rows(size_t count, uint32_t pid) {
  std::vector<DumpRow> rows(count);
  for (size_t i = 0; i < count; ++i) {
    DumpRow& row = rows[i];
    const uint64_t k = i % 2000 < 1000 ? i % 2000 : 1999 - i % 2000;
    row.event = i % 2000 < 1000 ? DumpEvent::kMalloc : DumpEvent::kFree;
    row.timestamp_ns = kStart + int64_t(i) * kStep;
    row.process_id = pid;
    row.thread_id = pid;
    row.ptr = 0x5555a0000000 + k * 4096;
    row.size_bytes = 64 + k % 1024;
    row.allocation_id = i / 2000 * 1000 + k + 1;
  }
  return rows;
}

TEST(StoreDetailSource, OldRangesOfALongStreamComeBackAtFullResolution) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string path = dir.file("memscope_dump_20260101000000.db");
  write_db(path, host_rows(60'000, 4242));
  Timelines t(path);
  // Without a source the past is an envelope: the detail has left the window.
  const std::vector<SeriesInfo> curves = t.live.series(4242, kHostDevice, GroupBy::kOverall);
  ASSERT_EQ(curves.size(), 5u);
  EXPECT_EQ(
      t.live.points(curves[0].id, ts_of(t.rec, 3000), ts_of(t.rec, 5000), SIZE_MAX).resolution,
      Resolution::kEnvelope);

  t.live.set_detail_source(make_store_detail_source(path, t.options()));
  for (const SeriesInfo& info : curves) {
    const bool from_store = t.expect_exact(info, ts_of(t.rec, 3000), ts_of(t.rec, 5000));
    // Allocated, Reserved and Active (Allocated's series) change with every heap event.
    if (info.key.curve <= timeline::Curve::kActive) {
      EXPECT_TRUE(from_store);
    }
    t.expect_exact(info, kStart - 5, ts_of(t.rec, 40));  // before the first point
    // t0 on a time several events share: the last of them is the one in force.
    size_t tie = 7 * 1000;
    t.expect_exact(info, ts_of(t.rec, tie), ts_of(t.rec, tie + 300));
    t.expect_exact(info, ts_of(t.rec, 20'000) + 1, ts_of(t.rec, 20'000) + 1);  // an instant
  }
  // The second process's curves come from its own events only.
  for (const SeriesInfo& info : t.live.series(4243, kHostDevice, GroupBy::kOverall)) {
    t.expect_exact(info, ts_of(t.rec, 9000), ts_of(t.rec, 12'000));
  }
  EXPECT_TRUE(t.expect_exact(t.live.series(4243, kHostDevice, GroupBy::kOverall)[0],
                             ts_of(t.rec, 9000), ts_of(t.rec, 12'000)));
  for (const SeriesInfo& info : t.live.series(4242, kHostDevice, GroupBy::kLayer)) {
    t.expect_exact(info, ts_of(t.rec, 3000), ts_of(t.rec, 5000));
  }
}

// The chart's wide buckets: several series, several spans each (two meeting at one time),
// one replay; each span's answer is what read_series_detail gives for it alone, and one
// request over its limit fails alone.
TEST(StoreDetailSource, SpansOfSeveralSeriesComeFromOneReplay) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string path = dir.file("memscope_dump_20260101000000.db");
  write_db(path, host_rows(60'000, 4242));
  Timelines t(path);
  const std::vector<SeriesInfo> curves = t.live.series(4242, kHostDevice, GroupBy::kOverall);
  ASSERT_GE(curves.size(), 2u);
  const std::vector<SeriesSpan> spans = {{ts_of(t.rec, 100), ts_of(t.rec, 400)},
                                         {ts_of(t.rec, 400), ts_of(t.rec, 900)},
                                         {ts_of(t.rec, 30'000), ts_of(t.rec, 30'050)}};
  std::vector<SeriesSpans> requests = {
      {curves[0].key, spans, 0}, {curves[1].key, {spans[2]}, 0}, {curves[1].key, {spans[0]}, 10}};
  std::vector<SpansAnswer> answers;
  std::string error;
  ASSERT_TRUE(read_series_spans(path, requests, t.options(), &answers, &error)) << error;
  ASSERT_EQ(answers.size(), 3u);
  for (size_t r = 0; r < 2; ++r) {
    ASSERT_TRUE(answers[r].ok) << answers[r].error;
    ASSERT_EQ(answers[r].points.size(), requests[r].spans.size());
    for (size_t i = 0; i < requests[r].spans.size(); ++i) {
      std::vector<CurvePoint> alone;
      const SeriesSpan& span = requests[r].spans[i];
      ASSERT_TRUE(read_series_detail(path, requests[r].key, span.t0_ns, span.t1_ns, t.options(),
                                     &alone, &error))
          << error;
      SCOPED_TRACE("request " + std::to_string(r) + " span " + std::to_string(i));
      Timelines::expect_points(answers[r].points[i], alone);
    }
  }
  EXPECT_FALSE(answers[2].ok);
  EXPECT_NE(answers[2].error.find("more than 10 points"), std::string::npos) << answers[2].error;

  // Spans out of order, and another process in the same replay, are refused.
  EXPECT_FALSE(read_series_spans(path, {{curves[0].key, {spans[1], spans[0]}, 0}}, t.options(),
                                 &answers, &error));
  EXPECT_NE(error.find("after the span before it"), std::string::npos) << error;
  timeline::SeriesKey other = curves[0].key;
  other.pid = 4243;
  EXPECT_FALSE(read_series_spans(path, {{curves[0].key, {spans[0]}, 0}, {other, {spans[0]}, 0}},
                                 t.options(), &answers, &error));
  EXPECT_NE(error.find("process and device"), std::string::npos) << error;
}

TEST(StoreDetailSource, MicrosecondFilesAreBoundedInTheirOwnUnit) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  // msMemScope's 2025-04 files: the Timestamp(ns) column holds microseconds.
  const std::string path = dir.file("memscope_dump_20250428113810.db");
  write_db(path, host_rows(20'000, 77, 1000));
  Timelines t(path);
  ASSERT_EQ(ts_of(t.rec, 0) % 1000, 0);
  t.live.set_detail_source(make_store_detail_source(path, t.options()));
  for (const SeriesInfo& info : t.live.series(77, kHostDevice, GroupBy::kOverall)) {
    // t1 between two whole microseconds: the last one at or before it is still in.
    const bool from_store = t.expect_exact(info, ts_of(t.rec, 1000) + 1, ts_of(t.rec, 3000) + 999);
    if (info.key.curve == timeline::Curve::kAllocated) {
      EXPECT_TRUE(from_store);
    }
    t.expect_exact(info, ts_of(t.rec, 1000) - 1, ts_of(t.rec, 3000) - 1);
  }
}

TEST(StoreDetailSource, GroupByLayerOwnerAndStreamAndAllocatedBeforeTheFramework) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string path = dir.file("memscope_dump_20260101000001.db");
  // 300 driver events (fewer than the window's 1,024 points: the framework's first block
  // later rewrites Allocated to 0 over them), then 30,000 events of the pool.
  const DeviceStream stream = device_rows(300, 30'000);
  write_db(path, stream.rows);
  Timelines t(path);
  t.live.set_detail_source(make_store_detail_source(path, t.options()));
  const uint32_t pid = DeviceStream::kPid;

  // Frees pending on another stream made Active a series of its own.
  ASSERT_NE(t.live.find({pid, 0, timeline::Curve::kActive}),
            t.live.find({pid, 0, timeline::Curve::kAllocated}));

  // Driver-only time: Allocated was rewritten to 0 there; the rest are as they were.
  const int64_t hal_t0 = kStart + 50 * kStep, hal_t1 = stream.hal_end_ts;
  const std::vector<SeriesInfo> curves = t.live.series(pid, 0, GroupBy::kOverall);
  for (const SeriesInfo& info : curves) EXPECT_TRUE(t.expect_exact(info, hal_t0, hal_t1));
  const CurveQuery allocated = t.live.points(curves[0].id, hal_t0, hal_t1, SIZE_MAX);
  ASSERT_EQ(allocated.points.size(), 1u);
  EXPECT_EQ(allocated.points[0].value_bytes, 0);

  const int64_t t0 = hal_t1 + 2000 * kStep, t1 = hal_t1 + 6000 * kStep;
  for (const SeriesInfo& info : curves) EXPECT_TRUE(t.expect_exact(info, t0, t1));
  const std::vector<SeriesInfo> layers = t.live.series(pid, 0, GroupBy::kLayer);
  ASSERT_EQ(layers.size(), 2u);  // HAL and PTA
  for (const SeriesInfo& info : layers) EXPECT_TRUE(t.expect_exact(info, t0, t1));
  const std::vector<SeriesInfo> owners = t.live.series(pid, 0, GroupBy::kOwner);
  ASSERT_EQ(owners.size(), 4u);  // three owners and the overflow series
  EXPECT_EQ(owners.back().key.group, timeline::kOverflowGroup);
  for (const SeriesInfo& info : owners) EXPECT_TRUE(t.expect_exact(info, t0, t1));
  const std::vector<SeriesInfo> streams = t.live.series(pid, 0, GroupBy::kStream);
  ASSERT_EQ(streams.size(), 3u);
  for (const SeriesInfo& info : streams) EXPECT_TRUE(t.expect_exact(info, t0, t1));

  // Without the live labels an owner's id means nothing in the file: the pyramid answers.
  StoreDetailOptions no_labels = t.options();
  no_labels.owner_label = nullptr;
  t.live.set_detail_source(make_store_detail_source(path, no_labels));
  EXPECT_EQ(t.live.points(owners[0].id, t0, t1, SIZE_MAX).resolution, Resolution::kEnvelope);
  t.expect_exact(layers[0], t0, t1);
}

// Whatever is wrong with the file, the answer is false and the pyramid's envelope.
TEST(StoreDetailSource, BadFilesLeaveThePyramidToAnswer) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string good = dir.file("memscope_dump_20260101000002.db");
  write_db(good, host_rows(30'000, 4242));
  Timelines t(good);
  const SeriesInfo allocated = t.live.series(4242, kHostDevice, GroupBy::kOverall)[0];
  const int64_t t0 = ts_of(t.rec, 3000), t1 = ts_of(t.rec, 5000);

  const std::uintmax_t size = std::filesystem::file_size(good);
  std::ifstream in(good, std::ios::binary);
  std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  ASSERT_EQ(bytes.size(), size);
  auto write = [&](const std::string& name, const std::string& content) {
    std::ofstream(dir.file(name), std::ios::binary) << content;
    return dir.file(name);
  };
  std::string scribbled = bytes;  // every page after the first two overwritten
  for (size_t i = 8192; i < scribbled.size(); ++i) scribbled[i] = char(i * 131 % 251);
  const std::string other_table = dir.file("other.db");
  exec_sql(other_table, "CREATE TABLE t (x INTEGER); INSERT INTO t VALUES (1);");
  std::filesystem::create_directory(dir.file("a_directory.db"));

  const std::vector<std::string> bad = {
      dir.file("missing.db"),
      write("empty.db", ""),
      write("text.db", "this is not a recording\n"),
      write("truncated.db", bytes.substr(0, size / 2)),
      write("header_only.db", bytes.substr(0, 100)),
      write("scribbled.db", scribbled),
      other_table,
      dir.file("a_directory.db"),
  };
  for (const std::string& path : bad) {
    SCOPED_TRACE(path);
    std::vector<CurvePoint> out;
    std::string error;
    EXPECT_FALSE(read_series_detail(path, allocated.key, t0, t1, t.options(), &out, &error));
    EXPECT_NE(error.find(path), std::string::npos) << error;
    t.live.set_detail_source(make_store_detail_source(path, t.options()));
    const CurveQuery q = t.live.points(allocated.id, t0, t1, 100);
    EXPECT_FALSE(q.from_detail_source);
    EXPECT_EQ(q.resolution, Resolution::kEnvelope);
    EXPECT_FALSE(q.envelope.empty());
  }

  // A good file without the series: another process, a device it never used.
  std::vector<CurvePoint> out;
  std::string error;
  SeriesKey key = allocated.key;
  key.pid = 999;
  EXPECT_FALSE(read_series_detail(good, key, t0, t1, t.options(), &out, &error));
  key = allocated.key;
  key.device = 3;
  EXPECT_FALSE(read_series_detail(good, key, t0, t1, t.options(), &out, &error));
  // A range that ends before the series began.
  EXPECT_FALSE(
      read_series_detail(good, allocated.key, kStart - 100, kStart - 1, t.options(), &out, &error));
  // More points than allowed: left to the pyramid rather than held.
  StoreDetailOptions small = t.options();
  small.max_points = 100;
  EXPECT_FALSE(read_series_detail(good, allocated.key, t0, t1, small, &out, &error));
  EXPECT_NE(error.find("more than 100 points"), std::string::npos) << error;
}

// A recording still being written: WAL, no index yet, a transaction open. Committed rows
// are what the reader sees, and are enough to answer.
TEST(StoreDetailSource, ALiveRecordingAnswersFromItsCommittedRows) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string path = dir.file("memscope_dump_20260101000003.db");
  const std::vector<Row> rows = host_rows(40'000, 4242);
  DumpDb writer(path, /*wal=*/true);
  writer.insert({rows.begin(), rows.begin() + 30'000});
  // Later rows written but not committed: invisible to readers, and not needed.
  writer.insert({rows.begin() + 30'000, rows.end()}, /*commit=*/false);
  ASSERT_TRUE(std::filesystem::exists(path + "-wal"));

  Timelines t(path);  // what a monitor replaying the committed rows holds
  ASSERT_EQ(t.rec.events.size(), 30'000u);
  t.live.set_detail_source(make_store_detail_source(path, t.options()));
  for (const SeriesInfo& info : t.live.series(4242, kHostDevice, GroupBy::kOverall)) {
    const bool from_store = t.expect_exact(info, ts_of(t.rec, 2000), ts_of(t.rec, 6000));
    if (info.key.curve == timeline::Curve::kAllocated) {
      EXPECT_TRUE(from_store);
    }
  }
}

// The same through memtap's own writer: `<path>.partial` while the run goes on, found from
// the final path the monitor knows.
TEST(StoreDetailSource, ALiveMemtapWriterPartialFile) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string path = dir.file("memscope_dump_20260101000004.db");
  constexpr size_t kRows = 20'000;
  const std::vector<DumpRow> rows = heap_dump_rows(kRows, 31337);
  std::string error;
  MemscopeWriterOptions options;
  options.rows_per_transaction = kRows;  // one commit once every row is in
  options.commit_interval_ms = 60'000;
  auto writer = MemscopeWriter::create(path, options, &error);
  ASSERT_NE(writer, nullptr) << error;
  writer->append(rows.data(), rows.size());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (writer->rows_written() < kRows && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::yield();  // the writer's thread commits as soon as the rows are in
  }
  ASSERT_EQ(writer->rows_written(), kRows);
  ASSERT_FALSE(std::filesystem::exists(path));
  ASSERT_TRUE(std::filesystem::exists(path + ".partial"));

  Timelines t(path + ".partial", path);
  ASSERT_EQ(t.rec.events.size(), kRows);
  t.live.set_detail_source(make_store_detail_source(path, t.options()));
  for (const SeriesInfo& info : t.live.series(31337, kHostDevice, GroupBy::kOverall)) {
    const bool from_store = t.expect_exact(info, ts_of(t.rec, 1000), ts_of(t.rec, 4000));
    if (info.key.curve == timeline::Curve::kAllocated) {
      EXPECT_TRUE(from_store);
    }
  }
}

// The same with the compact tables (MemscopeWriterOptions::compact), read from memtap_event's
// integers with the filter in the query: while the run goes on and once it is finished, the
// source answers exactly as the timeline fed the same rows from a text file.
TEST(StoreDetailSource, ALiveCompactWriterPartialFile) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string path = dir.file("memscope_dump_20260101000006.db");
  const std::string text = dir.file("memscope_dump_20260101000007.db");
  constexpr size_t kRows = 20'000;
  const std::vector<DumpRow> rows = heap_dump_rows(kRows, 31338);
  std::string error;
  {
    auto text_writer = MemscopeWriter::create(text, &error);
    ASSERT_NE(text_writer, nullptr) << error;
    text_writer->append(rows.data(), rows.size());
    ASSERT_TRUE(text_writer->finish({}, {}, &error)) << error;
  }
  MemscopeWriterOptions options;
  options.compact = true;
  options.rows_per_transaction = kRows;  // one commit once every row is in
  options.commit_interval_ms = 60'000;
  auto writer = MemscopeWriter::create(path, options, &error);
  ASSERT_NE(writer, nullptr) << error;
  writer->append(rows.data(), rows.size());
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (writer->rows_written() < kRows && std::chrono::steady_clock::now() < deadline) {
    std::this_thread::yield();  // the writer's thread commits as soon as the rows are in
  }
  ASSERT_EQ(writer->rows_written(), kRows);
  ASSERT_TRUE(std::filesystem::exists(path + ".partial"));

  Timelines t(text, path);  // the events from the text file, the detail from the compact one
  ASSERT_EQ(t.rec.events.size(), kRows);
  t.live.set_detail_source(make_store_detail_source(path, t.options()));
  const std::vector<SeriesInfo> series = t.live.series(31338, kHostDevice, GroupBy::kOverall);
  ASSERT_FALSE(series.empty());
  for (const bool finished : {false, true}) {
    SCOPED_TRACE(finished ? "finished" : "live");
    if (finished) {
      ASSERT_TRUE(writer->finish({}, {}, &error)) << error;
      ASSERT_TRUE(std::filesystem::exists(path));
    }
    for (const SeriesInfo& info : series) {
      const bool from_store = t.expect_exact(info, ts_of(t.rec, 1000), ts_of(t.rec, 4000));
      if (info.key.curve == timeline::Curve::kAllocated) {
        EXPECT_TRUE(from_store);
      }
    }
  }
}

// The reader's filtered stream: the events stream_recording gives, less those filtered
// out, whether SQL can filter (INTEGER columns, with or without the index) or not (a
// table declared without types).
TEST(ReaderRange, DeliversWhatStreamRecordingWouldLessTheFilteredOut) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::vector<Row> rows = host_rows(5000, 10);
  const std::string indexed = dir.file("indexed.db"), plain = dir.file("plain.db"),
                    untyped = dir.file("untyped.db");
  write_db(indexed, rows);
  write_db(plain, rows, /*index=*/false);
  {
    DumpDb db(untyped);
    db.exec("DROP TABLE memscope_dump");
    db.exec(
        "CREATE TABLE memscope_dump (ID, Event, \"Event Type\", Name, \"Timestamp(ns)\", "
        "\"Process Id\", \"Thread Id\", \"Device Id\", Ptr, Attr, \"Call Stack(Python)\", "
        "\"Call Stack(C)\")");
    db.insert(rows);
  }
  auto stream = [](const std::string& path, const RecordingFilter* filter) {
    std::vector<MemEvent> events;
    Recording rec;
    std::string error;
    auto take = [&](std::span<const MemEvent> batch) {
      events.insert(events.end(), batch.begin(), batch.end());
      return true;
    };
    const bool ok = filter != nullptr
                        ? stream_recording_range(path, *filter, 100, &rec, take, &error)
                        : stream_recording(path, 100, &rec, take, &error);
    EXPECT_TRUE(ok) << error;
    return events;
  };
  const std::vector<MemEvent> all = stream(indexed, nullptr);
  ASSERT_EQ(all.size(), rows.size());
  const int64_t max_ts = all[3000].ts_ns;
  for (const RecordingFilter& filter :
       {RecordingFilter{10, max_ts}, RecordingFilter{11, max_ts - 1},
        RecordingFilter{std::nullopt, max_ts}, RecordingFilter{10, INT64_MAX},
        RecordingFilter{12, INT64_MAX}, RecordingFilter{10, kStart - 1}}) {
    std::vector<MemEvent> want;
    for (const MemEvent& e : all) {
      if (filter.passes(e)) want.push_back(e);
    }
    for (const std::string& path : {indexed, plain, untyped}) {
      SCOPED_TRACE(path + " pid " + (filter.pid ? std::to_string(*filter.pid) : "any") + " max " +
                   std::to_string(filter.max_ts_ns));
      const std::vector<MemEvent> got = stream(path, &filter);
      ASSERT_EQ(got.size(), want.size());
      for (size_t i = 0; i < got.size(); ++i) {
        EXPECT_EQ(got[i].ts_ns, want[i].ts_ns) << i;
        EXPECT_EQ(got[i].pid, want[i].pid) << i;
        EXPECT_EQ(got[i].addr, want[i].addr) << i;
        EXPECT_EQ(got[i].size_bytes, want[i].size_bytes) << i;
      }
    }
  }
}

// Names and stacks can be left unread: the events are otherwise the same.
TEST(ReaderRange, NamesAndStacksCanBeLeftUnread) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string path = dir.file("stacks.db");
  write_db(path, host_rows(2000, 10));
  exec_sql(path,
           "UPDATE memscope_dump SET Name = 'aten::empty', \"Call Stack(Python)\" = "
           "'train.py(12): step', \"Call Stack(C)\" = 'libc.so(malloc+0x10) [0x1]'");
  auto stream = [&](bool skip) {
    std::vector<MemEvent> events;
    Recording rec;
    std::string error;
    RecordingFilter filter;
    filter.skip_names_and_stacks = skip;
    EXPECT_TRUE(stream_recording_range(
        path, filter, 512, &rec,
        [&](std::span<const MemEvent> batch) {
          events.insert(events.end(), batch.begin(), batch.end());
          return true;
        },
        &error))
        << error;
    return events;
  };
  const std::vector<MemEvent> full = stream(false), lean = stream(true);
  ASSERT_EQ(full.size(), lean.size());
  ASSERT_FALSE(full.empty());
  EXPECT_NE(full[0].name, 0u);
  EXPECT_NE(full[0].stack_python, 0u);
  for (size_t i = 0; i < full.size(); ++i) {
    EXPECT_EQ(lean[i].name, 0u);
    EXPECT_EQ(lean[i].stack_python, 0u);
    EXPECT_EQ(lean[i].stack_c, 0u);
    EXPECT_EQ(lean[i].ts_ns, full[i].ts_ns);
    EXPECT_EQ(lean[i].size_bytes, full[i].size_bytes);
    EXPECT_EQ(lean[i].addr, full[i].addr);
  }
}

// The cost the header states: one query replays the process's events up to t1. Printed,
// never asserted. MEMTAP_DETAIL_COST_EVENTS sets the file's size (default 200,000).
TEST(StoreDetailSource, QueryCost) {
  const char* text = std::getenv("MEMTAP_DETAIL_COST_EVENTS");
  const size_t count = text != nullptr ? std::strtoull(text, nullptr, 10) : 200'000;
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string path = dir.file("memscope_dump_20260101000005.db");
  const std::vector<DumpRow> rows = heap_dump_rows(count, 2024);
  std::string error;
  auto writer = MemscopeWriter::create(path, &error);
  ASSERT_NE(writer, nullptr) << error;
  writer->append(rows.data(), rows.size());
  ASSERT_TRUE(writer->finish({}, {}, &error)) << error;
  // The same rows as a live file has them: no timestamp index yet.
  const std::string unindexed = dir.file("unindexed.db");
  std::filesystem::copy_file(path, unindexed);
  exec_sql(unindexed, "DROP INDEX idx_memscope_dump_timestamp");

  StoreDetailOptions options;
  options.config = small_config();
  const SeriesKey key{2024, kHostDevice, timeline::Curve::kAllocated};
  for (const std::string& file : {path, unindexed}) {
    for (double at : {0.0, 0.5, 1.0}) {
      const size_t last = std::min(count - 1, size_t(double(count) * at) + 999);
      const int64_t t1 = kStart + int64_t(last) * kStep, t0 = t1 - 999 * kStep;
      std::vector<CurvePoint> out;
      const auto start = std::chrono::steady_clock::now();
      EXPECT_TRUE(read_series_detail(file, key, t0, t1, options, &out, &error)) << error;
      const double s =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      EXPECT_EQ(out.size(), 1000u);
      std::printf("[ detail cost ] %s, %zu events: 1,000 points ending at event %zu: %.3f s\n",
                  file == path ? "indexed" : "no index", count, last, s);
    }
  }
}

}  // namespace
}  // namespace memtap
