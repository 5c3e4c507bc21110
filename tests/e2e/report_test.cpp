// `memtap report` and `memtap replay` on real files: memtap's own recordings, msMemScope's
// and MindStudio Insight's sample files, and files that are broken in the ways files
// break. And the promise that a replayed recording reports what the live run reported.
#include <dirent.h>
#include <gtest/gtest.h>
#include <sqlite3.h>

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <vector>

#include "monitor/store/memscope_schema.h"
#include "tests/e2e/db_query.h"
#include "tests/e2e/e2e_support.h"

namespace memtap::e2e {
namespace {

ProcessResult memtap(const TempDir& dir, std::vector<std::string> args) {
  args.insert(args.begin(), kMemtapBin);
  return run_process(spec_in(dir, args), kProcessTimeout);
}

// The report's lines after its first (which names the source: a path, or "live").
std::string report_body(const std::string& text, const std::string& first_line_prefix) {
  size_t at = text.find(first_line_prefix);
  if (at == std::string::npos) return "";
  size_t nl = text.find('\n', at);
  return nl == std::string::npos ? "" : text.substr(nl + 1);
}

TEST(Report, ReplayedRecordingReportsWhatTheLiveRunReported) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string db = dir.file("live.db");
  ProcessResult run = memtap(dir, {"run", "-o", db, "--", kAllocPattern});
  ASSERT_TRUE(run.exited && run.exit_code == 0) << describe(run) << run.err;
  ProcessResult report = memtap(dir, {"report", db});
  ASSERT_TRUE(report.exited && report.exit_code == 0) << describe(report) << report.err;

  const std::string live = report_body(run.err, "memtap report: live");
  const std::string replayed = report_body(report.out, "memtap report: " + db);
  ASSERT_FALSE(live.empty()) << "memtap run prints the report:\n" << run.err;
  EXPECT_NE(live.find("Allocated"), std::string::npos) << live;
  // The run's summary goes on after the report (where the file went): compare the report.
  EXPECT_EQ(live.substr(0, replayed.size()), replayed) << "live:\n"
                                                       << live << "\nreplayed:\n"
                                                       << replayed;

  ProcessResult replay = memtap(dir, {"replay", db, "--speed", "max"});
  ASSERT_TRUE(replay.exited && replay.exit_code == 0) << describe(replay) << replay.err;
  EXPECT_EQ(report_body(replay.out, "memtap report: " + db), replayed);
}

// `memtap run --compact`: integer rows with memscope_dump a view, read back by report to
// the same report the live run printed, and by SQL as msMemScope's rows.
TEST(Report, ACompactRecordingReportsWhatTheLiveRunReported) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string db = dir.file("compact.db");
  ProcessResult run = memtap(dir, {"run", "--compact", "-o", db, "--", kAllocPattern});
  ASSERT_TRUE(run.exited && run.exit_code == 0) << describe(run) << run.err;
  ProcessResult report = memtap(dir, {"report", db});
  ASSERT_TRUE(report.exited && report.exit_code == 0) << describe(report) << report.err;
  const std::string live = report_body(run.err, "memtap report: live");
  const std::string replayed = report_body(report.out, "memtap report: " + db);
  ASSERT_FALSE(replayed.empty()) << report.out;
  EXPECT_EQ(live.substr(0, replayed.size()), replayed) << "live:\n"
                                                       << live << "\nreplayed:\n"
                                                       << replayed;
  std::string error;
  auto file = DbQuery::open(db, &error);
  ASSERT_NE(file, nullptr) << error;
  DbRows type;
  ASSERT_TRUE(
      file->query("SELECT type FROM sqlite_master WHERE name = 'memscope_dump'", {}, &type, &error))
      << error;
  ASSERT_EQ(type.rows.size(), 1u);
  EXPECT_EQ(type.rows[0][0].text, "view");
  const int64_t rows = file->scalar_int("SELECT count(*) FROM memscope_dump");
  EXPECT_GT(rows, 0);
  EXPECT_EQ(rows, file->scalar_int("SELECT count(*) FROM memtap_event"));
  EXPECT_GT(file->scalar_int("SELECT count(*) FROM memscope_dump WHERE Event = 'MALLOC' AND "
                             "json_extract(Attr, '$.size') > 0"),
            0);
}

// `memtap export`: a compact recording copied into msMemScope's own table, row for row,
// which Insight's table lookup finds; the report of the copy is the report of the original.
TEST(Report, ExportGivesACompactRecordingMsMemScopesTable) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string compact = dir.file("compact.db");
  const std::string exported = dir.file("memscope_dump_20260101000000.db");
  ProcessResult run = memtap(dir, {"run", "--compact", "-o", compact, "--", kAllocPattern});
  ASSERT_TRUE(run.exited && run.exit_code == 0) << describe(run) << run.err;
  ProcessResult ex = memtap(dir, {"export", compact, "-o", exported});
  ASSERT_TRUE(ex.exited && ex.exit_code == 0) << describe(ex) << ex.err;
  EXPECT_EQ(ex.err.find("note:"), std::string::npos) << "the name is one Insight imports";

  std::string error;
  auto from = DbQuery::open(compact, &error);
  auto to = DbQuery::open(exported, &error);
  ASSERT_TRUE(from && to) << error;
  DbRows lookup;
  ASSERT_TRUE(to->query("SELECT name FROM sqlite_master WHERE type='table' AND name=?1",
                        {"memscope_dump"}, &lookup, &error))
      << error;
  EXPECT_EQ(lookup.rows.size(), 1u);
  DbRows a, b;
  const std::string all = "SELECT * FROM memscope_dump ORDER BY ID";
  ASSERT_TRUE(from->query(all, {}, &a, &error)) << error;
  ASSERT_TRUE(to->query(all, {}, &b, &error)) << error;
  ASSERT_GT(a.rows.size(), 0u);
  ASSERT_EQ(a.rows.size(), b.rows.size());
  EXPECT_EQ(a.columns, b.columns);
  for (size_t r = 0; r < a.rows.size(); ++r) {
    for (size_t c = 0; c < a.columns.size(); ++c) {
      ASSERT_EQ(a.rows[r][c].text, b.rows[r][c].text) << "row " << r << " " << a.columns[c];
      ASSERT_EQ(a.rows[r][c].type, b.rows[r][c].type) << "row " << r << " " << a.columns[c];
    }
  }
  EXPECT_EQ(to->scalar_int("SELECT count(*) FROM memtap_session"),
            from->scalar_int("SELECT count(*) FROM memtap_session"));

  ProcessResult r1 = memtap(dir, {"report", compact});
  ProcessResult r2 = memtap(dir, {"report", exported});
  ASSERT_TRUE(r1.exited && r1.exit_code == 0 && r2.exited && r2.exit_code == 0) << r1.err << r2.err;
  EXPECT_EQ(report_body(r1.out, "memtap report: " + compact),
            report_body(r2.out, "memtap report: " + exported));
}

TEST(Report, ExportOfSomethingElseSaysWhatIsWrong) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string text = dir.file("notes.db");
  std::ofstream(text) << "not a database\n";
  ProcessResult r = memtap(dir, {"export", text, "-o", dir.file("out.db")});
  EXPECT_TRUE(r.exited && r.exit_code == 1) << describe(r);
  EXPECT_NE(r.err.find(text), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("not a database"), std::string::npos) << r.err;
  EXPECT_FALSE(std::filesystem::exists(dir.file("out.db")));
  EXPECT_FALSE(std::filesystem::exists(dir.file("out.db.partial")));
  ProcessResult none = memtap(dir, {"export"});
  EXPECT_TRUE(none.exited && none.exit_code == 2) << describe(none);
}

TEST(Report, JsonOfAMemtapRecording) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string db = dir.file("j.db");
  ProcessResult run = memtap(dir, {"run", "-o", db, "--", kAllocPattern});
  ASSERT_TRUE(run.exited && run.exit_code == 0) << describe(run) << run.err;
  ProcessResult r = memtap(dir, {"report", "--json", db});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << describe(r) << r.err;
  ASSERT_FALSE(r.out.empty());
  EXPECT_EQ(r.out.front(), '{');
  EXPECT_NE(r.out.find("\"format\":\"memscope_dump\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"name\":\"App Reserved\""), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("\"devices\":[{"), std::string::npos) << r.out;
}

TEST(Report, EverySharedSampleFileOpensAndReports) {
  const std::string data = std::string(MEMTAP_SHARED_DATA_DIR) + "/msmemscope";
  DIR* d = opendir(data.c_str());
  if (!d) GTEST_SKIP() << data << " is not here";
  std::vector<std::string> files;
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (name.size() > 3 && (name.ends_with(".db") || name.ends_with(".csv"))) {
      files.push_back(data + "/" + name);
    }
  }
  closedir(d);
  ASSERT_GE(files.size(), 9u);
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  for (const std::string& file : files) {
    for (const char* mode : {"", "--json"}) {
      std::vector<std::string> args = {"report"};
      if (*mode) args.push_back(mode);
      args.push_back(file);
      ProcessResult r = memtap(dir, args);
      EXPECT_TRUE(r.exited && r.exit_code == 0) << file << ": " << describe(r) << "\n" << r.err;
      EXPECT_FALSE(r.out.empty()) << file;
    }
  }
}

// --low-memory streams the file in time order in batches instead of holding it; the
// report must not change (a memtap recording, and msMemScope's files whose rows are not
// in time order).
TEST(Report, LowMemoryReadingReportsTheSame) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string db = dir.file("lm.db");
  ProcessResult run = memtap(dir, {"run", "-o", db, "--", kAllocPattern});
  ASSERT_TRUE(run.exited && run.exit_code == 0) << describe(run) << run.err;
  std::vector<std::string> files = {db};
  // msMemScope's own files, where the checkout has shared/ beside it (as the sample-file
  // tests do); memtap's own recording is compared either way.
  const std::string data = std::string(MEMTAP_SHARED_DATA_DIR) + "/msmemscope/";
  if (std::filesystem::is_directory(data)) {
    files.push_back(data + "msinsight__memscope_dump_20260527062213.db");
    files.push_back(data +
                    "msmemscope__test_smoke_testfile_csvfile_memscope_dump_20250428113810.csv");
  }
  for (const std::string& file : files) {
    ProcessResult held = memtap(dir, {"report", "--json", file});
    ProcessResult streamed = memtap(dir, {"report", "--json", "--low-memory", file});
    ProcessResult replayed = memtap(dir, {"replay", "--json", "--low-memory", file});
    ASSERT_TRUE(held.exited && held.exit_code == 0) << file << describe(held) << held.err;
    EXPECT_NE(held.out.find("\"devices\":[{"), std::string::npos) << file << held.out;
    EXPECT_EQ(streamed.out, held.out) << file << streamed.err;
    EXPECT_EQ(replayed.out, held.out) << file << replayed.err;
  }
}

// Page-locked host memory is the host's Allocated in either spelling msMemScope has used:
// HOST_PINNED on "cpu" (the msinsight database) and, in its 2025 files, HAL on "host" for
// the same blocks (the smoke CSV). The host's section then says which layers its curves
// are made of; a HAL FREE of no device that matched nothing frees none of them.
TEST(Report, PinnedHostMemoryOfEitherSpellingIsTheHostsAllocated) {
  const std::string data = std::string(MEMTAP_SHARED_DATA_DIR) + "/msmemscope/";
  if (!std::filesystem::is_directory(data)) GTEST_SKIP() << data << " is absent";
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  // The lines of the report's section that begins with `heading`.
  auto section = [&](const std::string& file, const std::string& heading) {
    ProcessResult r = memtap(dir, {"report", data + file});
    EXPECT_TRUE(r.exited && r.exit_code == 0) << file << describe(r) << r.err;
    std::vector<std::string> lines;
    bool in = false;
    for (const std::string& line : split_lines(r.out)) {
      if (line.rfind(heading, 0) == 0)
        in = true;
      else if (in && line.empty())
        break;
      if (in) lines.push_back(line);
    }
    EXPECT_FALSE(lines.empty()) << "no section " << heading << " in\n" << r.out;
    return lines;
  };
  auto has_line = [](const std::vector<std::string>& lines, const std::string& start) {
    return std::any_of(lines.begin(), lines.end(),
                       [&](const std::string& l) { return l.rfind(start, 0) == 0; });
  };
  const std::vector<std::string> old_csv =
      section("msmemscope__test_smoke_testfile_csvfile_memscope_dump_20250428113810.csv",
              "  pid 2523740, host:");
  EXPECT_TRUE(has_line(old_csv, "    Allocated     peak   10.8 MiB")) << old_csv.size();
  EXPECT_TRUE(has_line(old_csv, "    Layer HAL           peak   10.8 MiB"));
  EXPECT_TRUE(has_line(old_csv, "    Peak: 10.8 MiB"));
  const std::vector<std::string> other =
      section("msmemscope__test_smoke_testfile_csvfile_memscope_dump_20250428113810.csv",
              "  pid 2523738, host:");
  EXPECT_TRUE(has_line(other, "    Allocated     peak    4.0 KiB at +9.586 s     final 4.0 KiB"));
  EXPECT_TRUE(has_line(other, "    Leaks: no step markers; live at the end"));
  const std::vector<std::string> db =
      section("msinsight__memscope_dump_20260527062213.db", "  pid 1116991, host:");
  EXPECT_TRUE(has_line(db, "    Allocated     peak   21.6 MiB"));
  EXPECT_TRUE(has_line(db, "    Layer HOST_PINNED   peak   21.6 MiB"));
}

// A torch_npu profile's memory_record.csv samples the caching allocator (PTA) and the graph
// engine (GE) apart: the device's Reserved is both pools, 8664 + 242 MiB at the end of the
// MindStudio Insight sample, in the curves and in the fragmentation alike.
TEST(Report, ATorchNpuProfileCountsTheGraphEnginesPoolWithPtas) {
  const std::string file =
      std::string(MEMTAP_SHARED_DATA_DIR) + "/msmemscope/msinsight__test_rank_0__memory_record.csv";
  if (!std::filesystem::exists(file)) GTEST_SKIP() << file << " is absent";
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  ProcessResult r = memtap(dir, {"report", file});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << describe(r) << r.err;
  EXPECT_NE(r.out.find("    Reserved      peak    8.7 GiB at +0.326 s     final 8.7 GiB\n"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("    Fragmentation: worst at +0.351 s: reserved 8.7 GiB, allocated 4.5 GiB"),
            std::string::npos)
      << r.out;
}

TEST(Report, BrokenFilesGiveOneLineNamingTheFile) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string text = dir.file("notes.txt");
  std::ofstream(text) << "these are not memory events\n";
  const std::string empty = dir.file("empty.db");
  std::ofstream(empty).close();
  const std::string no_table = dir.file("other.db");
  {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(no_table.c_str(), &db), SQLITE_OK);
    sqlite3_exec(db, "CREATE TABLE something(x)", nullptr, nullptr, nullptr);
    sqlite3_close(db);
  }
  // The first half of a real recording: cut where a crash or a full disk would cut it.
  const std::string whole = dir.file("whole.db");
  ProcessResult run = memtap(dir, {"run", "-o", whole, "--", kAllocPattern});
  ASSERT_TRUE(run.exited && run.exit_code == 0) << run.err;
  const std::string truncated = dir.file("truncated.db");
  {
    std::ifstream in(whole, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::ofstream(truncated, std::ios::binary) << bytes.substr(0, bytes.size() / 2);
  }
  for (const std::string& file :
       {text, empty, no_table, truncated, dir.file("does_not_exist.db")}) {
    ProcessResult r = memtap(dir, {"report", file});
    ASSERT_TRUE(r.exited) << file << ": " << describe(r);
    EXPECT_NE(r.exit_code, 0) << file;
    EXPECT_NE(r.err.find(file), std::string::npos) << "names the file: " << r.err;
    EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "one line: " << r.err;
    EXPECT_TRUE(r.out.empty()) << file << ": no report for a broken file";
  }
}

// The largest pid a file can name (its Process Id is untrusted) is a process like any
// other: `memtap report` of such a file crashed.
TEST(Report, TheLargestProcessIdIsReportedLikeAnyOther) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string path = dir.file("memscope_dump_20260101000001.db");
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  const std::string sql =
      std::string(kCreateMemscopeDumpSql) + ";" +
      "INSERT INTO memscope_dump VALUES (1, 'MALLOC', 'HOST', 'N/A', 1000, 4294967295, "
      "4294967295, 'cpu', '0x0000000000001000', "
      "'{\"allocation_id\":\"1\",\"addr\":\"0x0000000000001000\",\"size\":\"4096\"}', '', '');"
      "INSERT INTO memscope_dump VALUES (2, 'MALLOC', 'HOST', 'N/A', 2000, 4294967295, "
      "4294967295, 'cpu', '0x0000000000003000', "
      "'{\"allocation_id\":\"2\",\"addr\":\"0x0000000000003000\",\"size\":\"1024\"}', '', '');";
  ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);
  // Text, then JSON: the process, and its 5 KiB live.
  for (const auto& [args, live] :
       {std::pair<std::vector<std::string>, std::string>{{"report", path}, "5.0 KiB allocated"},
        {{"report", "--json", path}, "5120"}}) {
    ProcessResult r = memtap(dir, args);
    ASSERT_TRUE(r.exited) << describe(r);
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_NE(r.out.find("4294967295"), std::string::npos) << r.out;
    EXPECT_NE(r.out.find(live), std::string::npos) << r.out;
  }
}

// A recording with step markers and an owner whose live bytes grow 40 MiB a step (as
// examples/train_leak.py will make once the Python API exists): the report names it.
TEST(Report, NamesTheOwnerThatGrowsStepAfterStep) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string path = dir.file("memscope_dump_20260101000000.db");
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  std::string sql = std::string(kCreateMemscopeDumpSql) + ";";
  int64_t id = 0, t = 1'700'000'000'000'000'000;
  auto row = [&](const char* event, const char* type, const std::string& ptr,
                 const std::string& attr) {
    char buf[512];
    snprintf(buf, sizeof buf,
             "INSERT INTO memscope_dump VALUES (%lld,'%s','%s','N/A',%lld,7,7,'cpu','%s','%s',"
             "'train.py(12): step','');",
             (long long)id++, event, type, (long long)(t += 1'000'000), ptr.c_str(), attr.c_str());
    sql += buf;
  };
  row("SYSTEM", "START_TRACE", "N/A", "");
  const int64_t kLeak = 40ll << 20;
  for (int step = 0; step < 10; ++step) {
    row("SYSTEM", "STEP", "N/A", "");
    char ptr[32], attr[256];
    // A steady 8 MiB activation, allocated and freed every step.
    snprintf(ptr, sizeof ptr, "0x%016llx", 0x100000000ull);
    snprintf(attr, sizeof attr,
             "{\"allocation_id\":\"%d\",\"addr\":\"%s\",\"size\":\"8388608\",\"owner\":"
             "\"activations\"}",
             2 * step + 1, ptr);
    row("MALLOC", "HOST", ptr, attr);
    row("FREE", "HOST", ptr, attr);
    // The leak: kept forever.
    snprintf(ptr, sizeof ptr, "0x%016llx", 0x200000000ull + uint64_t(step) * uint64_t(kLeak));
    snprintf(attr, sizeof attr,
             "{\"allocation_id\":\"%d\",\"addr\":\"%s\",\"size\":\"%lld\",\"owner\":"
             "\"leaks_mem\"}",
             2 * step + 2, ptr, (long long)kLeak);
    row("MALLOC", "HOST", ptr, attr);
  }
  row("SYSTEM", "STOP_TRACE", "N/A", "");
  ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, nullptr), SQLITE_OK);
  sqlite3_close(db);

  ProcessResult r = memtap(dir, {"report", path});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << describe(r) << r.err;
  EXPECT_NE(r.out.find("owner leaks_mem: +40.0 MiB per step"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("owner activations: +"), std::string::npos) << r.out;
}

}  // namespace
}  // namespace memtap::e2e
