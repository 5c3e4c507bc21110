// PyTorch's CUDA pool on the samples path (agent/python/memtap/_torch_pool.py sample()): a
// real interpreter under `memtap run`, with a stand-in `torch` package first on PYTHONPATH
// (this machine's PyTorch has no CUDA). It says CUDA is initialised on one device, has no C++
// headers (so the trace tracker cannot be attached and memtap samples instead), and answers
// memory_stats() with figures and peaks that grow at each call. Each memtap.step() must
// become a SNAPSHOT PTA row whose Attr holds exactly that call's allocated, reserved,
// max_allocated and max_reserved, in a text and in a --compact recording, and an msMemScope
// CSV exported from either must keep them; `memtap report` shows the largest.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/e2e/db_query.h"
#include "tests/e2e/e2e_support.h"

namespace memtap::e2e {
namespace {

constexpr const char* kPython = "/usr/bin/python3";
constexpr int kSteps = 3;

// Call n (1, 2, ...) of memory_stats(0): the figures of the n-th step's sample.
constexpr const char* kStandInTorch = R"(
import types
version = types.SimpleNamespace(cuda="12.1")

class _Cuda:
    calls = 0
    def is_available(self): return True
    def is_initialized(self): return True
    def device_count(self): return 1
    def memory_stats(self, device=None):
        _Cuda.calls += 1
        n = _Cuda.calls
        return {"allocated_bytes.all.current": n << 20,
                "reserved_bytes.all.current": (n + 1) << 21,
                "allocated_bytes.all.peak": (n << 20) + (n << 19),
                "reserved_bytes.all.peak": (n + 2) << 21}

cuda = _Cuda()
)";

constexpr const char* kScript = R"(
import torch
import memtap
from memtap import _torch_pool
for _ in range(3):
    memtap.step()
print("mode=" + str(_torch_pool.mode), flush=True)
)";

std::string expected_attr(uint64_t n) {
  const auto dec = [](uint64_t v) { return std::to_string(v); };
  return R"({"allocated":")" + dec(n << 20) + R"(","reserved":")" + dec((n + 1) << 21) +
         R"(","max_allocated":")" + dec((n << 20) + (n << 19)) + R"(","max_reserved":")" +
         dec((n + 2) << 21) + R"("})";
}

// The Attr as msMemScope's CSV has it: `{key:value,...}` without JSON's quotes, in a quoted
// field (it holds commas).
std::string csv_attr(const std::string& json) {
  std::string out = "\"";
  for (const char c : json) {
    if (c != '"') out += c;
  }
  return out + "\"";
}

class TorchPoolSamples : public ::testing::Test {
 protected:
  void SetUp() override {
    if (access(kPython, X_OK) != 0) GTEST_SKIP() << kPython << " is not installed";
    ASSERT_TRUE(dir.ok());
    const std::filesystem::path torch = dir.file("site/torch");
    std::filesystem::create_directories(torch);
    std::ofstream(torch / "__init__.py") << kStandInTorch;
    std::ofstream(dir.file("train.py")) << kScript;
  }

  // `memtap run [--compact] -o db -- python train.py`, the stand-in torch found first.
  void record(const std::string& db, bool compact) {
    std::vector<std::string> cmd = {kMemtapBin, "run"};
    if (compact) cmd.push_back("--compact");
    for (const std::string& arg :
         {std::string("-o"), db, std::string("--"), std::string(kPython), dir.file("train.py")}) {
      cmd.push_back(arg);
    }
    ProcessSpec spec = spec_in(dir, cmd);
    spec.env_unset.push_back("PYTHONPATH");
    spec.env_set.push_back("PYTHONPATH=" + dir.file("site"));
    const ProcessResult r = run_process(spec, kProcessTimeout);
    ASSERT_TRUE(r.exited && r.exit_code == 0) << describe(r) << "\n" << r.err;
    // The stand-in has no C++ headers: the tracker is not attached, the pool is sampled.
    ASSERT_NE(r.out.find("mode=samples"), std::string::npos) << r.out << "\n" << r.err;
  }

  std::vector<std::string> snapshot_attrs(const std::string& db) {
    std::string error;
    auto q = DbQuery::open(db, &error);
    EXPECT_TRUE(q) << error;
    DbRows rows;
    if (!q || !q->query("SELECT Attr, \"Device Id\" FROM memscope_dump WHERE Event = 'SNAPSHOT' "
                        "AND \"Event Type\" = 'PTA' ORDER BY ID",
                        {}, &rows, &error)) {
      ADD_FAILURE() << error;
      return {};
    }
    std::vector<std::string> attrs;
    for (const auto& row : rows.rows) {
      EXPECT_EQ(row[1].text, "0");
      attrs.push_back(row[0].text);
    }
    return attrs;
  }

  TempDir dir;
};

TEST_F(TorchPoolSamples, EachStepsSnapshotHoldsTheFiguresAndPeaksInTextAndCompactAndCsv) {
  std::vector<std::string> want;
  for (uint64_t n = 1; n <= kSteps; ++n) want.push_back(expected_attr(n));
  for (const bool compact : {false, true}) {
    SCOPED_TRACE(compact ? "compact" : "text");
    const std::string db = dir.file(compact ? "compact.db" : "text.db");
    record(db, compact);
    EXPECT_EQ(snapshot_attrs(db), want);

    const std::string csv = dir.file(compact ? "compact.csv" : "text.csv");
    const ProcessResult r = run_process(
        spec_in(dir, {kMemtapBin, "export", db, "--format", "msmemscope-csv", "-o", csv}),
        kProcessTimeout);
    ASSERT_TRUE(r.exited && r.exit_code == 0) << describe(r) << "\n" << r.err;
    std::ifstream in(csv);
    std::vector<std::string> got;
    for (std::string line; std::getline(in, line);) {
      if (line.find("SNAPSHOT,PTA,") == std::string::npos) continue;
      const size_t at = line.find("\"{");
      ASSERT_NE(at, std::string::npos) << line;
      got.push_back(line.substr(at, line.find("}\"", at) + 2 - at));
    }
    std::vector<std::string> want_csv;
    for (const std::string& attr : want) want_csv.push_back(csv_attr(attr));
    EXPECT_EQ(got, want_csv);

    // The report's pool section: the largest of the peaks, the last step's here.
    const ProcessResult report =
        run_process(spec_in(dir, {kMemtapBin, "report", "--json", db}), kProcessTimeout);
    ASSERT_TRUE(report.exited && report.exit_code == 0) << describe(report) << "\n" << report.err;
    std::string error;
    auto q = DbQuery::open(":memory:", &error);
    ASSERT_TRUE(q) << error;
    DbRows pool;
    ASSERT_TRUE(
        q->query("SELECT json_extract(d.value, '$.pool.source'), "
                 "json_extract(d.value, '$.pool.max_allocated'), "
                 "json_extract(d.value, '$.pool.max_reserved') "
                 "FROM json_each(json_extract(?1, '$.devices')) AS d "
                 "WHERE json_extract(d.value, '$.device') = 'device 0'",
                 {report.out}, &pool, &error))
        << error;
    ASSERT_EQ(pool.rows.size(), 1u) << report.out.substr(0, 2000);
    EXPECT_EQ(pool.rows[0][0].text, "samples");
    EXPECT_EQ(pool.rows[0][1].integer, (3 << 20) + (3 << 19));
    EXPECT_EQ(pool.rows[0][2].integer, 5 << 21);
  }
}

}  // namespace
}  // namespace memtap::e2e
