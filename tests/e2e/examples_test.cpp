// The `memtap` Python package and the examples of examples/, run as the README runs them:
// `import memtap` without the agent (a silent no-op) and under `memtap run` (PYTHONPATH,
// the chained sitecustomize, the context calls reaching the recording), memtap run's
// options, the installed tree's package, and each example with what its report must say.
//
// The PyTorch examples need Debian's python3-torch for /usr/bin/python3; without it they
// are skipped, as the other torch workloads are. Importing torch makes about two million
// allocations, so each of those tests takes 10-25 s here, most of it writing the recording.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <fstream>
#include <map>
#include <regex>
#include <sstream>

#include "tests/e2e/db_query.h"
#include "tests/e2e/e2e_support.h"

namespace memtap::e2e {
namespace {

constexpr const char* kPython = "/usr/bin/python3";
const std::string kSourceDir = MEMTAP_SOURCE_DIR;
const std::string kExamples = kSourceDir + "/examples";
const std::string kNativeExample = MEMTAP_EXAMPLE_NATIVE;
// The package beside the agent, where memtap run finds it (<build>/lib/python).
const std::string kPackageDir = kAgentLib.substr(0, kAgentLib.rfind('/')) + "/python";
constexpr double kMiB = 1024.0 * 1024.0;

bool have_python() {
  return access(kPython, X_OK) == 0;
}

bool have_torch() {
  static const bool yes = [] {
    if (!have_python()) return false;
    ProcessSpec probe;
    probe.argv = {kPython, "-c", "import torch"};
    return run_process(probe, kProcessTimeout).exit_code == 0;
  }();
  return yes;
}

#define SKIP_WITHOUT_TORCH()                                                     \
  do {                                                                           \
    if (!have_python()) GTEST_SKIP() << kPython << " is not installed";          \
    if (!have_torch()) GTEST_SKIP() << "torch is not importable by " << kPython; \
  } while (0)

ProcessResult memtap(const TempDir& dir, std::vector<std::string> args,
                     std::vector<std::string> env = {}) {
  args.insert(args.begin(), kMemtapBin);
  ProcessSpec spec = spec_in(dir, args);
  for (std::string& e : env) spec.env_set.push_back(std::move(e));
  spec.env_unset.push_back("PYTHONPATH");
  return run_process(spec, kProcessTimeout);
}

// The 1-based number of the first line of `path` that contains `text`; 0 if none.
int line_of(const std::string& path, const std::string& text) {
  std::ifstream in(path);
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (line.find(text) != std::string::npos) return n;
  }
  return 0;
}

// The first number after `"key":` in `json` at or after `from`; NAN when absent.
double json_number(const std::string& json, const std::string& key, size_t from = 0) {
  size_t at = json.find("\"" + key + "\":", from);
  if (at == std::string::npos) return NAN;
  return strtod(json.c_str() + at + key.size() + 3, nullptr);
}

std::string q(const std::string& text) {
  return "'" + text + "'";
}

// SQL for the value of `key` in a row's Attr (SYSTEM and MSTX rows have an empty Attr,
// which json_extract would refuse).
std::string attr(const std::string& key) {
  return "json_extract(CASE WHEN json_valid(Attr) THEN Attr ELSE '{}' END, '$." + key + "')";
}

// --- the package -------------------------------------------------------------------------

constexpr const char* kApiCalls = R"(
import sys, memtap
assert "torch" not in sys.modules, "memtap must not import torch"
memtap.step(); memtap.mark("m"); memtap.range_start("r"); memtap.range_end("r")
with memtap.owner("a"):
    with memtap.range("b"):
        pass
memtap.tracer.start(); sum([1, 2]); memtap.tracer.stop()
print("active", memtap.active(), memtap.agent_version())
)";

TEST(PythonApi, ImportWithoutTheAgentIsASilentNoOp) {
  if (!have_python()) GTEST_SKIP() << kPython << " is not installed";
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  ProcessSpec spec = spec_in(dir, {kPython, "-c", kApiCalls});
  spec.env_set.push_back("PYTHONPATH=" + kPackageDir);
  ProcessResult r = run_process(spec, kProcessTimeout);
  ASSERT_TRUE(r.exited && r.exit_code == 0) << describe(r) << "\nstderr:\n" << r.err;
  EXPECT_EQ(r.out, "active False None\n");
  EXPECT_EQ(r.err, "") << "silent without the agent";
}

// The context calls through memtap run: steps, marks, ranges, nested owners, tracer slices
// and a Python stack, in the recording's rows; PYTHONPATH keeps the user's entries after
// ours, and the sitecustomize we shadow still runs.
TEST(PythonApi, MemtapRunRecordsTheContextCalls) {
  if (!have_python()) GTEST_SKIP() << kPython << " is not installed";
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string user_dir = dir.file("user_site");
  ASSERT_EQ(mkdir(user_dir.c_str(), 0700), 0);
  std::ofstream(user_dir + "/sitecustomize.py") << "print('user sitecustomize ran')\n";
  const std::string script = dir.file("context.py");
  std::ofstream(script) << R"(import os, threading, memtap
def work():
    return [bytearray(100) for _ in range(3)]
memtap.tracer.start()
work()
t = threading.Thread(target=work); t.start(); t.join()
memtap.tracer.stop()
for i in range(3):
    memtap.step()
    with memtap.owner("outer"):
        with memtap.owner("inner"):
            keep = bytearray(3000017)  # the stacked allocation
    memtap.mark("after")
    with memtap.range("phase"):
        pass
    memtap.range_start("manual"); memtap.range_end("manual")
print("active", memtap.active())
print("pid", os.getpid())
print("path", os.environ["PYTHONPATH"])
)";
  const std::string db = dir.file("context.db");
  ProcessResult r = memtap(
      dir,
      {"run", "-o", db, "--stacks", "python", "--stack-min-size", "1MiB", "--", kPython, script},
      {"PYTHONPATH=" + user_dir});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << describe(r) << "\nstderr:\n" << r.err;
  EXPECT_NE(r.out.find("user sitecustomize ran\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("active True\n"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("path " + kPackageDir + ":" + user_dir + "\n"), std::string::npos) << r.out;
  size_t at = r.out.find("pid ");
  ASSERT_NE(at, std::string::npos) << r.out;
  const std::string pid = std::to_string(std::stoll(r.out.substr(at + 4)));

  std::string error;
  std::unique_ptr<DbQuery> db_q = DbQuery::open(db, &error);
  ASSERT_TRUE(db_q) << error;
  const std::string in_pid = " FROM memscope_dump WHERE \"Process Id\" = " + pid;
  auto count = [&](const std::string& where) {
    return db_q->scalar_int("SELECT COUNT(*)" + in_pid + " AND " + where);
  };
  EXPECT_EQ(count("Event = 'SYSTEM' AND \"Event Type\" = 'STEP'"), 3);
  EXPECT_EQ(count("Event = 'MSTX' AND \"Event Type\" = 'Mark' AND Name = 'after'"), 3);
  EXPECT_EQ(count("Event = 'MSTX' AND \"Event Type\" = 'Range_start' AND Name = 'phase'"), 3);
  EXPECT_EQ(count("Event = 'MSTX' AND \"Event Type\" = 'Range_end' AND Name = 'phase'"), 3);
  EXPECT_EQ(count("Event = 'MSTX' AND \"Event Type\" = 'Range_start' AND Name = 'manual'"), 3);
  const std::string big = "Event = 'MALLOC' AND CAST(" + attr("size") +
                          " AS INTEGER) "
                          "BETWEEN 3000017 AND 3000081";
  EXPECT_EQ(count(big), 3);
  EXPECT_EQ(count(big + " AND " + attr("owner") + " = 'outer@inner'"), 3);
  const int line = line_of(script, "the stacked allocation");
  EXPECT_EQ(count(big + " AND \"Call Stack(Python)\" LIKE " +
                  q("%context.py(" + std::to_string(line) + "): <module>%")),
            3);

  const std::string trace = "python_trace_" + pid;
  ASSERT_TRUE(db_q->has_table(trace));
  EXPECT_EQ(db_q->scalar_int("SELECT COUNT(*) FROM " + trace + " WHERE FuncInfo = " +
                             q(script + "(2): work") + " AND \"Thread Id\" = " + pid),
            1)
      << "work() on the main thread";
  EXPECT_EQ(db_q->scalar_int("SELECT COUNT(*) FROM " + trace + " WHERE FuncInfo = " +
                             q(script + "(2): work") + " AND \"Thread Id\" != " + pid),
            1)
      << "work() on the thread started while tracing";
  EXPECT_EQ(db_q->scalar_int("SELECT COUNT(*) FROM " + trace +
                             " WHERE CAST(\"EndTime(ns)\" AS INTEGER) < "
                             "CAST(\"StartTime(ns)\" AS INTEGER)"),
            0);
}

// memtap run's options reach the child's environment; a bad value is a one-line error.
TEST(PythonApi, RunOptionsSetTheAgentsEnvironment) {
  if (!have_python()) GTEST_SKIP() << kPython << " is not installed";
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const char* show =
      "import os\n"
      "for k in ('MEMTAP_STACKS', 'MEMTAP_STACK_MIN_SIZE', 'MEMTAP_TORCH_OPS'):\n"
      "    print(k, os.environ.get(k))\n";
  struct Case {
    std::vector<std::string> options;
    std::string expected;
  };
  for (const Case& c : std::vector<Case>{
           {{"--stacks", "python,c", "--stack-min-size", "1MiB", "--torch-ops"},
            "MEMTAP_STACKS python,c\nMEMTAP_STACK_MIN_SIZE 1048576\nMEMTAP_TORCH_OPS 1\n"},
           {{"--stacks", "c", "--stack-min-size", "512KiB"},
            "MEMTAP_STACKS c\nMEMTAP_STACK_MIN_SIZE 524288\nMEMTAP_TORCH_OPS None\n"},
           {{"--stack-min-size", "4096"},
            "MEMTAP_STACKS None\nMEMTAP_STACK_MIN_SIZE 4096\nMEMTAP_TORCH_OPS None\n"},
           {{"--stack-min-size", "2GiB"},
            "MEMTAP_STACKS None\nMEMTAP_STACK_MIN_SIZE 2147483648\nMEMTAP_TORCH_OPS None\n"}}) {
    std::vector<std::string> args = {"run", "-o", dir.file("opts.db")};
    args.insert(args.end(), c.options.begin(), c.options.end());
    args.insert(args.end(), {"--", kPython, "-c", show});
    ProcessResult r = memtap(dir, args);
    ASSERT_TRUE(r.exited && r.exit_code == 0) << describe(r) << "\nstderr:\n" << r.err;
    EXPECT_EQ(r.out, c.expected) << c.options[1];
  }
  for (const std::vector<std::string>& bad :
       std::vector<std::vector<std::string>>{{"--stack-min-size", "1MB"},
                                             {"--stack-min-size", "lots"},
                                             {"--stack-min-size", "-1"},
                                             {"--stack-min-size", "0.5"},
                                             {"--stacks", "java"},
                                             {"--stacks", "python,"},
                                             {"--stacks"}}) {
    std::vector<std::string> args = {"run"};
    args.insert(args.end(), bad.begin(), bad.end());
    if (bad.size() > 1) args.insert(args.end(), {"--", "/bin/true"});
    ProcessResult r = memtap(dir, args);
    EXPECT_TRUE(r.exited && r.exit_code == 2) << bad[0] << " " << describe(r);
    EXPECT_EQ(split_lines(r.err).size(), 2u) << r.err;
    EXPECT_EQ(split_lines(r.err).back(), "see memtap run --help") << r.err;
    EXPECT_NE(r.err.find(bad[0]), std::string::npos) << r.err;
  }
}

// `cmake --install`: the installed memtap puts the installed package on PYTHONPATH.
TEST(PythonApi, InstalledMemtapFindsItsPythonPackage) {
  if (!have_python()) GTEST_SKIP() << kPython << " is not installed";
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string prefix = dir.file("prefix");
  ProcessResult inst = install_build(dir, prefix);
  ASSERT_TRUE(inst.exited && inst.exit_code == 0) << describe(inst) << inst.err;
  ProcessResult r = run_process(
      spec_in(dir, {prefix + "/bin/memtap", "run", "-o", dir.file("i.db"), "--", kPython, "-c",
                    "import memtap; print(memtap.__file__, memtap.active())"}),
      kProcessTimeout);
  ASSERT_TRUE(r.exited && r.exit_code == 0) << describe(r) << "\nstderr:\n" << r.err;
  EXPECT_EQ(r.out, prefix + "/lib/memtap/python/memtap/__init__.py True\n");
}

// --- the examples ------------------------------------------------------------------------

// examples/train_leak.py: the report names the owner leaks_mem, ~40 MiB per step, and the
// Python line that allocates it; the rows carry steps, marks, ranges, owners and that stack.
TEST(Examples, TrainLeakNamesTheLeakAndItsLine) {
  SKIP_WITHOUT_TORCH();
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string script = kExamples + "/train_leak.py";
  const std::string db = dir.file("leak.db");
  ProcessResult r =
      memtap(dir, {"run", "-o", db, "--stacks", "python", "--", kPython, script, "--steps", "12"});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << describe(r) << "\nstderr:\n" << r.err;
  EXPECT_NE(r.out.find("steps=12 "), std::string::npos) << r.out;
  const int line = line_of(script, "_debug_history.append(");
  ASSERT_GT(line, 0);
  const std::string frame = script + "(" + std::to_string(line) + "): remember";

  // The live report (memtap run prints it) names the owner and, on the line under it, the
  // stack that holds it.
  const size_t leak = r.err.find("owner leaks_mem: +40.0 MiB per step");
  ASSERT_NE(leak, std::string::npos) << r.err;
  const size_t under = r.err.find('\n', leak) + 1;
  const std::string line_under = r.err.substr(under, r.err.find('\n', under) - under);
  EXPECT_EQ(line_under.rfind("        from ", 0), 0u) << r.err;
  EXPECT_NE(line_under.find(frame), std::string::npos) << r.err;

  ProcessResult rep = memtap(dir, {"report", "--json", db});
  ASSERT_TRUE(rep.exited && rep.exit_code == 0) << describe(rep) << rep.err;
  size_t owner = rep.out.find(R"("what":"owner","key":"leaks_mem")");
  ASSERT_NE(owner, std::string::npos) << rep.out.substr(0, 4000);
  double per_step = json_number(rep.out, "bytes_per_step", owner);
  EXPECT_NEAR(per_step / kMiB, 40.0, 4.0);
  size_t stack = rep.out.find(R"("what":"stack","key":")" + frame);
  ASSERT_NE(stack, std::string::npos) << "the allocating line as a leak suspect";
  EXPECT_NEAR(json_number(rep.out, "bytes_per_step", stack) / kMiB, 40.0, 4.0);

  std::string error;
  std::unique_ptr<DbQuery> db_q = DbQuery::open(db, &error);
  ASSERT_TRUE(db_q) << error;
  EXPECT_EQ(db_q->scalar_int("SELECT COUNT(*) FROM memscope_dump WHERE Event = 'SYSTEM' AND "
                             "\"Event Type\" = 'STEP'"),
            12);
  EXPECT_EQ(db_q->scalar_int("SELECT COUNT(*) FROM memscope_dump WHERE Event = 'MSTX' AND "
                             "\"Event Type\" = 'Mark' AND Name = 'backward'"),
            12);
  for (const char* range : {"forward", "backward", "optimizer"}) {
    for (const char* end : {"Range_start", "Range_end"}) {
      EXPECT_EQ(db_q->scalar_int(std::string("SELECT COUNT(*) FROM memscope_dump WHERE Event = "
                                             "'MSTX' AND \"Event Type\" = '") +
                                 end + "' AND Name = '" + range + "'"),
                12)
          << range << " " << end;
    }
  }
  const std::string leaking =
      "FROM memscope_dump WHERE Event = 'MALLOC' AND " + attr("size") + " = '41943040'";
  EXPECT_EQ(db_q->scalar_int("SELECT COUNT(*) " + leaking), 12);
  EXPECT_EQ(
      db_q->scalar_int("SELECT COUNT(*) " + leaking + " AND " + attr("owner") + " = 'leaks_mem'"),
      12);
  EXPECT_EQ(db_q->scalar_int("SELECT COUNT(*) " + leaking + " AND \"Call Stack(Python)\" LIKE " +
                             q(frame + "\n%")),
            12)
      << "innermost frame first: the line that allocates";
  EXPECT_EQ(db_q->scalar_int("SELECT COUNT(*) FROM memtap_session WHERE events_dropped != 0"), 0);
}

// With --torch-ops memtap's TorchDispatchMode runs every operator: its frames, torch's
// around it and torch/_ops.py's __call__ inside it are memtap's doing, and stay out of the
// stacks, whose innermost line is still the program's.
TEST(Examples, TrainLeakUnderTorchOpsNamesTheSameLine) {
  SKIP_WITHOUT_TORCH();
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string script = kExamples + "/train_leak.py";
  const std::string db = dir.file("leak.db");
  ProcessResult r = memtap(dir, {"run", "-o", db, "--stacks", "python", "--torch-ops", "--",
                                 kPython, script, "--steps", "3"});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << describe(r) << "\nstderr:\n" << r.err;
  const int line = line_of(script, "_debug_history.append(");
  ASSERT_GT(line, 0);
  const std::string frame = script + "(" + std::to_string(line) + "): remember";
  std::string error;
  std::unique_ptr<DbQuery> db_q = DbQuery::open(db, &error);
  ASSERT_TRUE(db_q) << error;
  const std::string leaking =
      "FROM memscope_dump WHERE Event = 'MALLOC' AND " + attr("size") + " = '41943040'";
  ASSERT_EQ(db_q->scalar_int("SELECT COUNT(*) " + leaking), 3);
  EXPECT_EQ(db_q->scalar_int("SELECT COUNT(*) " + leaking + " AND \"Call Stack(Python)\" LIKE " +
                             q(frame + "\n%")),
            3)
      << "innermost frame first: the line that allocates";
  // The operators were watched (their rows are there), and no stack names the machinery:
  // memtap's mode, torch's helper mode around it (both __torch_dispatch__), memtap's hook
  // around torch's import (sitecustomize.py), whose allocations keep their other frames.
  EXPECT_GT(db_q->scalar_int("SELECT COUNT(*) FROM memscope_dump WHERE Event = 'OP_LAUNCH'"), 0);
  EXPECT_EQ(db_q->scalar_int("SELECT COUNT(*) FROM memscope_dump WHERE \"Call Stack(Python)\" "
                             "LIKE '%__torch_dispatch__%' OR \"Call Stack(Python)\" LIKE "
                             "'%memtap/torch.py%' OR \"Call Stack(Python)\" LIKE "
                             "'%sitecustomize.py%'"),
            0);
  EXPECT_GT(db_q->scalar_int("SELECT COUNT(*) FROM memscope_dump WHERE \"Call Stack(Python)\" "
                             "LIKE '%torch/__init__.py(%): <module>%'"),
            0);
}

// examples/train_fragmentation.py: the pool's slabs keep Reserved far above Allocated;
// with --torch-ops its operators are OP_LAUNCH rows and name the memory they allocate.
TEST(Examples, TrainFragmentationReservesFarMoreThanItUses) {
  SKIP_WITHOUT_TORCH();
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string db = dir.file("frag.db");
  ProcessResult r = memtap(
      dir, {"run", "-o", db, "--torch-ops", "--", kPython, kExamples + "/train_fragmentation.py"});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << describe(r) << "\nstderr:\n" << r.err;
  EXPECT_NE(r.out.find("pool_reserved=384 MiB"), std::string::npos) << r.out;
  EXPECT_NE(r.err.find("Fragmentation: worst at"), std::string::npos) << r.err;

  ProcessResult rep = memtap(dir, {"report", "--json", db});
  ASSERT_TRUE(rep.exited && rep.exit_code == 0) << describe(rep) << rep.err;
  size_t frag = rep.out.find("\"fragmentation\":");
  ASSERT_NE(frag, std::string::npos) << rep.out.substr(0, 4000);
  const double reserved = json_number(rep.out, "reserved", frag);
  const double allocated = json_number(rep.out, "allocated", frag);
  EXPECT_GE((reserved - allocated) / kMiB, 350.0) << "12 slabs of 32 MiB, nearly empty";
  EXPECT_GE(reserved, 3 * allocated);

  std::string error;
  std::unique_ptr<DbQuery> db_q = DbQuery::open(db, &error);
  ASSERT_TRUE(db_q) << error;
  // Once beside two busy loops (1 run in ~40) the whole training loop was missing from the
  // recording (no STEP, no slab, no operator) though the program ran it: what the sessions
  // and memtap said is what tells where the events went.
  const std::string why = memtap_session_text(*db_q) + "memtap's stderr:\n" + r.err;
  EXPECT_GE(db_q->scalar_int("SELECT COUNT(*) FROM memscope_dump WHERE Event = 'MALLOC' AND " +
                             attr("size") + " = '33554432' AND " + attr("kind") + " = 'mmap'"),
            12)
      << "a slab kept per step\n"
      << why;
  EXPECT_EQ(db_q->scalar_int("SELECT COUNT(*) FROM memscope_dump WHERE Event = 'SYSTEM' AND "
                             "\"Event Type\" = 'STEP'"),
            12);
  EXPECT_EQ(db_q->scalar_int("SELECT COUNT(*) FROM memscope_dump WHERE Event = 'OP_LAUNCH' AND "
                             "\"Event Type\" = 'ATEN_START' AND Name = 'aten::mm'"),
            12);
  EXPECT_EQ(db_q->scalar_int("SELECT COUNT(*) FROM memscope_dump WHERE Event = 'OP_LAUNCH' AND "
                             "\"Event Type\" = 'ATEN_END' AND Name = 'aten::mm'"),
            12);
  EXPECT_GT(db_q->scalar_int("SELECT COUNT(*) FROM memscope_dump WHERE Event = 'MALLOC' AND "
                             "Name LIKE 'aten::%'"),
            0)
      << "allocations named after the operator that made them";
}

// examples/train_multirank.py: two gloo ranks, each its own process streaming into the one
// monitor, each listed under its hostname and rank.
TEST(Examples, TrainMultirankListsEachRank) {
  SKIP_WITHOUT_TORCH();
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string db = dir.file("ranks.db");
  ProcessResult r =
      memtap(dir, {"run", "-o", db, "--", kPython, kExamples + "/train_multirank.py"});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << describe(r) << "\nstderr:\n" << r.err;
  const std::string host = host_name();
  std::map<int, std::string> rank_pids;
  std::istringstream out(r.out);
  for (std::string line; std::getline(out, line);) {
    int rank = -1, world = -1;
    long long pid = 0;
    if (sscanf(line.c_str(), "rank=%d world=%d pid=%lld", &rank, &world, &pid) == 3) {
      EXPECT_EQ(world, 2);
      rank_pids[rank] = std::to_string(pid);
    }
  }
  ASSERT_EQ(rank_pids.size(), 2u) << r.out;
  for (int rank = 0; rank < 2; ++rank) {
    EXPECT_NE(r.err.find("process " + rank_pids[rank] + " on " + host + ", rank " +
                         std::to_string(rank) + " of 2"),
              std::string::npos)
        << r.err;
  }

  std::string error;
  std::unique_ptr<DbQuery> db_q = DbQuery::open(db, &error);
  ASSERT_TRUE(db_q) << error;
  // Beside two busy loops both ranks once had no STEP at all: what the sessions and memtap
  // said is what tells where the events went.
  const std::string why = memtap_session_text(*db_q) + "memtap's stderr:\n" + r.err;
  for (int rank = 0; rank < 2; ++rank) {
    const std::string& pid = rank_pids[rank];
    EXPECT_EQ(db_q->scalar_int("SELECT rank FROM memtap_session WHERE pid = " + pid), rank);
    EXPECT_EQ(db_q->scalar_int("SELECT world_size FROM memtap_session WHERE pid = " + pid), 2);
    EXPECT_EQ(db_q->scalar_int("SELECT COUNT(*) FROM memtap_session WHERE pid = " + pid +
                               " AND hostname = " + q(host)),
              1);
    EXPECT_EQ(db_q->scalar_int("SELECT COUNT(*) FROM memscope_dump WHERE \"Process Id\" = " + pid +
                               " AND Event = 'SYSTEM' AND \"Event Type\" = 'STEP'"),
              10)
        << why;
  }
  EXPECT_EQ(db_q->scalar_int("SELECT COUNT(*) FROM memtap_session WHERE rank >= 0"), 2)
      << "only the ranks have a rank (not the launcher, nor multiprocessing's helper)";
  EXPECT_EQ(db_q->scalar_int("SELECT COUNT(*) FROM memtap_session WHERE bye_received != 1 OR "
                             "events_dropped != 0"),
            0)
      << why;
}

// The README's native example (the demo's workload): no Python at all. It tells memtap its
// steps, owners and ranges through agent/memtap_optional.h, so the report names the leak
// that grows every third step, and who held the peak; without memtap the calls do nothing.
TEST(Examples, NativeExampleFromTheReadme) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  ASSERT_EQ(access(kNativeExample.c_str(), X_OK), 0) << kNativeExample;
  ProcessSpec plain = spec_in(dir, {kNativeExample});
  const ProcessResult alone = run_process(plain, kProcessTimeout);
  ASSERT_TRUE(alone.exited && alone.exit_code == 0) << describe(alone) << "\n" << alone.err;
  EXPECT_NE(alone.out.find("metrics cache      100 records"), std::string::npos) << alone.out;

  const std::string db = dir.file("native.db");
  ProcessResult r = memtap(dir, {"run", "-o", db, "--", kNativeExample});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << describe(r) << "\nstderr:\n" << r.err;
  // The same figures (all but the time the loop took).
  EXPECT_EQ(r.out.substr(0, r.out.find("  loss ")), alone.out.substr(0, alone.out.find("  loss ")))
      << "the program says the same under memtap";
  // The summary counts what the report counts: the owner changes the program sent label the
  // rows and are not rows of their own.
  std::smatch said, reported;
  ASSERT_TRUE(std::regex_search(
      r.err, said,
      std::regex(std::string("memtap: 1 process, ") + kCountRegex + " events, 0 dropped\n")))
      << r.err;
  ASSERT_TRUE(
      std::regex_search(r.err, reported,
                        std::regex(std::string("memtap report: live \\(memscope_dump\\), ") +
                                   kCountRegex + " events\n")))
      << r.err;
  EXPECT_EQ(said[1].str(), reported[1].str()) << r.err;
  for (const char* part : {"Leaks by step (300 steps):\n",
                           "      owner metrics cache: +2.6 KiB per step since step 1 ",
                           "  weights\n", "  gradient pool\n", "  activations\n",
                           "      range    forward                          x300"}) {
    EXPECT_NE(r.err.find(part), std::string::npos) << part << " in\n" << r.err;
  }
  std::string error;
  std::unique_ptr<DbQuery> db_q = DbQuery::open(db, &error);
  ASSERT_TRUE(db_q) << error;
  EXPECT_GT(db_q->scalar_int("SELECT COUNT(*) FROM memscope_dump WHERE Event = 'MALLOC'"), 1000);
  EXPECT_EQ(db_q->scalar_int("SELECT COUNT(*) FROM memtap_session"), 1);
  EXPECT_EQ(db_q->scalar_int("SELECT COUNT(*) FROM memscope_dump WHERE Event = 'SYSTEM' AND "
                             "\"Event Type\" = 'STEP'"),
            300);
}

}  // namespace
}  // namespace memtap::e2e
