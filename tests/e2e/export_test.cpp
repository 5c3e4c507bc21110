// `memtap export` and `memtap import` on real recordings and the shared sample files: every
// format read back by `memtap report` gives the figures the input gave, as far as the format
// carries them; the profiler CSVs have the samples' headers byte for byte; mistakes are one
// line each and leave no file behind.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <optional>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "tests/e2e/db_query.h"
#include "tests/e2e/e2e_support.h"
#include "tests/programs/alloc_pattern.h"

namespace memtap::e2e {
namespace {

const std::string kCudaProgram = MEMTAP_TEST_CUDA_POOL;
const std::string kFakeCudaDir = MEMTAP_FAKE_CUDA_LIB_DIR;
const std::string kSamples = std::string(MEMTAP_SHARED_DATA_DIR) + "/msmemscope";
constexpr const char* kPython = "/usr/bin/python3";
const std::string kMemoryVizCheck = MEMTAP_MEMORY_VIZ_CHECK;

ProcessResult memtap(const TempDir& dir, std::vector<std::string> args) {
  args.insert(args.begin(), kMemtapBin);
  return run_process(spec_in(dir, args), kProcessTimeout);
}

// `memtap run -o db -- ARGV`, with the stand-in CUDA libraries found first.
void record(const TempDir& dir, const std::string& db, const std::vector<std::string>& argv) {
  std::vector<std::string> cmd = {kMemtapBin, "run", "-o", db, "--"};
  cmd.insert(cmd.end(), argv.begin(), argv.end());
  ProcessSpec spec = spec_in(dir, cmd);
  spec.env_set.push_back("LD_LIBRARY_PATH=" + kFakeCudaDir);
  spec.env_set.push_back("MEMTAP_FAKE_CUDA_DEVICES=1");
  spec.env_set.push_back("MEMTAP_FAKE_CUDA_CAPACITY=" + std::to_string(256 << 20));
  spec.env_unset.push_back("PYTHONPATH");
  const ProcessResult r = run_process(spec, kProcessTimeout);
  ASSERT_TRUE(r.exited && r.exit_code == 0) << describe(r) << "\n" << r.err;
}

void expect_exported(const TempDir& dir, const std::vector<std::string>& args) {
  std::vector<std::string> all = {"export"};
  all.insert(all.end(), args.begin(), args.end());
  const ProcessResult r = memtap(dir, all);
  EXPECT_TRUE(r.exited && r.exit_code == 0) << describe(r) << "\n" << r.err;
}

std::string report_json(const TempDir& dir, const std::string& file) {
  const ProcessResult r = memtap(dir, {"report", "--json", file});
  EXPECT_TRUE(r.exited && r.exit_code == 0) << file << ": " << describe(r) << "\n" << r.err;
  return r.out;
}

// The report's "devices", as SQLite's json() writes it: two reports' devices compare as
// text, every figure of every device (curves, layers, pool, peak, leaks and steps, ...).
std::string devices_of(const std::string& json) {
  std::string error;
  auto q = DbQuery::open(":memory:", &error);
  DbRows rows;
  if (!q || !q->query("SELECT json(json_extract(?1, '$.devices'))", {json}, &rows, &error) ||
      rows.rows.size() != 1) {
    ADD_FAILURE() << error << "\n" << json.substr(0, 500);
    return "";
  }
  return rows.rows[0][0].text;
}

// The part of a report at `path` ("$.torch_snapshot"), as SQLite's json() writes it.
std::string json_part(const std::string& json, const std::string& path) {
  std::string error;
  auto q = DbQuery::open(":memory:", &error);
  DbRows rows;
  if (!q || !q->query("SELECT json(json_extract(?1, ?2))", {json, path}, &rows, &error) ||
      rows.rows.size() != 1) {
    ADD_FAILURE() << error << "\n" << json.substr(0, 500);
    return "";
  }
  return rows.rows[0][0].text;
}

// memory_viz_check.py's reading of snapshots as PyTorch's memory viewer reads them: the JSON
// summary of each, in order, or none after a failure naming the file and the problem. One run
// for many files: each run imports torch, seconds of a test's time.
std::vector<std::string> memory_viz_summaries(const TempDir& dir,
                                              const std::vector<std::string>& snapshots) {
  std::vector<std::string> args = {kPython, kMemoryVizCheck};
  args.insert(args.end(), snapshots.begin(), snapshots.end());
  ProcessSpec spec = spec_in(dir, args);
  spec.env_unset.push_back("PYTHONPATH");
  const ProcessResult r = run_process(spec, kProcessTimeout);
  EXPECT_TRUE(r.exited && r.exit_code == 0) << describe(r) << "\n" << r.err;
  if (!r.exited || r.exit_code != 0) return {};
  std::vector<std::string> summaries = split_lines(r.out);
  EXPECT_EQ(summaries.size(), snapshots.size()) << r.out;
  return summaries;
}

std::string memory_viz_summary(const TempDir& dir, const std::string& snapshot) {
  const std::vector<std::string> summaries = memory_viz_summaries(dir, {snapshot});
  return summaries.size() == 1 ? summaries[0] : "";
}

// A number in memory_viz_check's summary at `path` ("$.actions.alloc"); -1 if absent.
int64_t summary_count(const std::string& json, const std::string& path) {
  const std::string text = json_part(json, path);
  return text.empty() ? -1 : std::stoll(text);
}

// One device of a report, by its label ("host", "device 0") and, if given, its process:
// "allocations", "frees", "pool", and "<curve> peak" / "<curve> final" for each curve.
std::map<std::string, std::string> device_figures(const std::string& json,
                                                  const std::string& device,
                                                  std::optional<std::string> pid = {}) {
  std::map<std::string, std::string> out;
  std::string error;
  auto q = DbQuery::open(":memory:", &error);
  DbRows rows;
  const bool ok =
      q && q->query(
               "SELECT json_extract(c.value, '$.name'), json_extract(c.value, '$.peak_bytes'), "
               "json_extract(c.value, '$.final_bytes'), json_extract(d.value, "
               "'$.allocations'), json_extract(d.value, '$.frees'), "
               "json_extract(d.value, '$.pool.source') "
               "FROM json_each(json_extract(?1, '$.devices')) d, "
               "json_each(json_extract(d.value, '$.curves')) c "
               "WHERE json_extract(d.value, '$.device') = ?2 AND "
               "(?3 = '' OR json_extract(d.value, '$.pid') = CAST(?3 AS INTEGER))",
               {json, device, pid.value_or("")}, &rows, &error);
  EXPECT_TRUE(ok) << error;
  for (const auto& r : rows.rows) {
    out[r[0].text + " peak"] = r[1].text;
    out[r[0].text + " final"] = r[2].text;
    out["allocations"] = r[3].text;
    out["frees"] = r[4].text;
    out["pool"] = r[5].text;
  }
  EXPECT_FALSE(out.empty()) << "no " << device << " in the report:\n" << json.substr(0, 2000);
  return out;
}

std::string first_line(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::string line;
  std::getline(in, line);
  return line;
}

// A profiler CSV as rows of fields by column name. Its fields hold no quotes (memtap writes
// none into these files unless an operator's name needs them, and these runs have none).
struct CsvFile {
  std::vector<std::string> header;
  std::vector<std::map<std::string, std::string>> rows;
};

std::vector<std::string> split_fields(const std::string& line) {
  std::vector<std::string> fields;
  std::stringstream in(line);
  std::string field;
  while (std::getline(in, field, ',')) fields.push_back(field);
  if (!line.empty() && line.back() == ',') fields.emplace_back();
  return fields;
}

CsvFile read_csv(const std::string& path) {
  CsvFile csv;
  std::ifstream in(path);
  std::string line;
  if (!std::getline(in, line)) {
    ADD_FAILURE() << path << " is empty";
    return csv;
  }
  csv.header = split_fields(line);
  while (std::getline(in, line)) {
    const std::vector<std::string> fields = split_fields(line);
    EXPECT_EQ(fields.size(), csv.header.size()) << path << ": " << line;
    auto& row = csv.rows.emplace_back();
    for (size_t i = 0; i < fields.size() && i < csv.header.size(); ++i)
      row[csv.header[i]] = fields[i];
  }
  return csv;
}

// A cell torch_npu writes with a tab after it.
std::string untabbed(std::string cell) {
  EXPECT_TRUE(cell.empty() || cell.back() == '\t') << "'" << cell << "'";
  if (!cell.empty() && cell.back() == '\t') cell.pop_back();
  return cell;
}

// An exact decimal of MB (as memtap writes them) in bytes.
int64_t mb_bytes(const std::string& text) {
  return std::llround(std::stold(text) * 1048576.0L);
}

// The pids of the recording's processes, in the order they started.
std::vector<std::string> pids_of(const std::string& db) {
  std::string error;
  auto q = DbQuery::open(db, &error);
  DbRows rows;
  EXPECT_TRUE(q && q->query("SELECT pid FROM memtap_session ORDER BY start_ns", {}, &rows, &error))
      << error;
  std::vector<std::string> pids;
  for (const auto& r : rows.rows) pids.push_back(r[0].text);
  return pids;
}

int64_t scalar(const std::string& db, const std::string& sql) {
  std::string error;
  auto q = DbQuery::open(db, &error);
  EXPECT_TRUE(q) << error;
  return q ? q->scalar_int(sql) : -1;
}

// A recording through msMemScope's CSV reports what the recording reports, and so does the
// CSV made a database again; the CSV is spelled as msMemScope's own (its header, and Attr in
// the {key:value} form its tools search).
void expect_csv_round_trip(const TempDir& dir, const std::string& db) {
  const std::string csv = db + ".csv", again = db + ".again.db";
  expect_exported(dir, {db, "--format", "msmemscope-csv", "-o", csv});
  expect_exported(dir, {csv, "-o", again});
  const std::string want = devices_of(report_json(dir, db));
  ASSERT_FALSE(want.empty());
  EXPECT_EQ(devices_of(report_json(dir, csv)), want) << "through " << csv;
  EXPECT_EQ(devices_of(report_json(dir, again)), want) << "through " << again;

  EXPECT_EQ(first_line(csv), first_line(kSamples + "/msmemscope__example_compare_baseline.csv"));
  std::ifstream in(csv);
  std::string text((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find(",MALLOC,HOST,N/A,"), std::string::npos);
  EXPECT_NE(text.find(",\"{allocation_id:"), std::string::npos) << text.substr(0, 1000);
  EXPECT_EQ(scalar(again, "SELECT count(*) FROM memscope_dump"),
            scalar(db, "SELECT count(*) FROM memscope_dump"));
}

TEST(Export, AProgramsRecordingReportsTheSameThroughMsMemScopesCsv) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string db = dir.file("pattern.db");
  record(dir, db, {kAllocPattern});
  expect_csv_round_trip(dir, db);
}

// A GPU's pool: PTA blocks with their pool figures, a free pending on another stream and
// its FREE_COMPLETED, pool SNAPSHOTs, an OOM and the blocks live at it.
TEST(Export, APoolRecordingReportsTheSameThroughMsMemScopesCsv) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string db = dir.file("pool.db");
  record(dir, db, {kCudaProgram, "caching"});
  expect_csv_round_trip(dir, db);
}

// Steps, owners and the leak they show (examples/train_leak.py: the owner leaks_mem).
TEST(Export, ATrainingRunsStepsAndLeakReportTheSameThroughMsMemScopesCsv) {
  if (access(kPython, X_OK) != 0) GTEST_SKIP() << kPython << " is not installed";
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  // A training loop's shape without torch's million allocations (examples/train_leak.py
  // made this test take 45 s): four steps, activations freed each step, a leak kept.
  const std::string script = dir.file("train.py");
  std::ofstream(script) << R"(
import memtap
kept = []
for step in range(4):
    memtap.step()
    with memtap.owner("activations"):
        acts = bytearray(6 << 20)
    with memtap.owner("leaks_mem"):
        kept.append(bytearray(2 << 20))
    del acts
)";
  const std::string db = dir.file("train.db");
  record(dir, db, {kPython, script});
  const std::string json = report_json(dir, db);
  ASSERT_NE(json.find("\"steps\":4"), std::string::npos) << json.substr(0, 3000);
  ASSERT_NE(json.find("\"key\":\"leaks_mem\""), std::string::npos);
  expect_csv_round_trip(dir, db);
}

// msMemScope's own CSVs into databases (Insight's name, its table), reporting the same; the
// rows memtap's format has no place for (an old file's "acl init") are left out and said.
TEST(Export, MsMemScopesCsvsImportToDatabasesThatReportTheSame) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  int samples = 0;
  for (const auto& entry : std::filesystem::directory_iterator(kSamples)) {
    const std::string name = entry.path().filename().string();
    if (name.rfind("msmemscope__", 0) != 0 || !name.ends_with(".csv")) continue;
    ++samples;
    const std::string db =
        dir.file("memscope_dump_2025042811381" + std::to_string(samples) + ".db");
    const ProcessResult r = memtap(dir, {"import", entry.path().string(), "-o", db});
    ASSERT_TRUE(r.exited && r.exit_code == 0) << name << ": " << describe(r) << "\n" << r.err;
    EXPECT_EQ(r.err.find("MindStudio Insight imports only"), std::string::npos) << r.err;
    const bool old_style = name.find("smoke") != std::string::npos;
    EXPECT_EQ(r.err.find("left out 2 events") != std::string::npos, old_style) << name << r.err;
    // What the old file's times count from is its first row, "acl init", which the import
    // leaves out (said above): the database's count from its first allocation instead.
    auto same_but_origin = [&](std::string json) {
      return old_style ? std::regex_replace(json, std::regex("\"origin_ns\":[0-9]+,"), "") : json;
    };
    EXPECT_EQ(same_but_origin(devices_of(report_json(dir, db))),
              same_but_origin(devices_of(report_json(dir, entry.path()))))
        << name;
    std::string error;
    auto q = DbQuery::open(db, &error);
    ASSERT_TRUE(q) << error;
    EXPECT_EQ(q->scalar_int("SELECT count(*) FROM sqlite_master WHERE type = 'table' AND "
                            "name = 'memscope_dump'"),
              1);
    EXPECT_EQ(q->scalar_int("SELECT count(*) FROM memtap_meta WHERE key = 'complete' AND "
                            "value = '1'"),
              1);
    EXPECT_EQ(q->scalar_int("SELECT count(*) FROM memtap_meta WHERE key = 'exported_from'"), 1);
  }
  EXPECT_EQ(samples, 4);
}

// operator_memory.csv of a GPU pool: torch_npu's header, one row per PTA block (the blocks
// Allocated counts), the pending free's active release after its release, and read back the
// same Allocated curve and Reserved peak; on the host, its heap blocks.
// msMemScope's own database has no memtap_meta, and reads as finished; its copy must too (it
// read as a recording whose monitor stopped, with advice to 'memtap recover' it that failed).
TEST(Export, ACopyOfMsMemScopesDatabaseIsAsFinishedAsItIs) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string in = kSamples + "/msinsight__memscope_dump_20260527062213.db";
  const std::string out = dir.file("memscope_dump_20260527062214.db");
  expect_exported(dir, {in, "-o", out});
  const ProcessResult r = memtap(dir, {"report", out});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << describe(r) << "\n" << r.err;
  EXPECT_EQ(r.out.find("not finished"), std::string::npos) << r.out;
  EXPECT_EQ(devices_of(report_json(dir, out)), devices_of(report_json(dir, in)));
}

TEST(Export, OperatorMemoryOfAPoolRecordingReadsBackToItsCurves) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string db = dir.file("pool.db"), out = dir.file("operator_memory.csv");
  record(dir, db, {kCudaProgram, "caching"});
  expect_exported(dir, {db, "--format", "operator-memory", "-o", out});
  EXPECT_EQ(first_line(out), first_line(kSamples + "/msinsight__test_rank_1__operator_memory.csv"));

  const CsvFile csv = read_csv(out);
  int device_rows = 0, pending = 0, unfreed = 0;
  for (const auto& row : csv.rows) {
    if (row.at("Device Type") != "NPU:0") continue;
    ++device_rows;
    ASSERT_FALSE(row.at("Allocation Time(us)").empty());
    EXPECT_EQ(row.at("Allocation Total Allocated(MB)").empty(), false);
    if (row.at("Release Time(us)").empty()) {
      ++unfreed;
      EXPECT_EQ(row.at("Release Total Reserved(MB)"), "");
      continue;
    }
    const long double release = std::stold(untabbed(row.at("Release Time(us)")));
    const long double active = std::stold(untabbed(row.at("Active Release Time(us)")));
    EXPECT_GE(active, release);
    if (active > release) ++pending;
  }
  EXPECT_EQ(device_rows, scalar(db,
                                "SELECT count(*) FROM memscope_dump WHERE Event = 'MALLOC' AND "
                                "\"Event Type\" = 'PTA'"));
  EXPECT_EQ(pending, 1) << "the free that waited for another stream";
  EXPECT_EQ(unfreed, scalar(db,
                            "SELECT count(*) FROM memscope_dump m WHERE Event = 'MALLOC' AND "
                            "\"Event Type\" = 'PTA' AND NOT EXISTS (SELECT 1 FROM "
                            "memscope_dump f WHERE f.Event = 'FREE' AND f.Ptr = m.Ptr AND "
                            "f.\"Event Type\" = 'PTA' AND f.ID > m.ID)"));

  const std::string recorded = report_json(dir, db), read_back = report_json(dir, out);
  auto want = device_figures(recorded, "device 0"), got = device_figures(read_back, "device 0");
  for (const char* figure : {"Allocated peak", "Allocated final", "Reserved peak"}) {
    EXPECT_EQ(got[figure], want[figure]) << figure;
  }
  EXPECT_EQ(got["allocations"], std::to_string(device_rows));
  want = device_figures(recorded, "host");
  got = device_figures(read_back, "host");
  for (const char* figure : {"Allocated peak", "Allocated final"}) {
    EXPECT_EQ(got[figure], want[figure]) << "host " << figure;
  }
}

// A fork child frees the block it inherited: freed but never seen allocated, a negative size
// with empty allocation columns. Without --pid the two processes cannot share the file.
TEST(Export, OperatorMemoryOfOneProcessKeepsTheBlockItFreedButNeverAllocated) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string db = dir.file("pattern.db"), out = dir.file("child.csv");
  record(dir, db, {kAllocPattern});
  const std::vector<std::string> pids = pids_of(db);
  ASSERT_EQ(pids.size(), 2u);
  const ProcessResult both = memtap(dir, {"export", db, "--format", "operator-memory", "-o", out});
  EXPECT_TRUE(both.exited && both.exit_code == 1) << describe(both);
  EXPECT_EQ(split_lines(both.err).size(), 1u) << both.err;
  EXPECT_NE(both.err.find(db), std::string::npos) << both.err;
  EXPECT_NE(both.err.find("pids " + pids[0] + ", " + pids[1]), std::string::npos) << both.err;
  EXPECT_NE(both.err.find("--pid"), std::string::npos) << both.err;
  EXPECT_FALSE(std::filesystem::exists(out));
  EXPECT_FALSE(std::filesystem::exists(out + ".partial"));

  expect_exported(dir, {db, "--format", "operator-memory", "--pid", pids[1], "-o", out});
  const CsvFile csv = read_csv(out);
  int inherited = 0;
  for (const auto& row : csv.rows) {
    if (row.at("Size(KB)")[0] != '-') continue;
    ++inherited;
    EXPECT_EQ(std::stold(row.at("Size(KB)")) * 1024, -AP_INHERITED_BYTES);
    for (const char* column : {"Allocation Time(us)", "Duration(us)",
                               "Allocation Total Allocated(MB)", "Allocation Total Reserved(MB)"}) {
      EXPECT_EQ(row.at(column), "") << column;
    }
    EXPECT_FALSE(row.at("Release Time(us)").empty());
    EXPECT_EQ(row.at("Device Type"), "CPU");
  }
  EXPECT_EQ(inherited, 1);
  const std::string read_back = report_json(dir, out);
  auto want = device_figures(report_json(dir, db), "host", pids[1]);
  auto got = device_figures(read_back, "host");
  for (const char* figure : {"frees", "Allocated peak", "Allocated final"}) {
    EXPECT_EQ(got[figure], want[figure]) << figure;
  }
}

// memory_record.csv: torch_npu's header; the pool's rows (Component PTA on NPU:0) read back
// to the recording's Allocated and Reserved; the host's rows hold its curves.
TEST(Export, MemoryRecordOfAPoolRecordingReadsBackToItsCurves) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string db = dir.file("pool.db"), out = dir.file("memory_record.csv");
  record(dir, db, {kCudaProgram, "caching"});
  expect_exported(dir, {db, "--format", "memory-record", "-o", out});
  EXPECT_EQ(first_line(out), first_line(kSamples + "/msinsight__test_rank_1__memory_record.csv"));

  const std::string recorded = report_json(dir, db);
  auto want = device_figures(recorded, "device 0");
  auto got = device_figures(report_json(dir, out), "device 0");
  for (const char* figure :
       {"Allocated peak", "Allocated final", "Reserved peak", "Reserved final"}) {
    EXPECT_EQ(got[figure], want[figure]) << figure;
  }
  int64_t host_peak = 0, pta_rows = 0;
  for (const auto& row : read_csv(out).rows) {
    untabbed(row.at("Timestamp(us)"));
    if (row.at("Device Type") == "CPU") {
      EXPECT_EQ(row.at("Component"), "HOST");
      host_peak = std::max(host_peak, mb_bytes(row.at("Total Allocated(MB)")));
    } else if (row.at("Component") == "PTA") {
      EXPECT_EQ(row.at("Device Type"), "NPU:0");
      ++pta_rows;
    }
  }
  EXPECT_GT(pta_rows, 0);
  EXPECT_EQ(std::to_string(host_peak), device_figures(recorded, "host")["Allocated peak"]);
}

TEST(Export, DefaultOutputsAreNamedForTheirFormatAndTime) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string db = dir.file("pattern.db");
  record(dir, db, {kAllocPattern});
  const std::string pid = pids_of(db)[0];
  for (const std::string format : {"msmemscope-csv", "operator-memory", "memory-record"}) {
    ProcessSpec spec = spec_in(dir, {kMemtapBin, "export", db, "--format", format, "--pid", pid});
    spec.cwd = dir.path();
    const ProcessResult r = run_process(spec, kProcessTimeout);
    EXPECT_TRUE(r.exited && r.exit_code == 0) << format << ": " << describe(r) << r.err;
  }
  std::vector<std::string> made;
  for (const std::string& name : dir.entries()) {
    if (name.ends_with(".csv")) made.push_back(name.substr(0, name.size() - 18));
    if (name.ends_with(".csv")) {
      const std::string time = name.substr(name.size() - 18, 14);
      EXPECT_EQ(time.find_first_not_of("0123456789"), std::string::npos) << name;
    }
  }
  EXPECT_EQ(made,
            (std::vector<std::string>{"memory_record_", "memscope_dump_", "operator_memory_"}));
}

// Mistakes: one line each, exit 2 for the command line and 1 for the file, which the line
// names; no output and no .partial left behind.
TEST(Export, MistakesAreOneLineAndLeaveNothingBehind) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string out = dir.file("out.csv");
  // A mistake on the command line points to the help on a second line.
  const auto expect_refused = [&](const std::vector<std::string>& args, int code,
                                  const std::vector<std::string>& said, bool usage = false) {
    const ProcessResult r = memtap(dir, args);
    EXPECT_TRUE(r.exited && r.exit_code == code) << args[1] << ": " << describe(r) << r.err;
    EXPECT_EQ(split_lines(r.err).size(), usage ? 2u : 1u) << r.err;
    if (usage) {
      EXPECT_EQ(split_lines(r.err).back(), "see memtap " + args[0] + " --help");
    }
    for (const std::string& words : said) EXPECT_NE(r.err.find(words), std::string::npos) << r.err;
    EXPECT_FALSE(std::filesystem::exists(out));
    EXPECT_FALSE(std::filesystem::exists(out + ".partial"));
  };
  const std::string garbage = dir.file("notes.csv");
  std::ofstream(garbage) << "hello, world\nnot, a recording\n";
  const std::string missing = dir.file("missing.csv");
  expect_refused({"export", garbage, "--format", "xml", "-o", out}, 2,
                 {"'xml'", "msmemscope-db, msmemscope-csv, operator-memory, memory-record"}, true);
  expect_refused({"export", "--format", "operator-memory"}, 2, {"no recording given"}, true);
  expect_refused({"export", garbage, "--pid", "x"}, 2, {"--pid"}, true);
  expect_refused({"export", missing, "--format", "msmemscope-csv", "-o", out}, 1,
                 {missing, "No such file"});
  expect_refused({"export", garbage, "--format", "memory-record", "-o", out}, 1,
                 {garbage, "not a recording"});
  expect_refused({"import", garbage, "-o", out}, 1, {garbage, "not a recording"});
  expect_refused({"import", "-o", out}, 2, {"no file given"}, true);

  // A CSV with a row it cannot read: exported without it, and said.
  const std::string damaged = dir.file("damaged.csv");
  std::ofstream(damaged) << first_line(kSamples + "/msmemscope__example_compare_baseline.csv")
                         << "\n1,SYSTEM,START_TRACE,N/A,1000,7,7,N/A,N/A,,,\n"
                         << "2,MALLOC,HOST,N/A,2000,7,7,cpu,0xzz,,,\n";
  const ProcessResult partly =
      memtap(dir, {"export", damaged, "--format", "msmemscope-csv", "-o", out});
  EXPECT_TRUE(partly.exited && partly.exit_code == 0) << describe(partly) << partly.err;
  EXPECT_NE(partly.err.find("1 of 2 rows skipped"), std::string::npos) << partly.err;
  EXPECT_NE(partly.err.find("line 3"), std::string::npos) << partly.err;
  std::filesystem::remove(out);

  const std::string db = dir.file("pattern.db");
  record(dir, db, {kAllocPattern});
  expect_refused({"import", db, "-o", out}, 2, {db, "memtap export"});
  expect_refused({"export", db, "--format", "msmemscope-csv", "--pid", "1", "-o", out}, 1,
                 {db, "no events of process 1"});
  expect_refused({"export", db, "--format", "torch-snapshot", "-o", dir.file("out.pickle")}, 1,
                 {db, "no accelerator memory to export"});
  const ProcessResult same = memtap(dir, {"export", db, "--format", "msmemscope-csv", "-o", db});
  EXPECT_TRUE(same.exited && same.exit_code == 1) << describe(same);
  EXPECT_NE(same.err.find("would replace the input"), std::string::npos) << same.err;
  EXPECT_GT(scalar(db, "SELECT count(*) FROM memscope_dump"), 0) << "the input is intact";
}

// Every PyTorch snapshot sample imported into a database and exported to msMemScope's CSV:
// both report what the pickle itself reports (the curves, the pool, the peak and what was
// live at the end, by owner, operator and stack). Exported to a snapshot again, it reports
// the same memory figures and scopes (its annotations), device by device, and PyTorch's
// viewer can draw every step of it.
TEST(Export, PyTorchSnapshotsImportAndExportReportingTheSame) {
  const std::string snapshots = std::string(MEMTAP_SHARED_DATA_DIR) + "/torch_snapshots";
  if (!std::filesystem::is_directory(snapshots)) GTEST_SKIP() << snapshots << " is absent";
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  int samples = 0, with_events = 0;
  std::vector<std::string> exported;  // checked as PyTorch's viewer reads them, together
  for (const auto& entry : std::filesystem::directory_iterator(snapshots)) {
    const std::string name = entry.path().filename().string();
    if (!name.ends_with(".pickle") && !name.ends_with(".pkl")) continue;
    SCOPED_TRACE(name);
    ++samples;
    const std::string db = dir.file(name + ".db"), csv = dir.file(name + ".csv");
    const ProcessResult r = memtap(dir, {"import", entry.path().string(), "-o", db});
    ASSERT_TRUE(r.exited && r.exit_code == 0) << describe(r) << "\n" << r.err;
    const std::string pickle_json = report_json(dir, entry.path().string());
    const std::string want = devices_of(pickle_json);
    if (want != "[]") ++with_events;
    const std::string db_json = report_json(dir, db);
    EXPECT_EQ(devices_of(db_json), want) << "imported into " << db;
    // What the report says of the snapshot (made-up times, blocks before its trace) too.
    const std::string facts = json_part(pickle_json, "$.torch_snapshot");
    EXPECT_NE(facts.find("\"trace_entries\""), std::string::npos) << facts;
    EXPECT_EQ(json_part(db_json, "$.torch_snapshot"), facts) << "imported into " << db;
    expect_exported(dir, {entry.path().string(), "--format", "msmemscope-csv", "-o", csv});
    EXPECT_EQ(devices_of(report_json(dir, csv)), want) << "exported to " << csv;
    // And back to a snapshot, which PyTorch's viewer can draw at every step of its trace.
    const std::string again = dir.file(name + ".again.pickle");
    expect_exported(dir, {entry.path().string(), "--format", "torch-snapshot", "-o", again});
    // Its memory figures and scopes, device by device, not its times: those a file without
    // time_us had made up are written down, and read back as the file's.
    const std::string again_json = report_json(dir, again);
    std::string error;
    auto q = DbQuery::open(":memory:", &error);
    DbRows labels;
    ASSERT_TRUE(q && q->query("SELECT json_extract(value, '$.device') FROM "
                              "json_each(json_extract(?1, '$.devices'))",
                              {pickle_json}, &labels, &error))
        << error;
    for (size_t i = 0; i < labels.rows.size(); ++i) {
      const std::string device = labels.rows[i][0].text;
      EXPECT_EQ(device_figures(again_json, device), device_figures(pickle_json, device))
          << device << " exported to " << again;
      // The annotations' ranges (and the pool from before the trace) as the same scopes.
      const std::string scopes = "$.devices[" + std::to_string(i) + "].scopes";
      EXPECT_EQ(json_part(again_json, scopes), json_part(pickle_json, scopes))
          << device << " exported to " << again;
    }
    exported.push_back(again);
  }
  EXPECT_EQ(samples, 13);
  const std::vector<std::string> summaries = memory_viz_summaries(dir, exported);
  ASSERT_EQ(summaries.size(), exported.size());
  for (size_t i = 0; i < summaries.size(); ++i) {
    EXPECT_EQ(summaries[i].rfind("{\"actions\": ", 0), 0u) << exported[i] << ": " << summaries[i];
  }
  EXPECT_GE(with_events, 10) << "most samples hold blocks";
}

// A recording of the reporting pool (cudaMalloc'd segments, an expandable segment mapped page
// by page, blocks on two streams, a free pending on another stream, an out-of-memory) as a
// PyTorch snapshot: every recorded block, segment and OOM is a trace entry, PyTorch's viewer
// finds every block inside a segment at every step, and the file reports the device's
// curves as the recording does.
TEST(Export, APoolRecordingAsATorchSnapshotOpensInPyTorchsViewer) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string db = dir.file("pool.db"), out = dir.file("snapshot.pickle");
  record(dir, db, {kCudaProgram, "caching"});
  expect_exported(dir, {db, "--format", "torch-snapshot", "-o", out});
  const std::string summary = memory_viz_summary(dir, out);
  ASSERT_NE(summary, "");
  const auto rows = [&](const std::string& where) {
    return scalar(db, "SELECT count(*) FROM memscope_dump WHERE \"Device Id\" = '0' AND " + where);
  };
  EXPECT_EQ(summary_count(summary, "$.actions.alloc"),
            rows("Event = 'MALLOC' AND \"Event Type\" = 'PTA'"));
  EXPECT_EQ(summary_count(summary, "$.actions.free_requested"),
            rows("Event = 'FREE' AND \"Event Type\" = 'PTA'"));
  EXPECT_GT(summary_count(summary, "$.actions.segment_map"), 0) << "the expandable segment";
  EXPECT_EQ(summary_count(summary, "$.actions.segment_alloc") +
                summary_count(summary, "$.actions.segment_map"),
            rows("Event = 'MALLOC' AND \"Event Type\" = 'HAL'"));
  EXPECT_EQ(summary_count(summary, "$.actions.oom"),
            rows("Event = 'OOM_DETAIL' AND \"Event Type\" = 'OOM_TRIGGER'"));
  EXPECT_GE(summary_count(summary, "$.actions.oom"), 1);
  EXPECT_EQ(summary_count(summary, "$.devices[0]"), 0);

  auto want = device_figures(report_json(dir, db), "device 0");
  auto got = device_figures(report_json(dir, out), "device 0");
  for (const char* figure : {"Allocated peak", "Allocated final", "Active peak", "Active final"}) {
    EXPECT_EQ(got[figure], want[figure]) << figure;
  }

  // Without -o: snapshot_<YYYYmmddHHMMSS>.pickle in the current directory.
  ProcessSpec spec = spec_in(dir, {kMemtapBin, "export", db, "--format", "torch-snapshot"});
  spec.cwd = dir.path();
  const ProcessResult r = run_process(spec, kProcessTimeout);
  EXPECT_TRUE(r.exited && r.exit_code == 0) << describe(r) << r.err;
  int named = 0;
  for (const std::string& name : dir.entries()) {
    if (!name.starts_with("snapshot_")) continue;
    ++named;
    EXPECT_TRUE(std::regex_match(name, std::regex("snapshot_[0-9]{14}\\.pickle"))) << name;
  }
  EXPECT_EQ(named, 1);
}

// Numbers no GPU has, from a file: a device beyond what a snapshot's list of traces holds is
// one line of error; a block ending past 2^64 is left out and said, and the rest is written,
// in one segment spanning the blocks (the file names no driver blocks).
TEST(Export, ATorchSnapshotRefusesADeviceNoSnapshotListsAndSaysWhatItLeftOut) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string header =
      "ID,Event,Event Type,Name,Timestamp(ns),Process Id,Thread Id,Device Id,Ptr,Attr,"
      "Call Stack(Python),Call Stack(C)\n";
  const auto row = [](int id, const std::string& device, const std::string& ptr, int size) {
    return std::to_string(id) + ",MALLOC,PTA,N/A," + std::to_string(1764753084425691000 + id) +
           ",7,7," + device + "," + ptr + ",\"{allocation_id:" + std::to_string(id) +
           ",addr:" + ptr + ",size:" + std::to_string(size) + "}\",,\n";
  };
  const std::string far = dir.file("far_device.csv"), wrap = dir.file("wrapping.csv");
  std::ofstream(far) << header << row(1, "0", "0x000012c041400000", 1024)
                     << row(2, "3000000", "0x000012c041400000", 1024);
  std::ofstream(wrap) << header << row(1, "0", "0xffffffffffffff00", 4096)
                      << row(2, "0", "0x000012c041400000", 1024);
  const std::string out = dir.file("snapshot.pickle");
  const ProcessResult refused =
      memtap(dir, {"export", far, "--format", "torch-snapshot", "-o", out});
  EXPECT_TRUE(refused.exited && refused.exit_code == 1) << describe(refused);
  EXPECT_EQ(split_lines(refused.err).size(), 1u) << refused.err;
  EXPECT_NE(refused.err.find(far + ": device 3000000 is beyond what a snapshot lists"),
            std::string::npos)
      << refused.err;
  EXPECT_FALSE(std::filesystem::exists(out)) << "nothing left behind";

  const ProcessResult r = memtap(dir, {"export", wrap, "--format", "torch-snapshot", "-o", out});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << describe(r) << r.err;
  EXPECT_NE(r.err.find("left out 1 block whose address and size end past 2^64"), std::string::npos)
      << r.err;
  EXPECT_NE(r.err.find("one segment spans them all"), std::string::npos) << r.err;
  const std::string summary = memory_viz_summary(dir, out);
  EXPECT_EQ(summary_count(summary, "$.actions.alloc"), 1);
  EXPECT_EQ(summary_count(summary, "$.segments"), 1);
}

}  // namespace
}  // namespace memtap::e2e
