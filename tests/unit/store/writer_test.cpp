// MemscopeWriter against real database files: the schema and text are msMemScope's, IDs
// follow append order, memtap's tables hold the session, and the file only appears under
// its final name once finish() succeeded.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <thread>
#include <vector>

#include "monitor/store/memscope_schema.h"
#include "monitor/store/memscope_writer.h"
#include "tests/unit/store/store_test_support.h"

namespace memtap {
namespace {

using test::Db;
using test::exists;
using test::Rows;
using test::TempDir;

const std::string kSampleDb =
    std::string(MEMTAP_SHARED_DATA_DIR) + "/msmemscope/msinsight__memscope_dump_20260527062213.db";

const char* const kAllColumns =
    R"sql(SELECT ID, Event, "Event Type", Name, "Timestamp(ns)", "Process Id", "Thread Id", )sql"
    R"sql("Device Id", Ptr, Attr, "Call Stack(Python)", "Call Stack(C)" FROM memscope_dump)sql";

DumpRow system_row(DumpEventType type, int64_t ts, uint32_t pid) {
  DumpRow row;
  row.event = DumpEvent::kSystem;
  row.event_type = type;
  row.timestamp_ns = ts;
  row.process_id = pid;
  row.thread_id = pid;
  return row;
}

DumpRow memory_row(DumpEvent event, int64_t ts, uint32_t pid, uint32_t tid, uint64_t ptr,
                   uint64_t size, uint64_t allocation_id) {
  DumpRow row;
  row.event = event;
  row.event_type = DumpEventType::kHost;
  row.timestamp_ns = ts;
  row.process_id = pid;
  row.thread_id = tid;
  row.ptr = ptr;
  row.size_bytes = size;
  row.allocation_id = allocation_id;
  return row;
}

// Writes rows (in one append per entry of `appends`) and finishes; returns the final path.
std::string write_recording(const TempDir& dir, const std::vector<std::vector<DumpRow>>& appends,
                            const std::vector<ProcessInfo>& processes = {},
                            const std::vector<std::pair<std::string, std::string>>& meta = {},
                            MemscopeWriterOptions options = {}) {
  const std::string path = dir.file("memscope_dump_20260101000000.db");
  std::string error;
  auto writer = MemscopeWriter::create(path, options, &error);
  if (writer == nullptr) {
    ADD_FAILURE() << error;
    return path;
  }
  for (const auto& rows : appends) writer->append(rows.data(), rows.size());
  if (!writer->finish(processes, meta, &error)) ADD_FAILURE() << error;
  return path;
}

// The tests of what a file holds run on both storage forms: msMemScope's text table and the
// compact integer tables with memscope_dump a view (MemscopeWriterOptions::compact). Both
// must read back the same text, so the expected rows are written once.
class WriterForms : public ::testing::TestWithParam<bool> {
 protected:
  MemscopeWriterOptions form() const {
    MemscopeWriterOptions options;
    options.compact = GetParam();
    return options;
  }
};

INSTANTIATE_TEST_SUITE_P(Storage, WriterForms, ::testing::Values(false, true),
                         [](const ::testing::TestParamInfo<bool>& info) {
                           return std::string(info.param ? "Compact" : "Text");
                         });

TEST(MemscopeWriter, SchemaEqualsMsMemScopeSample) {
  if (!exists(kSampleDb)) GTEST_SKIP() << "sample database not found: " << kSampleDb;
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string path = write_recording(dir, {});
  Db ours(path);
  Db sample(kSampleDb);
  const std::string columns = "SELECT * FROM pragma_table_info('memscope_dump')";
  EXPECT_EQ(ours.query(columns), sample.query(columns));
  EXPECT_EQ(ours.query(columns).size(), 12u);
  const std::string table = "SELECT sql FROM sqlite_master WHERE name = 'memscope_dump'";
  EXPECT_EQ(ours.query(table), sample.query(table));
  // The sample's three indexes by name and column; memtap's device and event indexes hold
  // only the rows looked up by them (IndexesHoldTheRowsTheWindowLooksUp).
  const std::string indexes =
      "SELECT l.name, i.name FROM pragma_index_list('memscope_dump') l, "
      "pragma_index_info(l.name) i ORDER BY l.name";
  EXPECT_EQ(ours.query(indexes), sample.query(indexes));
  EXPECT_EQ(ours.query(indexes).size(), 3u);
  EXPECT_EQ(
      ours.query("SELECT name, partial FROM pragma_index_list('memscope_dump') ORDER BY name"),
      (Rows{{"idx_memscope_dump_device", "1"},
            {"idx_memscope_dump_event", "1"},
            {"idx_memscope_dump_timestamp", "0"}}));
}

// The device index holds every row but the host's, the event index every row but MALLOC
// and FREE, and SQLite takes each for a query with the window's term (INDEXED BY fails to
// prepare where the index cannot serve the query).
TEST(MemscopeWriter, IndexesHoldTheRowsTheWindowLooksUp) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  DumpRow gpu_malloc = memory_row(DumpEvent::kMalloc, 30, 7, 7, 0x7f0000000000, 512, 3);
  gpu_malloc.event_type = DumpEventType::kHal;
  gpu_malloc.device = 1;
  DumpRow gpu_free = gpu_malloc;
  gpu_free.event = DumpEvent::kFree;
  gpu_free.timestamp_ns = 40;
  const std::string path =
      write_recording(dir, {{system_row(DumpEventType::kStartTrace, 10, 7),
                             memory_row(DumpEvent::kMalloc, 20, 7, 7, 0x1000, 64, 1),
                             memory_row(DumpEvent::kFree, 25, 7, 7, 0x1000, 64, 1), gpu_malloc,
                             gpu_free, system_row(DumpEventType::kStopTrace, 50, 7)}});
  Db db(path);
  // Rows an index holds: a covering query, answered from the index alone.
  EXPECT_EQ(db.query("SELECT \"Device Id\", count(*) FROM memscope_dump INDEXED BY "
                     "idx_memscope_dump_device WHERE " +
                     std::string(kMemscopeDumpDeviceIndexWhere) + " GROUP BY 1 ORDER BY 1"),
            (Rows{{"1", "2"}, {"N/A", "2"}}));
  EXPECT_EQ(db.query("SELECT Event, count(*) FROM memscope_dump INDEXED BY "
                     "idx_memscope_dump_event WHERE " +
                     std::string(kMemscopeDumpEventIndexWhere) + " GROUP BY 1 ORDER BY 1"),
            (Rows{{"SYSTEM", "2"}}));
  EXPECT_EQ(db.query("SELECT ID FROM memscope_dump INDEXED BY idx_memscope_dump_device WHERE "
                     "\"Device Id\" IN ('1') AND " +
                     std::string(kMemscopeDumpDeviceIndexWhere) + " ORDER BY ID"),
            (Rows{{"3"}, {"4"}}));
  EXPECT_EQ(db.query("SELECT ID FROM memscope_dump INDEXED BY idx_memscope_dump_event WHERE "
                     "Event IN ('SYSTEM') AND " +
                     std::string(kMemscopeDumpEventIndexWhere) + " ORDER BY ID"),
            (Rows{{"0"}, {"5"}}));
}

TEST(MemscopeWriter, MemoryRowTextMatchesMsMemScopeSample) {
  if (!exists(kSampleDb)) GTEST_SKIP() << "sample database not found: " << kSampleDb;
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  // The sample's row ID 5, a MALLOC with allocation_id 4 (its Event Type is HOST_PINNED,
  // which memtap does not produce, so that column is left out of the comparison).
  const std::string path =
      write_recording(dir, {{memory_row(DumpEvent::kMalloc, 1779862932214628220, 1116991, 1116991,
                                        0x000012c080000000, 6356992, 4)}});
  const std::string columns =
      R"sql(SELECT Event, Name, "Timestamp(ns)", "Process Id", "Thread Id", "Device Id", Ptr, )sql"
      R"sql(Attr FROM memscope_dump)sql";
  EXPECT_EQ(Db(path).query(columns), Db(kSampleDb).query(columns + " WHERE ID = 5"));
}

TEST(MemscopeWriter, SystemRowTextMatchesMsMemScopeSample) {
  if (!exists(kSampleDb)) GTEST_SKIP() << "sample database not found: " << kSampleDb;
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string path =
      write_recording(dir, {{system_row(DumpEventType::kStartTrace, 1779862930549834990, 1116991),
                             system_row(DumpEventType::kStopTrace, 1779862933160916120, 1116991)}});
  const std::string columns =
      R"sql(SELECT Event, "Event Type", Name, "Timestamp(ns)", "Process Id", "Thread Id", )sql"
      R"sql("Device Id", Ptr, quote(Attr), quote("Call Stack(Python)"), quote("Call Stack(C)") )sql"
      R"sql(FROM memscope_dump)sql";
  EXPECT_EQ(Db(path).query(columns + " ORDER BY ID"),
            Db(kSampleDb).query(columns + " WHERE \"Event Type\" IN ('START_TRACE', "
                                          "'STOP_TRACE') ORDER BY ID"));
}

TEST_P(WriterForms, EveryColumnOfEveryRowKind) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  DumpRow mmap_malloc = memory_row(DumpEvent::kMalloc, 1003, 100, 101, 0x7f0000000000, 1 << 20, 2);
  mmap_malloc.is_mmap = true;
  DumpRow inherited_free = memory_row(DumpEvent::kFree, 1005, 200, 200, 0x5555aaaa0010, 48, 1);
  inherited_free.inherited_from_pid = 100;
  DumpRow unmatched_free = memory_row(DumpEvent::kFree, 1006, 200, 201, 0xdead0, 0, 0);
  const std::string path = write_recording(
      dir,
      {{system_row(DumpEventType::kStartTrace, 1000, 100),
        memory_row(DumpEvent::kMalloc, 1001, 100, 101, 0x5555aaaa0010, 48, 1),
        memory_row(DumpEvent::kFree, 1002, 100, 101, 0x5555aaaa0010, 48, 1), mmap_malloc},
       {system_row(DumpEventType::kStartTrace, 1004, 200), inherited_free, unmatched_free,
        system_row(DumpEventType::kStopTrace, 1007, 100)}},
      {}, {}, form());
  Db db(path);
  const Rows expected = {
      {"0", "SYSTEM", "START_TRACE", "N/A", "1000", "100", "100", "N/A", "N/A", "", "", ""},
      {"1", "MALLOC", "HOST", "N/A", "1001", "100", "101", "cpu", "0x00005555aaaa0010",
       R"({"allocation_id":"1","addr":"0x00005555aaaa0010","size":"48"})", "", ""},
      {"2", "FREE", "HOST", "N/A", "1002", "100", "101", "cpu", "0x00005555aaaa0010",
       R"({"allocation_id":"1","addr":"0x00005555aaaa0010","size":"48"})", "", ""},
      {"3", "MALLOC", "HOST", "N/A", "1003", "100", "101", "cpu", "0x00007f0000000000",
       R"({"allocation_id":"2","addr":"0x00007f0000000000","size":"1048576","kind":"mmap"})", "",
       ""},
      {"4", "SYSTEM", "START_TRACE", "N/A", "1004", "200", "200", "N/A", "N/A", "", "", ""},
      {"5", "FREE", "HOST", "N/A", "1005", "200", "200", "cpu", "0x00005555aaaa0010",
       R"({"allocation_id":"1","addr":"0x00005555aaaa0010","size":"48","inherited_from":"100"})",
       "", ""},
      {"6", "FREE", "HOST", "N/A", "1006", "200", "201", "cpu", "0x00000000000dead0",
       R"({"allocation_id":"0","addr":"0x00000000000dead0","size":"0"})", "", ""},
      {"7", "SYSTEM", "STOP_TRACE", "N/A", "1007", "100", "100", "N/A", "N/A", "", "", ""},
  };
  EXPECT_EQ(db.query(std::string(kAllColumns) + " ORDER BY ID"), expected);
  // Storage classes too: '' is not NULL, and numbers are integers, not text.
  const Rows types = db.query(
      R"sql(SELECT DISTINCT typeof(ID), typeof(Event), typeof("Event Type"), typeof(Name), )sql"
      R"sql(typeof("Timestamp(ns)"), typeof("Process Id"), typeof("Thread Id"), )sql"
      R"sql(typeof("Device Id"), typeof(Ptr), typeof(Attr), typeof("Call Stack(Python)"), )sql"
      R"sql(typeof("Call Stack(C)") FROM memscope_dump)sql");
  EXPECT_EQ(types, (Rows{{"integer", "text", "text", "text", "integer", "integer", "integer",
                          "text", "text", "text", "text", "text"}}));
}

TEST_P(WriterForms, IdsFollowAppendOrderAcrossAppendsAndTransactions) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  // Timestamps deliberately not sorted: the ID is the append position, nothing else.
  std::vector<std::vector<DumpRow>> appends;
  int64_t n = 0;
  for (int chunk = 0; chunk < 5; ++chunk) {
    auto& rows = appends.emplace_back();
    for (int i = 0; i <= chunk; ++i, ++n) {
      rows.push_back(memory_row(DumpEvent::kMalloc, 5000 - n, 1 + n % 3, 7, 0x1000 + n, 8, n));
    }
  }
  MemscopeWriterOptions options = form();
  options.rows_per_transaction = 4;  // 15 rows: several commits and a partial last one
  const std::string path = write_recording(dir, appends, {}, {}, options);
  Rows expected;
  for (int64_t i = 0; i < n; ++i) {
    expected.push_back({std::to_string(i), std::to_string(5000 - i), std::to_string(1 + i % 3),
                        std::to_string(i)});
  }
  EXPECT_EQ(Db(path).query(R"sql(SELECT ID, "Timestamp(ns)", "Process Id", )sql"
                           R"sql(json_extract(Attr, '$.allocation_id') FROM memscope_dump )sql"
                           R"sql(ORDER BY ID)sql"),
            expected);
}

// Past max_memory_rows the queue goes to disk and comes back in order: of an append larger
// than the room left, what fits stays in memory and the rest goes there (not the whole
// append, which made a backlog released at once all disk work), and whatever comes while the
// spool has rows follows it there.
TEST_P(WriterForms, RowsQueuedOnDiskAreWrittenInAppendOrder) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string path = dir.file("memscope_dump_20260101000009.db");
  MemscopeWriterOptions options = form();
  options.max_memory_rows = 1000;
  options.rows_per_transaction = 700;
  std::string error;
  auto writer = MemscopeWriter::create(path, options, &error);
  ASSERT_NE(writer, nullptr) << error;
  constexpr int kRows = 30000;
  std::vector<DumpRow> rows;
  for (int i = 0; i < kRows; ++i) {
    rows.push_back(memory_row(DumpEvent::kMalloc, 1000 + i, 7, 7, 0x1000 + 16 * i, 16, i + 1));
  }
  writer->append(rows.data(), 20000);
  EXPECT_EQ(writer->rows_spooled(), 19000u);
  for (int at = 20000; at < kRows; at += 250) writer->append(&rows[at], 250);
  ASSERT_TRUE(writer->finish({}, {}, &error)) << error;
  EXPECT_EQ(writer->rows_written(), uint64_t(kRows));
  EXPECT_FALSE(exists(path + ".partial.spool"));
  Db db(path);
  EXPECT_EQ(db.value("SELECT count(*) FROM memscope_dump WHERE CAST(json_extract(Attr, "
                     "'$.allocation_id') AS INTEGER) = ID + 1 AND \"Timestamp(ns)\" = ID + 1000"),
            std::to_string(kRows));
}

// A disk queue that cannot be made (here a directory stands where its file would go) stops
// the recording, as a full disk does: keeping the rows in memory instead is what has no
// bound. The message names the queue's file and why; nothing stays queued.
TEST_P(WriterForms, ADiskQueueThatCannotBeMadeStopsTheRecording) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string path = dir.file("memscope_dump_20260101000010.db");
  ASSERT_TRUE(std::filesystem::create_directory(path + ".partial.spool"));
  MemscopeWriterOptions options = form();
  options.max_memory_rows = 100;
  std::string error;
  auto writer = MemscopeWriter::create(path, options, &error);
  ASSERT_NE(writer, nullptr) << error;
  constexpr int kRows = 5000;
  std::vector<DumpRow> rows;
  for (int i = 0; i < kRows; ++i) {
    rows.push_back(memory_row(DumpEvent::kMalloc, 1000 + i, 7, 7, 0x1000 + 16 * i, 16, i + 1));
  }
  for (int at = 0; at < kRows; at += 500) writer->append(&rows[at], 500);
  EXPECT_FALSE(writer->finish({}, {}, &error));
  EXPECT_NE(error.find("cannot create " + path + ".partial.spool: Is a directory"),
            std::string::npos)
      << error;
  const RecordingStop stop = writer->stopped();
  EXPECT_EQ(stop.reason, "cannot create " + path + ".partial.spool: Is a directory");
  EXPECT_FALSE(stop.disk_full);
  EXPECT_EQ(stop.rows_recorded + stop.rows_not_recorded, uint64_t(kRows));
  EXPECT_EQ(writer->rows_in_memory(), 0u);
  EXPECT_EQ(writer->rows_spooled(), 0u);
  Db db(path + ".partial");
  EXPECT_EQ(db.value("SELECT count(*) FROM memscope_dump"), std::to_string(stop.rows_recorded));
  EXPECT_EQ(db.value("SELECT value FROM memtap_meta WHERE key = 'recording_stopped'"), stop.reason);
}

// Polls `done` until it holds or ten seconds pass (a bound for a hung writer, not a timing).
template <class F>
bool eventually(F done) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!done()) {
    if (std::chrono::steady_clock::now() > deadline) return false;
    std::this_thread::yield();
  }
  return true;
}

std::vector<DumpRow> numbered_rows(int count) {
  std::vector<DumpRow> rows;
  for (int i = 0; i < count; ++i) {
    rows.push_back(memory_row(DumpEvent::kMalloc, 1000 + i, 7, 7, 0x1000 + 16 * i, 16, i + 1));
  }
  return rows;
}

// While the live analyses are behind, the writer waits with rows queued; it writes them
// all, in order, once they caught up.
TEST_P(WriterForms, WaitsWhileTheLiveViewIsBehind) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string path = dir.file("memscope_dump_20260101000011.db");
  std::atomic<bool> behind{true};
  MemscopeWriterOptions options = form();
  options.max_memory_rows = 1000;
  options.live_behind = [&behind] { return behind.load(); };
  std::string error;
  auto writer = MemscopeWriter::create(path, options, &error);
  ASSERT_NE(writer, nullptr) << error;
  const std::vector<DumpRow> rows = numbered_rows(5000);
  for (int at = 0; at < 5000; at += 500) writer->append(&rows[at], 500);
  // It has waited at least twice with rows to write, and written none of them.
  ASSERT_TRUE(eventually([&] { return writer->deferred_ms() >= 2; }));
  EXPECT_EQ(writer->rows_written(), 0u);
  EXPECT_GE(writer->rows_spooled(), 4000u);
  behind = false;
  ASSERT_TRUE(eventually([&] { return writer->rows_written() == 5000; }));
  ASSERT_TRUE(writer->finish({}, {}, &error)) << error;
  Db db(path);
  EXPECT_EQ(db.value("SELECT count(*) FROM memscope_dump WHERE \"Timestamp(ns)\" = ID + 1000"),
            "5000");
}

// Rows in the open transaction are taken, not yet written: a caller waiting for the
// writer to catch up (`memtap run` with progress lines) need not wait for the commit.
TEST_P(WriterForms, RowsInTheOpenTransactionAreTakenBeforeTheyAreWritten) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string path = dir.file("memscope_dump_20260101000013.db");
  MemscopeWriterOptions options = form();
  options.rows_per_transaction = 1000000;
  options.commit_interval_ms = 3600 * 1000;
  std::string error;
  auto writer = MemscopeWriter::create(path, options, &error);
  ASSERT_NE(writer, nullptr) << error;
  const std::vector<DumpRow> rows = numbered_rows(300);
  writer->append(rows.data(), rows.size());
  ASSERT_TRUE(eventually([&] { return writer->rows_taken() == 300; }));
  EXPECT_EQ(writer->rows_written(), 0u);
  ASSERT_TRUE(writer->finish({}, {}, &error)) << error;
  EXPECT_EQ(writer->rows_written(), 300u);
  EXPECT_EQ(Db(path).value("SELECT count(*) FROM memscope_dump"), "300");
}

// It does not wait for ever: not past max_deferred_bytes on disk, and not once finish()
// asks for the rest.
TEST_P(WriterForms, StopsWaitingWhenTheDiskQueueIsFullOrAtFinish) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string path = dir.file("memscope_dump_20260101000012.db");
  MemscopeWriterOptions options = form();
  options.max_memory_rows = 100;
  options.max_deferred_bytes = 1000;
  options.live_behind = [] { return true; };
  std::string error;
  auto writer = MemscopeWriter::create(path, options, &error);
  ASSERT_NE(writer, nullptr) << error;
  const std::vector<DumpRow> rows = numbered_rows(3000);
  writer->append(rows.data(), 2000);  // 100 in memory, the rest about 20 KB on disk
  ASSERT_TRUE(eventually([&] { return writer->rows_written() > 0; }));
  writer->append(&rows[2000], 1000);
  ASSERT_TRUE(writer->finish({}, {}, &error)) << error;
  EXPECT_EQ(writer->rows_written(), 3000u);
  Db db(path);
  EXPECT_EQ(db.value("SELECT count(*) FROM memscope_dump WHERE \"Timestamp(ns)\" = ID + 1000"),
            "3000");
}

TEST(MemscopeWriter, CountsRowsQueuedAndWritten) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  std::string error;
  MemscopeWriterOptions options;
  options.rows_per_transaction = 3;
  auto writer = MemscopeWriter::create(dir.file("c.db"), options, &error);
  ASSERT_NE(writer, nullptr) << error;
  EXPECT_EQ(writer->path(), dir.file("c.db"));
  std::vector<DumpRow> rows(10, memory_row(DumpEvent::kMalloc, 1, 1, 1, 16, 16, 1));
  writer->append(rows.data(), rows.size());
  writer->append(rows.data(), 0);
  EXPECT_EQ(writer->rows_queued(), 10u);
  ASSERT_TRUE(writer->finish({}, {}, &error)) << error;
  EXPECT_EQ(writer->rows_written(), 10u);
  EXPECT_EQ(Db(dir.file("c.db")).value("SELECT count(*) FROM memscope_dump"), "10");
}

ProcessInfo parent_process() {
  ProcessInfo p;
  p.pid = 4100;
  p.instance_id = 0xfedcba9876543210;  // above INT64_MAX: must survive as text
  p.ppid = 1;
  p.hostname = "node-a";
  p.peer_address = "10.0.0.7";
  p.command_line = {"python", "train.py", "--lr", "0.1"};
  p.rank = 0;
  p.world_size = 2;
  p.agent_version = "0.1.0";
  p.realtime_offset_ns = 1779862930000000000;
  p.start_ns = 1779862930549834990;
  p.end_ns = 1779862933160916120;
  p.events_received = 123456;
  p.events_dropped = 7;
  p.events_lost = 11;
  p.messages_lost = 2;
  p.events_sent = 223467;
  p.events_sent_before = 100000;
  p.unmatched_frees = 3;
  p.late_events = 4;
  p.stalls = 11;
  p.lost_frees = 5;
  p.inherited_blocks = 6;
  p.reconnects = 8;
  p.unresolved_strings = 10;
  p.memory_total_bytes = 9;
  p.bye_received = true;
  p.child_pids = {4101, 4102};
  p.ended_by = "signal SIGSEGV";
  return p;
}

ProcessInfo child_process() {
  ProcessInfo p;
  p.pid = 4101;
  p.instance_id = 0x1;
  p.ppid = 4100;
  p.forked_from_pid = 4100;
  p.hostname = "node-a";
  p.command_line = {"python", "train.py", "--lr", "0.1"};
  p.agent_version = "0.1.0";
  p.start_ns = 1779862931000000000;
  p.end_ns = 1779862932000000000;
  return p;
}

// Rows in the order the processes started, whatever order the session had them in (their
// Hellos race).
TEST(MemscopeWriter, SessionTableListsProcessesInTheOrderTheyStarted) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  ProcessInfo same_start = child_process();
  same_start.pid = 4099;
  const std::string path =
      write_recording(dir, {}, {child_process(), same_start, parent_process()});
  Db db(path);
  EXPECT_EQ(db.query("SELECT pid FROM memtap_session ORDER BY rowid"),
            (Rows{{"4100"}, {"4099"}, {"4101"}}));
}

TEST(MemscopeWriter, SessionTableHasOneRowPerProcessWithFieldNamedColumns) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string path = write_recording(dir, {}, {parent_process(), child_process()});
  Db db(path);
  EXPECT_EQ(db.query("SELECT name, type FROM pragma_table_info('memtap_session')"),
            (Rows{{"pid", "INTEGER"},
                  {"instance_id", "TEXT"},
                  {"ppid", "INTEGER"},
                  {"forked_from_pid", "INTEGER"},
                  {"hostname", "TEXT"},
                  {"command_line", "TEXT"},
                  {"rank", "INTEGER"},
                  {"world_size", "INTEGER"},
                  {"agent_version", "TEXT"},
                  {"realtime_offset_ns", "INTEGER"},
                  {"start_ns", "INTEGER"},
                  {"end_ns", "INTEGER"},
                  {"events_received", "INTEGER"},
                  {"events_dropped", "INTEGER"},
                  {"events_lost", "INTEGER"},
                  {"messages_lost", "INTEGER"},
                  {"events_sent", "INTEGER"},
                  {"events_sent_before", "INTEGER"},
                  {"unmatched_frees", "INTEGER"},
                  {"late_events", "INTEGER"},
                  {"stalls", "INTEGER"},
                  {"lost_frees", "INTEGER"},
                  {"inherited_blocks", "INTEGER"},
                  {"reconnects", "INTEGER"},
                  {"unresolved_strings", "INTEGER"},
                  {"memory_total_bytes", "INTEGER"},
                  {"bye_received", "INTEGER"},
                  {"child_pids", "TEXT"},
                  {"ended_by", "TEXT"},
                  {"peer_address", "TEXT"}}));
  EXPECT_EQ(db.query("SELECT * FROM memtap_session ORDER BY pid"),
            (Rows{{"4100",
                   "fedcba9876543210",
                   "1",
                   "0",
                   "node-a",
                   "python train.py --lr 0.1",
                   "0",
                   "2",
                   "0.1.0",
                   "1779862930000000000",
                   "1779862930549834990",
                   "1779862933160916120",
                   "123456",
                   "7",
                   "11",
                   "2",
                   "223467",
                   "100000",
                   "3",
                   "4",
                   "11",
                   "5",
                   "6",
                   "8",
                   "10",
                   "9",
                   "1",
                   "4101 4102",
                   "signal SIGSEGV",
                   "10.0.0.7"},
                  {"4101",
                   "0000000000000001",
                   "4100",
                   "4100",
                   "node-a",
                   "python train.py --lr 0.1",
                   "-1",
                   "-1",
                   "0.1.0",
                   "0",
                   "1779862931000000000",
                   "1779862932000000000",
                   "0",
                   "0",
                   "0",
                   "0",
                   "0",
                   "0",
                   "0",
                   "0",
                   "0",
                   "0",
                   "0",
                   "0",
                   "0",
                   "0",
                   "0",
                   "",
                   "",
                   ""}}));
}

// memtap_session must have a column for every ProcessInfo field. C++ cannot list a struct's
// fields, so this mirror of the fields the table knows makes an added field visible.
TEST(MemscopeWriter, SessionTableCoversEveryProcessInfoField) {
  struct KnownProcessInfo {
    uint32_t pid;
    uint64_t instance_id;
    uint32_t ppid;
    uint32_t forked_from_pid;
    uint64_t memory_total_bytes;
    std::string hostname;
    std::string peer_address;
    std::vector<std::string> command_line;
    int32_t rank;
    int32_t world_size;
    std::string agent_version;
    int64_t realtime_offset_ns;
    int64_t start_ns;
    int64_t end_ns;
    uint64_t events_received;
    uint64_t events_dropped;
    uint64_t events_lost;
    uint64_t messages_lost;
    uint64_t events_sent;
    uint64_t events_sent_before;
    uint64_t unmatched_frees;
    uint64_t late_events;
    uint64_t stalls;
    uint64_t lost_frees;
    uint64_t inherited_blocks;
    uint64_t reconnects;
    uint64_t unresolved_strings;
    bool bye_received;
    std::vector<uint32_t> child_pids;
    std::string ended_by;
  };
  EXPECT_EQ(sizeof(ProcessInfo), sizeof(KnownProcessInfo))
      << "ProcessInfo changed: add the new field to kSessionColumns in "
         "monitor/store/memtap_tables.cpp, then to this mirror and to the session tests";
}

TEST(MemscopeWriter, MetaTableHasPairsAsGivenPlusComplete) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string path = write_recording(
      dir, {}, {}, {{"memtap_version", "0.1.0"}, {"endpoint", "ipc:///tmp/x"}, {"complete", "0"}});
  EXPECT_EQ(Db(path).query("SELECT key, value FROM memtap_meta ORDER BY key"),
            (Rows{{"complete", "1"}, {"endpoint", "ipc:///tmp/x"}, {"memtap_version", "0.1.0"}}));
}

TEST(MemscopeWriter, FileIsPartialUntilFinishThenRenamedWithoutWal) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string path = dir.file("memscope_dump_20260101000000.db");
  const std::string partial = path + ".partial";
  std::string error;
  auto writer = MemscopeWriter::create(path, &error);
  ASSERT_NE(writer, nullptr) << error;
  DumpRow row = system_row(DumpEventType::kStartTrace, 1, 1);
  writer->append(&row, 1);
  EXPECT_TRUE(exists(partial));
  EXPECT_FALSE(exists(path));
  // Written in WAL mode while recording.
  EXPECT_EQ(Db(partial).value("PRAGMA journal_mode"), "wal");

  ASSERT_TRUE(writer->finish({}, {}, &error)) << error;
  EXPECT_TRUE(exists(path));
  for (const std::string& gone :
       {partial, partial + "-wal", partial + "-shm", path + "-wal", path + "-shm"}) {
    EXPECT_FALSE(exists(gone)) << gone;
  }
  // Handed over as a rollback-journal file: readable without creating -shm next to it.
  Db db(path);
  EXPECT_EQ(db.value("PRAGMA journal_mode"), "delete");
  EXPECT_EQ(db.value("PRAGMA integrity_check"), "ok");
  EXPECT_EQ(db.value("SELECT count(*) FROM memscope_dump"), "1");
}

TEST(MemscopeWriter, FinishTwiceIsAnError) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  std::string error;
  auto writer = MemscopeWriter::create(dir.file("t.db"), &error);
  ASSERT_NE(writer, nullptr) << error;
  ASSERT_TRUE(writer->finish({}, {}, &error)) << error;
  EXPECT_FALSE(writer->finish({}, {}, &error));
  EXPECT_NE(error.find("twice"), std::string::npos) << error;
}

TEST(MemscopeWriter, StalePartialAndOldRecordingAreReplaced) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string path = dir.file("r.db");
  // A crashed earlier run with the same name, and an older finished file with a stray -wal
  // that SQLite would otherwise replay into the new file.
  for (const std::string& junk :
       {path + ".partial", path + ".partial-wal", path + ".partial-shm", path, path + "-wal"}) {
    std::ofstream(junk) << "not a database";
  }
  std::string error;
  auto writer = MemscopeWriter::create(path, &error);
  ASSERT_NE(writer, nullptr) << error;
  DumpRow row = system_row(DumpEventType::kStopTrace, 2, 2);
  writer->append(&row, 1);
  ASSERT_TRUE(writer->finish({}, {}, &error)) << error;
  EXPECT_FALSE(exists(path + "-wal"));
  EXPECT_FALSE(exists(path + ".partial"));
  Db db(path);
  EXPECT_EQ(db.value("PRAGMA integrity_check"), "ok");
  EXPECT_EQ(db.query(R"sql(SELECT ID, "Event Type" FROM memscope_dump)sql"),
            (Rows{{"0", "STOP_TRACE"}}));
}

TEST_P(WriterForms, DestructorWithoutFinishLeavesAnIncompletePartial) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string path = dir.file("d.db");
  {
    std::string error;
    auto writer = MemscopeWriter::create(path, form(), &error);
    ASSERT_NE(writer, nullptr) << error;
    std::vector<DumpRow> rows(1000, memory_row(DumpEvent::kMalloc, 1, 1, 1, 16, 16, 1));
    writer->append(rows.data(), rows.size());
  }
  EXPECT_FALSE(exists(path));
  ASSERT_TRUE(exists(path + ".partial"));
  EXPECT_FALSE(exists(path + ".partial-wal"));  // closed cleanly: the log was checkpointed
  Db db(path + ".partial");
  EXPECT_EQ(db.value("PRAGMA integrity_check"), "ok");
  EXPECT_EQ(db.value("SELECT count(*) FROM memtap_meta WHERE key = 'complete'"), "0");
  // Rows still queued when the writer was destroyed are dropped, the committed ones stay.
  const int rows = std::stoi(db.value("SELECT count(*) FROM memscope_dump"));
  EXPECT_LE(rows, 1000);
  EXPECT_EQ(db.value("SELECT count(*) FROM memscope_dump WHERE ID >= " + std::to_string(rows)),
            "0");
}

// Strings go in through define_string before the rows that use them, as the Session hands
// them over; `texts` are defined as ids 1, 2, ... before the rows.
std::string write_with_strings(const TempDir& dir, const std::vector<std::string>& texts,
                               const std::vector<DumpRow>& rows,
                               const MemscopeWriterOptions& options) {
  const std::string path = dir.file("memscope_dump_20260101000001.db");
  std::string error;
  auto writer = MemscopeWriter::create(path, options, &error);
  if (writer == nullptr) {
    ADD_FAILURE() << error;
    return path;
  }
  for (size_t i = 0; i < texts.size(); ++i) writer->define_string(uint32_t(i + 1), texts[i]);
  writer->append(rows.data(), rows.size());
  if (!writer->finish({}, {}, &error)) ADD_FAILURE() << error;
  return path;
}

// Session string ids of the texts below.
enum : uint32_t { kOwnerModel = 1, kOwnerNested, kOpAdd, kPyStack, kCStack, kMarkText, kFunc };
const std::vector<std::string> kTexts = {
    "model",
    "model@act\"ivations",
    "aten::add",
    "train.py(12): step\nmodel.py(3): forward\n",
    "libtorch.so(at::empty+0x10) [0x7f0000001000]\n",
    "epoch 1 begins",
    "train.py(12): step",
};

DumpRow context_row(DumpEvent event, DumpEventType type, int64_t ts, uint32_t name) {
  DumpRow row;
  row.event = event;
  row.event_type = type;
  row.timestamp_ns = ts;
  row.process_id = 100;
  row.thread_id = 101;
  row.name = name;
  return row;
}

TEST_P(WriterForms, ContextColumnsAndRows) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  DumpRow step = context_row(DumpEvent::kSystem, DumpEventType::kStep, 1000, 0);
  step.step = 3;
  DumpRow malloc = memory_row(DumpEvent::kMalloc, 1003, 100, 101, 0x1000, 64, 1);
  malloc.owner = kOwnerNested;
  malloc.name = kOpAdd;
  malloc.stack_python = kPyStack;
  malloc.stack_c = kCStack;
  DumpRow plain = memory_row(DumpEvent::kMalloc, 1004, 100, 101, 0x2000, 32, 2);
  DumpRow free = memory_row(DumpEvent::kFree, 1005, 100, 101, 0x1000, 64, 1);
  free.owner = kOwnerNested;
  DumpRow owned = memory_row(DumpEvent::kMalloc, 1006, 100, 101, 0x3000, 16, 3);
  owned.owner = kOwnerModel;
  owned.stack_python = kPyStack;
  const std::string path = write_with_strings(
      dir, kTexts,
      {step, context_row(DumpEvent::kMstx, DumpEventType::kMark, 1001, kMarkText),
       context_row(DumpEvent::kOpLaunch, DumpEventType::kAtenStart, 1002, kOpAdd), malloc, plain,
       free, owned, context_row(DumpEvent::kOpLaunch, DumpEventType::kAtenEnd, 1007, kOpAdd),
       context_row(DumpEvent::kMstx, DumpEventType::kRangeStart, 1008, kMarkText),
       context_row(DumpEvent::kMstx, DumpEventType::kRangeEnd, 1009, kMarkText)},
      form());
  const Rows expected = {
      {"0", "SYSTEM", "STEP", "3", "1000", "100", "101", "N/A", "N/A", "", "", ""},
      {"1", "MSTX", "Mark", "epoch 1 begins", "1001", "100", "101", "N/A", "N/A", "", "", ""},
      {"2", "OP_LAUNCH", "ATEN_START", "aten::add", "1002", "100", "101", "N/A", "N/A", "", "", ""},
      {"3", "MALLOC", "HOST", "aten::add", "1003", "100", "101", "cpu", "0x0000000000001000",
       R"({"allocation_id":"1","addr":"0x0000000000001000","size":"64",)"
       R"("owner":"model@act\"ivations"})",
       kTexts[kPyStack - 1], kTexts[kCStack - 1]},
      {"4", "MALLOC", "HOST", "N/A", "1004", "100", "101", "cpu", "0x0000000000002000",
       R"({"allocation_id":"2","addr":"0x0000000000002000","size":"32"})", "", ""},
      {"5", "FREE", "HOST", "N/A", "1005", "100", "101", "cpu", "0x0000000000001000",
       R"({"allocation_id":"1","addr":"0x0000000000001000","size":"64",)"
       R"("owner":"model@act\"ivations"})",
       "", ""},
      {"6", "MALLOC", "HOST", "N/A", "1006", "100", "101", "cpu", "0x0000000000003000",
       R"({"allocation_id":"3","addr":"0x0000000000003000","size":"16","owner":"model"})",
       kTexts[kPyStack - 1], ""},
      {"7", "OP_LAUNCH", "ATEN_END", "aten::add", "1007", "100", "101", "N/A", "N/A", "", "", ""},
      {"8", "MSTX", "Range_start", "epoch 1 begins", "1008", "100", "101", "N/A", "N/A", "", "",
       ""},
      {"9", "MSTX", "Range_end", "epoch 1 begins", "1009", "100", "101", "N/A", "N/A", "", "", ""},
  };
  Db db(path);
  EXPECT_EQ(db.query(std::string(kAllColumns) + " ORDER BY ID"), expected);
  // The owner reads back through SQLite's JSON functions, escapes undone.
  EXPECT_EQ(db.value("SELECT json_extract(Attr, '$.owner') FROM memscope_dump WHERE ID = 3"),
            "model@act\"ivations");
  EXPECT_EQ(db.value("SELECT count(*) FROM memscope_dump WHERE json_valid(Attr) = 0 AND "
                     "Attr != ''"),
            "0");
}

TEST_P(WriterForms, TraceSlicesGoToPythonTraceTablesPerProcess) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  DumpRow slice;
  slice.event = DumpEvent::kTraceSlice;
  slice.process_id = 100;
  slice.thread_id = 101;
  slice.name = kFunc;
  slice.timestamp_ns = 1779862930000000100;
  slice.end_ns = 1779862930000000900;
  DumpRow other = slice;
  other.process_id = 200;
  other.thread_id = 201;
  other.timestamp_ns = 1779862930000001000;
  other.end_ns = 1779862930000002000;
  DumpRow later = slice;
  later.timestamp_ns = 1779862930000003000;
  later.end_ns = 1779862930000004000;
  const std::string path =
      write_with_strings(dir, kTexts,
                         {system_row(DumpEventType::kStartTrace, 1, 100), slice, other, later,
                          system_row(DumpEventType::kStopTrace, 2, 100)},
                         form());
  Db db(path);
  // Slices take no memscope_dump ID: the dump's IDs stay dense.
  EXPECT_EQ(db.query(R"sql(SELECT ID, "Event Type" FROM memscope_dump ORDER BY ID)sql"),
            (Rows{{"0", "START_TRACE"}, {"1", "STOP_TRACE"}}));
  EXPECT_EQ(db.query("SELECT name, type FROM pragma_table_info('python_trace_100')"),
            (Rows{{"FuncInfo", "TEXT"},
                  {"StartTime(ns)", "TEXT"},
                  {"EndTime(ns)", "TEXT"},
                  {"Thread Id", "INTEGER"},
                  {"Process Id", "INTEGER"}}));
  EXPECT_EQ(
      db.query(
          R"sql(SELECT FuncInfo, "StartTime(ns)", "EndTime(ns)", "Thread Id", )sql"
          R"sql("Process Id", typeof("StartTime(ns)") FROM python_trace_100 ORDER BY rowid)sql"),
      (Rows{{"train.py(12): step", "1779862930000000100", "1779862930000000900", "101", "100",
             "text"},
            {"train.py(12): step", "1779862930000003000", "1779862930000004000", "101", "100",
             "text"}}));
  EXPECT_EQ(db.query(R"sql(SELECT "StartTime(ns)", "Process Id" FROM python_trace_200)sql"),
            (Rows{{"1779862930000001000", "200"}}));
}

TEST_P(WriterForms, StringsDefinedBetweenAppendsReachLaterRows) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string path = dir.file("s.db");
  std::string error;
  auto writer = MemscopeWriter::create(path, form(), &error);
  ASSERT_NE(writer, nullptr) << error;
  for (uint32_t i = 1; i <= 2000; ++i) {
    writer->define_string(i, "owner" + std::to_string(i));
    DumpRow row = memory_row(DumpEvent::kMalloc, i, 1, 1, 0x1000 + i * 16, 16, i);
    row.owner = i;
    writer->append(&row, 1);
  }
  ASSERT_TRUE(writer->finish({}, {}, &error)) << error;
  Db db(path);
  EXPECT_EQ(db.value("SELECT count(*) FROM memscope_dump WHERE json_extract(Attr, '$.owner') = "
                     "'owner' || (ID + 1)"),
            "2000");
}

}  // namespace
}  // namespace memtap
