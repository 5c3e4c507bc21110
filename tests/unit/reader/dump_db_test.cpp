// Databases in msMemScope's dump format, written here in each variant a reader meets:
// memscope_dump and leaks_dump, hex and decimal Ptr, JSON and unquoted Attr, rows out of
// time order, FREEs without size, microsecond timestamps, missing optional columns,
// memtap's own memtap_session, and ids far apart.
#include <gtest/gtest.h>

#include <filesystem>
#include <string>

#include "monitor/model/process_info.h"
#include "monitor/store/memtap_tables.h"
#include "tests/unit/reader/reader_test_support.h"

namespace memtap {
namespace {

using test::count_kind;
using test::exec_sql;
using test::read_ok;
using test::TempDir;

// An INSERT of one dump row; `values` is everything after the ID.
std::string row(const std::string& table, int id, const std::string& values) {
  return "INSERT INTO " + table + " VALUES (" + std::to_string(id) + ", " + values + ");";
}

TEST(DumpDb, NewestFormatDecodesEveryColumn) {
  TempDir dir;
  const std::string path = dir.file("memscope_dump_1.db");
  exec_sql(path,
           test::dump_schema() +
               row("memscope_dump", 0,
                   "'SYSTEM','START_TRACE','N/A',1779862930549834990,7,8,'N/A','N/A','','',''") +
               row("memscope_dump", 1,
                   "'MALLOC','HOST_PINNED','N/A',1779862932214628220,7,9,'cpu',"
                   "'0x000012c080000000',"
                   "'{\"allocation_id\":\"4\",\"addr\":\"0x000012c080000000\","
                   "\"size\":\"6356992\",\"owner\":\"model@layer1\",\"stream\":\"0x5\"}',"
                   "'a.py(11): <module>','libx.so(f+0x1) [0x2]'") +
               row("memscope_dump", 2,
                   "'FREE','HOST_PINNED','N/A',1779862932853939150,7,9,'cpu',"
                   "'0x000012c080000000',"
                   "'{\"allocation_id\":\"4\",\"addr\":\"0x000012c080000000\","
                   "\"size\":\"6356992\"}','a.py(11): <module>',''") +
               row("memscope_dump", 3,
                   "'MALLOC','HOST','N/A',1779862932853939151,7,9,'cpu','0x20',"
                   "'{\"allocation_id\":\"5\",\"addr\":\"0x20\",\"size\":\"4096\","
                   "\"kind\":\"mmap\"}','',''"));
  const Recording rec = read_ok(path);
  EXPECT_EQ(rec.format, "memscope_dump");
  EXPECT_EQ(rec.rows_read, 4u);
  EXPECT_EQ(rec.rows_skipped, 0u);
  EXPECT_EQ(rec.warning, "");
  ASSERT_EQ(rec.events.size(), 4u);

  const MemEvent& start = rec.events[0];
  EXPECT_EQ(start.kind, MemEventKind::kTraceStart);
  EXPECT_EQ(start.device, kNoDevice);
  EXPECT_EQ(start.name, 0u);

  const MemEvent& malloc_event = rec.events[1];
  EXPECT_EQ(malloc_event.kind, MemEventKind::kMalloc);
  EXPECT_EQ(malloc_event.layer, Layer::kHostPinned);
  EXPECT_EQ(malloc_event.ts_ns, 1779862932214628220);
  EXPECT_EQ(malloc_event.pid, 7u);
  EXPECT_EQ(malloc_event.tid, 9u);
  EXPECT_EQ(malloc_event.device, kHostDevice);
  EXPECT_EQ(malloc_event.addr, 0x12c080000000u);
  EXPECT_EQ(malloc_event.size_bytes, 6356992u);
  EXPECT_EQ(malloc_event.allocation_id, 4u);
  EXPECT_EQ(malloc_event.stream, 5u);
  EXPECT_EQ(rec.strings.get(malloc_event.owner), "model@layer1");
  EXPECT_EQ(rec.strings.get(malloc_event.stack_python), "a.py(11): <module>");
  EXPECT_EQ(rec.strings.get(malloc_event.stack_c), "libx.so(f+0x1) [0x2]");
  EXPECT_FALSE(malloc_event.is_mmap);

  const MemEvent& free_event = rec.events[2];
  EXPECT_EQ(free_event.kind, MemEventKind::kFree);
  EXPECT_EQ(free_event.stack_python, malloc_event.stack_python);  // interned once
  EXPECT_EQ(free_event.size_bytes, 6356992u);
  EXPECT_TRUE(rec.events[3].is_mmap);

  ASSERT_EQ(rec.processes.size(), 1u);  // no memtap_session: one per pid
  EXPECT_EQ(rec.processes[0].pid, 7u);
  EXPECT_EQ(rec.processes[0].command_line, "");
}

TEST(DumpDb, LeaksDumpWithDecimalPtrUnquotedAttrAndMicroseconds) {
  TempDir dir;
  const std::string path = dir.file("leaks_dump_1.db");
  exec_sql(path,
           test::dump_schema("leaks_dump") +
               row("leaks_dump", 1,
                   "'SYSTEM','acl init','N/A',1746006014162153,2523740,2523740,'N/A','N/A',"
                   "'','',''") +
               row("leaks_dump", 2,
                   "'MALLOC','HAL','N/A',1746006014361575,2523740,2523740,'host',"
                   "'20615843020800','{addr:20615843020800,size:16384,owner:,MID:7}','',''") +
               row("leaks_dump", 3,
                   "'MALLOC','PTA','N/A',1746006014361576,2523740,2523740,'npu:1','0x100',"
                   "'{allocation_id:4,addr:0x100,size:2048,total:20971520,used:2048}','',''") +
               // 2025-04 files write a PTA FREE's size as a negative delta.
               row("leaks_dump", 4,
                   "'FREE','PTA','N/A',1746006014361577,2523740,2523740,'1','256',"
                   "'{addr:256,size:-2048,owner:,total:2097152,used:0}','',''"));
  const Recording rec = read_ok(path);
  EXPECT_EQ(rec.format, "leaks_dump");
  ASSERT_EQ(rec.events.size(), 4u);
  EXPECT_EQ(rec.events[3].size_bytes, 2048u);
  EXPECT_EQ(rec.events[3].addr, 0x100u);
  EXPECT_EQ(rec.events[0].kind, MemEventKind::kOther);  // `acl init` is no trace boundary
  EXPECT_EQ(rec.events[0].ts_ns, 1746006014162153000);  // microseconds, scaled
  const MemEvent& hal = rec.events[1];
  EXPECT_EQ(hal.layer, Layer::kHal);
  EXPECT_EQ(hal.device, kHostDevice);
  EXPECT_EQ(hal.addr, 20615843020800u);
  EXPECT_EQ(hal.size_bytes, 16384u);
  EXPECT_EQ(hal.owner, 0u);  // `owner:` is empty
  EXPECT_EQ(hal.allocation_id, 0u);
  EXPECT_EQ(hal.ts_ns, 1746006014361575000);
  const MemEvent& pta = rec.events[2];
  EXPECT_EQ(pta.device, 1);
  EXPECT_EQ(pta.addr, 0x100u);
  EXPECT_EQ(pta.pool_used, 2048);
  EXPECT_EQ(pta.pool_total, 20971520);
  EXPECT_EQ(pta.allocation_id, 4u);
}

TEST(DumpDb, RowsOutOfOrderComeOutByTimeWithTiesInFileOrder) {
  TempDir dir;
  const std::string path = dir.file("memscope_dump_2.db");
  std::string sql = test::dump_schema();
  // The allocation id says which row it was; times 30, 10, 20, 10, 5.
  const int64_t times[] = {1779862930000000030, 1779862930000000010, 1779862930000000020,
                           1779862930000000010, 1779862930000000005};
  for (int i = 0; i < 5; ++i) {
    sql += row("memscope_dump", i,
               "'MALLOC','HOST','N/A'," + std::to_string(times[i]) + ",1,1,'cpu','0x" +
                   std::to_string(i + 1) +
                   "0',"
                   "'{\"allocation_id\":\"" +
                   std::to_string(i) + "\",\"size\":\"8\"}','',''");
  }
  exec_sql(path, sql);
  const Recording rec = read_ok(path);
  ASSERT_EQ(rec.events.size(), 5u);
  std::vector<uint64_t> order;
  for (const MemEvent& e : rec.events) order.push_back(e.allocation_id);
  EXPECT_EQ(order, (std::vector<uint64_t>{4, 1, 3, 2, 0}));
}

TEST(DumpDb, FreeWithoutSizeOrDeviceTakesThemFromItsMalloc) {
  TempDir dir;
  const std::string path = dir.file("memscope_dump_3.db");
  exec_sql(path, test::dump_schema() +
                     // Written when freed: the second block's rows come first in the file.
                     row("memscope_dump", 1,
                         "'MALLOC','HAL','N/A',1779862930000000300,5,5,'0','0xa0',"
                         "'{addr:0xa0,size:200,MID:1}','',''") +
                     row("memscope_dump", 2,
                         "'FREE','HAL','N/A',1779862930000000400,5,5,'N/A','0xa0','{addr:0xa0}',"
                         "'',''") +
                     row("memscope_dump", 3,
                         "'MALLOC','HAL','N/A',1779862930000000100,5,5,'0','0xa0',"
                         "'{allocation_id:9,addr:0xa0,size:100}','',''") +
                     row("memscope_dump", 4,
                         "'FREE','HAL','N/A',1779862930000000200,5,5,'0','0xa0','{addr:0xa0}',"
                         "'',''") +
                     // Freed, never seen allocated: left as it is.
                     row("memscope_dump", 5,
                         "'FREE','HAL','N/A',1779862930000000500,5,5,'N/A','0xb0','', '',''") +
                     // Another process's block at the same address does not match.
                     row("memscope_dump", 6,
                         "'FREE','HAL','N/A',1779862930000000600,6,6,'0','0xa0','','',''"));
  const Recording rec = read_ok(path);
  ASSERT_EQ(rec.events.size(), 6u);
  EXPECT_EQ(rec.events[1].kind, MemEventKind::kFree);
  EXPECT_EQ(rec.events[1].size_bytes, 100u);
  EXPECT_EQ(rec.events[1].allocation_id, 9u);
  EXPECT_EQ(rec.events[3].kind, MemEventKind::kFree);
  EXPECT_EQ(rec.events[3].size_bytes, 200u);  // the block at 0xa0 after the address's reuse
  EXPECT_EQ(rec.events[3].device, 0);         // from its MALLOC; the row said N/A
  EXPECT_EQ(rec.events[4].size_bytes, 0u);
  EXPECT_EQ(rec.events[4].device, kNoDevice);
  EXPECT_EQ(rec.events[5].size_bytes, 0u);
}

TEST(DumpDb, EveryEventWordAndLayerInItsSpellings) {
  TempDir dir;
  const std::string path = dir.file("memscope_dump_4.db");
  struct Case {
    const char* event;
    const char* type;
    MemEventKind kind;
    Layer layer;
  };
  const Case cases[] = {
      {"MALLOC", "PTA_WORKSPACE", MemEventKind::kMalloc, Layer::kPtaWorkspace},
      {"MALLOC", "ATB", MemEventKind::kMalloc, Layer::kAtb},
      {"MALLOC", "MindSpore", MemEventKind::kMalloc, Layer::kMindspore},
      {"FREE", "MINDSPORE", MemEventKind::kFree, Layer::kMindspore},
      {"MALLOC", "SOMETHING_NEW", MemEventKind::kMalloc, Layer::kOther},
      {"SYSTEM", "START_TRACE", MemEventKind::kTraceStart, Layer::kOther},
      {"SYSTEM", "stop trace", MemEventKind::kTraceStop, Layer::kOther},
      {"SYSTEM", "STEP", MemEventKind::kStep, Layer::kOther},
      {"SYSTEM", "ACL_INIT", MemEventKind::kOther, Layer::kOther},
      {"MSTX", "Mark", MemEventKind::kMark, Layer::kOther},
      {"MSTX", "Range_start", MemEventKind::kRangeStart, Layer::kOther},
      {"MSTX", "Range_end", MemEventKind::kRangeEnd, Layer::kOther},
      {"OP_LAUNCH", "ATEN_START", MemEventKind::kOpStart, Layer::kOther},
      {"OP_LAUNCH", "ATEN_END", MemEventKind::kOpEnd, Layer::kOther},
      {"KERNEL_LAUNCH", "KERNEL_LAUNCH", MemEventKind::kKernelLaunch, Layer::kOther},
      {"KERNEL_LAUNCH", "KERNEL_START", MemEventKind::kOther, Layer::kOther},
      {"SNAPSHOT", "SNAPSHOT", MemEventKind::kSnapshot, Layer::kOther},
      {"OOM_DETAIL", "OOM_TRIGGER", MemEventKind::kOom, Layer::kOther},
      {"ACCESS", "READ", MemEventKind::kAccess, Layer::kOther},
      {"NEW_EVENT", "X", MemEventKind::kOther, Layer::kOther},
  };
  std::string sql = test::dump_schema();
  int id = 0;
  for (const Case& c : cases) {
    sql += row("memscope_dump", id,
               std::string("'") + c.event + "','" + c.type + "','op'," +
                   std::to_string(1779862930000000000 + id) + ",1,1,'0','N/A','','',''");
    ++id;
  }
  exec_sql(path, sql);
  const Recording rec = read_ok(path);
  ASSERT_EQ(rec.events.size(), std::size(cases));
  for (size_t i = 0; i < std::size(cases); ++i) {
    EXPECT_EQ(rec.events[i].kind, cases[i].kind) << cases[i].event << " " << cases[i].type;
    EXPECT_EQ(rec.events[i].layer, cases[i].layer) << cases[i].event << " " << cases[i].type;
    EXPECT_EQ(rec.strings.get(rec.events[i].name), "op");
  }
}

TEST(DumpDb, SnapshotAndAccessAttrKeys) {
  TempDir dir;
  const std::string path = dir.file("memscope_dump_5.db");
  exec_sql(path, test::dump_schema() +
                     row("memscope_dump", 1,
                         "'SNAPSHOT','SNAPSHOT','N/A',1779862930000000000,1,1,'0','N/A',"
                         "'{\"allocated\":\"100\",\"reserved\":\"200\",\"app_reserved\":\"300\","
                         "\"total\":\"400\",\"free\":\"50\",\"max_allocated\":\"150\"}','',''") +
                     row("memscope_dump", 2,
                         "'ACCESS','WRITE','aten::add',1779862930000000001,1,1,'0','0x40',"
                         "'{dtype:float,shape:[2, 3],size:24,type:ATB,allocation_id:3}','',''"));
  const Recording rec = read_ok(path);
  ASSERT_EQ(rec.events.size(), 2u);
  const MemEvent& snap = rec.events[0];
  EXPECT_EQ(snap.snap_allocated, 100);
  EXPECT_EQ(snap.snap_reserved, 200);
  EXPECT_EQ(snap.snap_app_reserved, 300);
  EXPECT_EQ(snap.snap_total, 400);  // `total` of a SNAPSHOT is the capacity, not the pool's
  EXPECT_EQ(snap.pool_total, kUnknown);
  EXPECT_EQ(snap.snap_free, 50);
  const MemEvent& access = rec.events[1];
  EXPECT_EQ(access.layer, Layer::kAtb);
  EXPECT_EQ(access.size_bytes, 24u);
  EXPECT_EQ(access.addr, 0x40u);
  EXPECT_EQ(rec.strings.get(access.name), "aten::add");
}

TEST(DumpDb, MissingOptionalColumnsReadAsEmpty) {
  TempDir dir;
  const std::string path = dir.file("old.db");
  exec_sql(path,
           "CREATE TABLE leaks_dump (\"Event\" TEXT, \"Event Type\" TEXT, \"Timestamp(ns)\" "
           "INTEGER, \"Process Id\" INTEGER, \"Ptr\" TEXT, \"Attr\" TEXT);"
           "INSERT INTO leaks_dump VALUES ('MALLOC','HOST',1779862930000000000,3,'0x10',"
           "'{size:16}');");
  const Recording rec = read_ok(path);
  ASSERT_EQ(rec.events.size(), 1u);
  EXPECT_EQ(rec.events[0].pid, 3u);
  EXPECT_EQ(rec.events[0].tid, 0u);
  EXPECT_EQ(rec.events[0].device, kNoDevice);
  EXPECT_EQ(rec.events[0].size_bytes, 16u);
}

TEST(DumpDb, MemtapSessionGivesTheProcesses) {
  TempDir dir;
  const std::string path = dir.file("memscope_dump_6.db");
  exec_sql(path, test::dump_schema() + memtap_tables_sql());
  std::vector<ProcessInfo> processes(3);
  processes[0].pid = 10;
  processes[0].hostname = "node1";
  processes[0].command_line = {"python", "train.py"};
  processes[0].rank = 0;
  processes[0].world_size = 2;
  processes[0].events_dropped = 2;
  processes[0].events_lost = 4;
  processes[0].events_sent_before = 100;
  processes[0].ended_by = "exec";
  processes[1] = processes[0];  // the same pid after exec
  processes[1].command_line = {"/bin/true"};
  processes[1].events_dropped = 3;
  processes[1].events_lost = 1;
  processes[1].events_sent_before = 0;
  processes[1].stalls = 2;
  processes[1].ended_by = "exit code 0";
  processes[0].stalls = 1;
  processes[2].pid = 11;
  processes[2].forked_from_pid = 10;
  processes[2].hostname = "node1";
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  std::string error;
  EXPECT_TRUE(write_memtap_session(db, processes, &error)) << error;
  sqlite3_close(db);
  exec_sql(path, row("memscope_dump", 1,
                     "'MALLOC','HOST','N/A',1779862930000000000,12,12,'cpu','0x1','','',''") +
                     row("memscope_dump", 2,
                         "'MALLOC','HOST','N/A',1779862930000000001,10,10,'cpu','0x2','','',''"));

  const Recording rec = read_ok(path);
  ASSERT_EQ(rec.processes.size(), 3u);
  EXPECT_EQ(rec.processes[0].pid, 10u);
  EXPECT_EQ(rec.processes[0].hostname, "node1");
  EXPECT_EQ(rec.processes[0].command_line, "/bin/true");  // what the pid became
  EXPECT_EQ(rec.processes[0].rank, 0);
  EXPECT_EQ(rec.processes[0].world_size, 2);
  EXPECT_EQ(rec.processes[0].events_dropped, 5u);
  EXPECT_EQ(rec.processes[0].events_lost, 5u);
  EXPECT_EQ(rec.processes[0].events_sent_before, 100u);
  EXPECT_EQ(rec.processes[0].stalls, 3u);
  EXPECT_EQ(rec.processes[0].ended_by, "exit code 0");
  EXPECT_EQ(rec.processes[1].pid, 11u);
  EXPECT_EQ(rec.processes[1].forked_from_pid, 10u);
  EXPECT_EQ(rec.processes[1].rank, -1);
  EXPECT_EQ(rec.processes[2].pid, 12u);  // events, but no session row
  EXPECT_EQ(rec.processes[2].hostname, "");
}

// A crafted file with a session row for each of 500,000 processes: each row finds its pid's
// process by hash, not by a scan of those read so far (1.25e11 comparisons: minutes).
TEST(DumpDb, ASessionTableOfManyProcessesReadsInLinearTime) {
  TempDir dir;
  const std::string path = dir.file("memscope_dump_9.db");
  constexpr int kProcesses = 500000;
  exec_sql(path, test::dump_schema() + memtap_tables_sql() +
                     "WITH RECURSIVE n(i) AS (SELECT 1 UNION ALL SELECT i + 1 FROM n WHERE i < " +
                     std::to_string(kProcesses) +
                     ") INSERT INTO memtap_session (pid, instance_id, start_ns, "
                     "events_dropped) SELECT i, printf('%016x', i), i, 1 FROM n;"
                     // One pid twice (an exec): still one process, its drops summed.
                     "INSERT INTO memtap_session (pid, instance_id, start_ns, events_dropped) "
                     "VALUES (7, 'ff', 100001, 2);" +
                     row("memscope_dump", 1,
                         "'MALLOC','HOST','N/A',1779862930000000000,7,7,'cpu','0x1','','',''"));
  const Recording rec = read_ok(path);
  ASSERT_EQ(rec.processes.size(), size_t(kProcesses));
  EXPECT_EQ(rec.processes[0].pid, 1u);
  EXPECT_EQ(rec.processes[6].pid, 7u);
  EXPECT_EQ(rec.processes[6].events_dropped, 3u);
  EXPECT_EQ(rec.processes.back().pid, uint32_t(kProcesses));
}

// An older memtap wrote memtap_session in the order the Hellos came, without ended_by: the
// processes come in the order they started, their end unknown.
TEST(DumpDb, AnOlderSessionTableReadsInStartOrder) {
  TempDir dir;
  const std::string path = dir.file("memscope_dump_8.db");
  exec_sql(path, test::dump_schema() +
                     "CREATE TABLE memtap_session (pid INTEGER, instance_id TEXT, hostname TEXT, "
                     "command_line TEXT, start_ns INTEGER);"
                     "INSERT INTO memtap_session VALUES (21, '02', 'n', 'child', 200);"
                     "INSERT INTO memtap_session VALUES (20, '01', 'n', 'parent', 100);");
  const Recording rec = read_ok(path);
  ASSERT_EQ(rec.processes.size(), 2u);
  EXPECT_EQ(rec.processes[0].command_line, "parent");
  EXPECT_EQ(rec.processes[1].command_line, "child");
  EXPECT_EQ(rec.processes[0].ended_by, "");
  EXPECT_EQ(rec.processes[0].events_lost, 0u) << "not in an older table: none counted";
  EXPECT_EQ(rec.processes[0].events_sent_before, 0u);
}

TEST(DumpDb, BadRowsAreSkippedCountedAndTheFirstNamed) {
  TempDir dir;
  const std::string path = dir.file("memscope_dump_7.db");
  exec_sql(path,
           test::dump_schema() +
               row("memscope_dump", 1,
                   "'MALLOC','HOST','N/A',1779862930000000000,1,1,'cpu','0x1','','',''") +
               row("memscope_dump", 2, "'MALLOC','HOST','N/A','soon',1,1,'cpu','0x1','','',''") +
               row("memscope_dump", 3,
                   "'MALLOC','HOST','N/A',1779862930000000001,1,1,'cpu','0xzz','','',''") +
               row("memscope_dump", 4,
                   "'MALLOC','HOST','N/A',1779862930000000002,1,1,'gpu','0x1','','',''") +
               row("memscope_dump", 5,
                   "'MALLOC','HOST','N/A',1779862930000000003,1,1,'cpu','0x1','{size:x}',"
                   "'',''") +
               row("memscope_dump", 6,
                   "'MALLOC','HOST','N/A',1779862930000000004,1,1,'cpu','0x1','{size',"
                   "'',''") +
               row("memscope_dump", 7,
                   "'MALLOC','HOST','N/A',1779862930000000005,'pid',1,'cpu','0x1','',"
                   "'',''") +
               row("memscope_dump", 8, "'MALLOC','HOST','N/A',NULL,1,1,'cpu','0x1','','',''"));
  const Recording rec = read_ok(path);
  EXPECT_EQ(rec.rows_read, 8u);
  EXPECT_EQ(rec.rows_skipped, 7u);
  EXPECT_EQ(rec.events.size(), 1u);
  EXPECT_EQ(rec.warning, path +
                             ": 7 of 8 rows skipped; the first, ID 2: Timestamp(ns) 'soon' is "
                             "not a number");

  // Each kind of bad value, named: one database per row, so each is "the first".
  const std::pair<int, std::string> expected[] = {
      {3, "ID 3: Ptr '0xzz' is not a hex or decimal address"},
      {4, "ID 4: Device Id 'gpu' is not cpu, host, N/A or a device number"},
      {5, "ID 5: Attr size 'x' is not a number"},
      {6, "ID 6: Attr '{size': offset 5: expected ':' after key 'size'"},
      {7, "ID 7: Process Id 'pid' is not a number"},
      {8, "ID 8: Timestamp(ns) is empty"},
  };
  for (const auto& [id, message] : expected) {
    const std::string one = dir.file("one_" + std::to_string(id) + ".db");
    exec_sql(one, test::dump_schema() + "ATTACH '" + path + "' AS src;" +
                      "INSERT INTO memscope_dump SELECT * FROM src.memscope_dump WHERE ID IN (1, " +
                      std::to_string(id) + ");");
    const Recording r = read_ok(one);
    EXPECT_EQ(r.warning, one + ": 1 of 2 rows skipped; the first, " + message);
  }
}

TEST(DumpDb, AnEmptyTableIsAnEmptyRecordingNotAnError) {
  TempDir dir;
  const std::string path = dir.file("memscope_dump_8.db");
  exec_sql(path, test::dump_schema());
  const Recording rec = read_ok(path);
  EXPECT_TRUE(rec.events.empty());
  EXPECT_EQ(rec.rows_read, 0u);
  EXPECT_EQ(rec.format, "memscope_dump");
}

// Found while writing memscope_db_fuzzer (which then reports it as an out-of-memory
// malloc; its seeds hold the file): the reader reserves room for the rowid span's rows up
// front, and two rows 40 million ids apart reserved 40 million events (5 GB; a machine
// without it refuses, and the reader does not catch std::bad_alloc).
TEST(DumpDb, FarApartIdsDoNotReserveMemoryForTheRowsBetween) {
  TempDir dir;
  const std::string path = dir.file("memscope_dump_9.db");
  exec_sql(path, test::dump_schema() +
                     "INSERT INTO memscope_dump VALUES (1,'MALLOC','HOST','N/A',"
                     "1779862930000000000,1,1,'cpu','0x10','{size:16}','','');"
                     "INSERT INTO memscope_dump VALUES (40000000,'FREE','HOST','N/A',"
                     "1779862930000000001,1,1,'cpu','0x10','','','');");
  const Recording rec = read_ok(path);
  ASSERT_EQ(rec.events.size(), 2u);
  // No more than the file could hold at 8 bytes a row.
  EXPECT_LE(rec.events.capacity(), size_t(std::filesystem::file_size(path) / 8));
}

}  // namespace
}  // namespace memtap
