// `memtap diff BASE NEW` as users run it: on msMemScope's compare example (one training
// step, once with a leak) and on two real recordings of examples/train_leak.py, with and
// without its leak, the leak is named at the top; --json parses and says what the text
// says; usage errors and unreadable files are told apart by the exit code.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "tests/e2e/db_query.h"
#include "tests/e2e/e2e_support.h"

namespace memtap::e2e {
namespace {

constexpr const char* kPython = "/usr/bin/python3";
const std::string kData = std::string(MEMTAP_SHARED_DATA_DIR) + "/msmemscope/";
const std::string kBaseline = kData + "msmemscope__example_compare_baseline.csv";
const std::string kLeaks = kData + "msmemscope__example_compare_leaks.csv";
const std::string kTrainLeak = std::string(MEMTAP_SOURCE_DIR) + "/examples/train_leak.py";

// What leaks in the compare example, found by reading the two CSVs with a short Python csv
// script (rows in time order; a PTA MALLOC belongs to the innermost ATEN_START..ATEN_END
// of its thread; what is never freed, summed by operator): in the leaks run
// torch._ops.aten._to_copy.default holds two blocks of 4000256 bytes at the end, in the
// baseline nothing; every other operator holds the same few bytes in both.
constexpr const char* kLeakingOperator = "torch._ops.aten._to_copy.default";
constexpr int64_t kLeakedBytes = 2 * 4000256;

ProcessResult memtap(std::vector<std::string> args) {
  args.insert(args.begin(), kMemtapBin);
  ProcessSpec spec;
  spec.argv = std::move(args);
  return run_process(spec, kProcessTimeout);
}

// The lines after "What changed most:", up to the first that is not indented.
std::vector<std::string> headline(const std::string& text) {
  std::vector<std::string> out;
  bool in = false;
  for (const std::string& line : split_lines(text)) {
    if (line == "What changed most:") {
      in = true;
    } else if (in && line.rfind("  ", 0) == 0) {
      out.push_back(line.substr(2));
    } else if (in) {
      break;
    }
  }
  return out;
}

// Values out of `json` by SQLite's JSON functions, each as SQLite renders it as text:
// `exprs` are json_extract paths ("$.a.b") or SQL expressions of ?1 (the JSON). Empty, with a
// test failure, where the text is not JSON.
std::vector<std::string> json_values(const std::string& json,
                                     const std::vector<std::string>& exprs) {
  std::string error;
  std::unique_ptr<DbQuery> q = DbQuery::open(":memory:", &error);
  if (!q) {
    ADD_FAILURE() << error;
    return {};
  }
  DbRows valid;
  if (!q->query("SELECT json_valid(?1)", {json}, &valid, &error) || valid.rows.empty() ||
      valid.rows[0][0].integer != 1) {
    ADD_FAILURE() << "not JSON: " << error << "\n" << json.substr(0, 2000);
    return {};
  }
  std::string sql = "SELECT ";
  for (size_t i = 0; i < exprs.size(); ++i) {
    const std::string& e = exprs[i];
    sql += (i ? ", " : "") + (e[0] == '$' ? "json_extract(?1, '" + e + "')" : e);
  }
  DbRows rows;
  if (!q->query(sql, {json}, &rows, &error) || rows.rows.size() != 1) {
    ADD_FAILURE() << error;
    return {};
  }
  std::vector<std::string> out;
  for (const DbValue& v : rows.rows[0]) out.push_back(v.text);
  return out;
}

TEST(Diff, MsMemScopeCompareExampleNamesTheLeakingOperatorFirst) {
  const ProcessResult r = memtap({"diff", kBaseline, kLeaks});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << describe(r) << "\n" << r.err;
  EXPECT_EQ(r.out.rfind("memtap diff: BASE " + kBaseline + " (msmemscope_csv, ", 0), 0u) << r.out;
  EXPECT_NE(r.out.find("    process 1 (pid 3101864 / pid 3290097), device 0: in both\n"),
            std::string::npos)
      << "what was paired with what\n"
      << r.out;
  const std::vector<std::string> head = headline(r.out);
  ASSERT_GE(head.size(), 2u) << r.out;
  // The peak grew by one of the operator's blocks, and what is live at the end by both.
  EXPECT_EQ(head[0].rfind("peak +3.8 MiB", 0), 0u) << head[0];
  EXPECT_NE(head[0].find(std::string(": name ") + kLeakingOperator + " +3.8 MiB (new)"),
            std::string::npos)
      << head[0];
  EXPECT_EQ(head[1].rfind("live at end +7.6 MiB", 0), 0u) << head[1];
  EXPECT_NE(head[1].find(std::string(": name ") + kLeakingOperator + " +7.6 MiB (new)"),
            std::string::npos)
      << head[1];

  const ProcessResult j = memtap({"diff", "--json", kBaseline, kLeaks});
  ASSERT_TRUE(j.exited && j.exit_code == 0) << describe(j) << "\n" << j.err;
  const std::vector<std::string> v = json_values(
      j.out,
      {"$.devices[0].live_at_end.by_name[0].key", "$.devices[0].live_at_end.by_name[0].base",
       "$.devices[0].live_at_end.by_name[0].new", "$.devices[0].live_at_end.by_name[0].status"});
  ASSERT_EQ(v.size(), 4u);
  EXPECT_EQ(v[0], kLeakingOperator) << "the largest change of what is live at the end";
  EXPECT_EQ(v[1], "0");
  EXPECT_EQ(v[2], std::to_string(kLeakedBytes));
  EXPECT_EQ(v[3], "new");
}

// The text's headline and rows, and the JSON's values, are the same figures.
TEST(Diff, JsonParsesAndCarriesTheTextsValues) {
  const ProcessResult t = memtap({"diff", kBaseline, kLeaks, "--top", "1"});
  const ProcessResult j = memtap({"diff", kBaseline, kLeaks, "--top", "1", "--json"});
  ASSERT_TRUE(t.exited && t.exit_code == 0) << describe(t) << "\n" << t.err;
  ASSERT_TRUE(j.exited && j.exit_code == 0) << describe(j) << "\n" << j.err;
  const std::vector<std::string> head = headline(t.out);
  ASSERT_GE(head.size(), 1u) << t.out;
  const std::vector<std::string> v = json_values(
      j.out, {"$.headline[0].text", "$.paired_by", "$.lined_up", "$.base.source", "$.new.source",
              "$.devices[0].label", "json_array_length(?1, '$.devices[0].peak.by_name')"});
  ASSERT_FALSE(v.empty());
  EXPECT_EQ(v[0], head[0]);
  EXPECT_EQ(v[1], "order");
  EXPECT_EQ(v[2], "1");
  EXPECT_EQ(v[3], kBaseline);
  EXPECT_EQ(v[4], kLeaks);
  EXPECT_NE(t.out.find("\n" + v[5] + " (in both)\n"), std::string::npos) << t.out;

  // The Allocated peak: its bytes in JSON, and the row the text prints for them.
  std::string error;
  std::unique_ptr<DbQuery> q = DbQuery::open(":memory:", &error);
  ASSERT_TRUE(q) << error;
  DbRows rows;
  ASSERT_TRUE(
      q->query("SELECT json_extract(f.value, '$.base'), json_extract(f.value, '$.new'), "
               "json_extract(f.value, '$.delta'), json_extract(f.value, '$.percent') "
               "FROM json_each(json_extract(?1, '$.devices[0].figures')) f "
               "WHERE json_extract(f.value, '$.key') = 'Allocated peak'",
               {j.out}, &rows, &error))
      << error;
  ASSERT_EQ(rows.rows.size(), 1u) << j.out.substr(0, 3000);
  const int64_t base = rows.rows[0][0].integer, now = rows.rows[0][1].integer;
  const double percent = std::stod(rows.rows[0][3].text);
  EXPECT_EQ(rows.rows[0][2].integer, now - base);
  EXPECT_NEAR(percent, double(now - base) / double(base) * 100, 0.01);
  auto mib = [](const char* format, int64_t bytes) {
    char buf[32];
    snprintf(buf, sizeof buf, format, double(bytes) / 1048576);
    return std::string(buf);
  };
  char pct[16], row[160];
  snprintf(pct, sizeof pct, "%+.0f%%", percent);
  snprintf(row, sizeof row, "%14s %14s %15s %9s  Allocated peak\n", mib("%.1f MiB", base).c_str(),
           mib("%.1f MiB", now).c_str(), mib("+%.1f MiB", now - base).c_str(), pct);
  EXPECT_NE(t.out.find(row), std::string::npos) << "want: " << row << "\n" << t.out;
  EXPECT_EQ(v[6], "1") << "--top 1: one entry per list";
}

TEST(Diff, UsageErrorsExitTwoAndUnreadableFilesOne) {
  for (const std::vector<std::string>& args :
       std::vector<std::vector<std::string>>{{"diff"},
                                             {"diff", kBaseline},
                                             {"diff", kBaseline, kLeaks, kLeaks},
                                             {"diff", kBaseline, kLeaks, "--bogus"},
                                             {"diff", kBaseline, kLeaks, "--top", "0"},
                                             {"diff", kBaseline, kLeaks, "--top"}}) {
    const ProcessResult r = memtap(args);
    std::string joined;
    for (const std::string& a : args) joined += a + " ";
    EXPECT_TRUE(r.exited && r.exit_code == 2) << joined << describe(r);
    EXPECT_TRUE(r.out.empty()) << joined << r.out;
    EXPECT_EQ(r.err.rfind("memtap diff: ", 0), 0u) << joined << r.err;
    EXPECT_EQ(split_lines(r.err).size(), 2u) << joined << r.err;
    EXPECT_NE(r.err.find("\nsee memtap diff --help\n"), std::string::npos) << joined << r.err;
  }

  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string bad = dir.file("bad.csv");
  std::ofstream(bad) << "not,a,recording\n";
  const std::string missing = dir.file("missing.db");
  for (const auto& [args, named] : std::vector<std::pair<std::vector<std::string>, std::string>>{
           {{"diff", missing, kLeaks}, missing}, {{"diff", kBaseline, bad}, bad}}) {
    const ProcessResult r = memtap(args);
    EXPECT_TRUE(r.exited && r.exit_code == 1) << named << " " << describe(r);
    EXPECT_TRUE(r.out.empty()) << r.out;
    EXPECT_EQ(r.err.rfind("memtap diff: " + named + ": ", 0), 0u) << r.err;
    EXPECT_EQ(split_lines(r.err).size(), 1u) << r.err;
  }
}

bool have_torch() {
  if (access(kPython, X_OK) != 0) return false;
  ProcessSpec probe;
  probe.argv = {kPython, "-c", "import torch"};
  return run_process(probe, kProcessTimeout).exit_code == 0;
}

// Two short recordings of examples/train_leak.py (4 steps, Python stacks), without and
// with its leak: the headline names the leak's owner and the line that allocates it.
TEST(Diff, TrainingRunsWithAndWithoutALeakNameItsOwnerAndLine) {
  if (!have_torch()) GTEST_SKIP() << "torch is not importable by " << kPython;
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  auto record = [&](const std::string& db, std::vector<std::string> extra) {
    // --compact: a fifth of the file, written twice as fast (importing torch is most
    // of each run).
    std::vector<std::string> argv = {kMemtapBin,  "run",      "-o",      db,
                                     "--compact", "--stacks", "python",  "--",
                                     kPython,     kTrainLeak, "--steps", "4"};
    argv.insert(argv.end(), extra.begin(), extra.end());
    ProcessSpec spec = spec_in(dir, argv);
    spec.env_unset.push_back("PYTHONPATH");
    return run_process(spec, kProcessTimeout);
  };
  const std::string base = dir.file("base.db"), leak = dir.file("leak.db");
  ProcessResult r = record(base, {"--no-leak"});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << describe(r) << "\n" << r.err;
  r = record(leak, {});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << describe(r) << "\n" << r.err;

  int line = 0;
  {
    std::ifstream in(kTrainLeak);
    std::string text;
    for (int n = 1; std::getline(in, text); ++n)
      if (text.find("_debug_history.append(") != std::string::npos) {
        line = n;
        break;
      }
  }
  ASSERT_GT(line, 0);
  const std::string frame = kTrainLeak + "(" + std::to_string(line) + "): remember";

  const ProcessResult d = memtap({"diff", base, leak});
  ASSERT_TRUE(d.exited && d.exit_code == 0) << describe(d) << "\n" << d.err;
  const std::vector<std::string> head = headline(d.out);
  ASSERT_GE(head.size(), 2u) << d.out;
  // 40 MiB a step over 4 steps on top of the peak: the owner first, then the line.
  EXPECT_EQ(head[0].rfind("peak +", 0), 0u) << head[0];
  const size_t owner = head[0].find(": owner leaks_mem +160.0 MiB (new)");
  const size_t stack = head[0].find("stack " + frame + " ... +160.0 MiB (new)");
  EXPECT_NE(owner, std::string::npos) << head[0];
  EXPECT_NE(stack, std::string::npos) << head[0];
  EXPECT_LT(owner, stack);
  EXPECT_EQ(head[1].rfind("leak ", 0), 0u) << head[1];
  EXPECT_NE(head[1].find(": owner leaks_mem +40.0 MiB/step (new), stack " + frame + " ... " +
                         "+40.0 MiB/step (new)"),
            std::string::npos)
      << head[1];
  EXPECT_NE(d.out.find("Only in NEW:\n    owner  leaks_mem (160.0 MiB)\n"), std::string::npos)
      << d.out;

  const ProcessResult j = memtap({"diff", "--json", base, leak});
  ASSERT_TRUE(j.exited && j.exit_code == 0) << describe(j) << "\n" << j.err;
  const std::vector<std::string> v = json_values(
      j.out, {"$.headline[1].what", "$.headline[1].causes[0].key", "$.headline[1].causes[0].new",
              "$.headline[1].causes[1].key", "$.devices[0].leaks.by_owner[0].key",
              "$.devices[0].leaks.by_owner[0].status"});
  ASSERT_EQ(v.size(), 6u);
  EXPECT_EQ(v[0], "leak");
  EXPECT_EQ(v[1], "leaks_mem");
  EXPECT_NEAR(std::stod(v[2]) / 1048576, 40.0, 0.5);
  EXPECT_EQ(v[3].rfind(frame + "\n", 0), 0u) << "the whole stack, innermost frame first: " << v[3];
  EXPECT_EQ(v[4], "leaks_mem");
  EXPECT_EQ(v[5], "new");
}

}  // namespace
}  // namespace memtap::e2e
