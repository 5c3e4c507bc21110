// A real interpreter under `memtap run`: CPython allocating in a thread, then os.fork()
// with a child that ends in os._exit() (as multiprocessing and DataLoader workers do).
// Both processes must be recorded in full, the child's Bye proving the _exit() flush.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>

#include "tests/e2e/db_query.h"
#include "tests/e2e/e2e_support.h"
#include "tests/e2e/recording_checks.h"

namespace memtap::e2e {
namespace {

constexpr const char* kPython = "/usr/bin/python3";
// bytearray(n) asks malloc for n plus a little (the trailing NUL): rows of n .. n+64 bytes.
constexpr uint64_t kThreadBytes = 3000017;
constexpr int kThreadBlocks = 5;
constexpr uint64_t kChildBytes = 2000003;
constexpr int kChildBlocks = 3;

constexpr const char* kScript = R"(
import os, threading
def work(out):
    out.append(threading.get_native_id())
    blocks = [bytearray(3000017) for _ in range(5)]
    del blocks
tids = []
t = threading.Thread(target=work, args=(tids,))
t.start()
t.join()
pid = os.fork()
if pid == 0:
    blocks = [bytearray(2000003) for _ in range(3)]
    del blocks
    os._exit(0)
_, status = os.waitpid(pid, 0)
print(f"pid={os.getpid()} thread_tid={tids[0]} child={pid} status={os.waitstatus_to_exitcode(status)}", flush=True)
)";

TEST(PythonWorkload, ThreadAndForkedChildAreRecorded) {
  if (access(kPython, X_OK) != 0) GTEST_SKIP() << kPython << " is not installed";
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string script = dir.file("workload.py");
  std::ofstream(script) << kScript;
  const std::string db = dir.file("python.db");

  WallWindow window;
  window.begin_ns = realtime_now_ns();
  std::string error;
  std::unique_ptr<Process> memtap =
      Process::start(spec_in(dir, {kMemtapBin, "run", "-o", db, "--", kPython, script}), &error);
  ASSERT_TRUE(memtap) << error;
  const pid_t memtap_pid = memtap->pid();
  ProcessResult r = memtap->wait(kProcessTimeout);
  window.end_ns = realtime_now_ns();
  ASSERT_TRUE(r.exited) << describe(r) << "\nstderr:\n" << r.err;
  ASSERT_EQ(r.exit_code, 0) << "stdout:\n" << r.out << "\nstderr:\n" << r.err;
  long long pid = 0, thread_tid = 0, child = 0;
  int status = -1;
  ASSERT_EQ(sscanf(r.out.c_str(), "pid=%lld thread_tid=%lld child=%lld status=%d", &pid,
                   &thread_tid, &child, &status),
            4)
      << r.out;
  EXPECT_EQ(status, 0) << "the child's exit status";

  RecordingData rec;
  ASSERT_TRUE(load_recording(db, &rec, &error)) << error;
  expect_well_formed(rec, window);

  ASSERT_EQ(rec.sessions.count(pid), 1u) << "no memtap_session row for the interpreter";
  ASSERT_EQ(rec.sessions.count(child), 1u) << "no memtap_session row for the forked child";
  const SessionRecord& parent_session = rec.sessions.at(pid);
  const SessionRecord& child_session = rec.sessions.at(child);
  EXPECT_EQ(rec.sessions.size(), 2u);
  EXPECT_EQ(parent_session.ppid, memtap_pid);
  EXPECT_EQ(parent_session.forked_from_pid, 0);
  EXPECT_EQ(parent_session.bye_received, 1) << "the interpreter's exit flush";
  EXPECT_EQ(child_session.ppid, pid);
  EXPECT_EQ(child_session.forked_from_pid, pid);
  EXPECT_EQ(child_session.bye_received, 1) << "os._exit() in the child must flush and say Bye";
  EXPECT_EQ(parent_session.command_line, std::string(kPython) + " " + script);
  EXPECT_EQ(child_session.command_line, std::string(kPython) + " " + script);

  // The thread's and the child's bytearrays, each a MALLOC and a FREE on the right thread.
  auto count = [&](int64_t in_pid, int64_t on_tid, const char* event, uint64_t bytes) {
    int n = 0;
    for (const DumpRecord& row : rec.rows)
      n += row.pid == in_pid && row.tid == on_tid && row.event == event && row.size >= bytes &&
           row.size <= bytes + 64;
    return n;
  };
  EXPECT_EQ(count(pid, thread_tid, "MALLOC", kThreadBytes), kThreadBlocks);
  EXPECT_EQ(count(pid, thread_tid, "FREE", kThreadBytes), kThreadBlocks);
  EXPECT_EQ(count(child, child, "MALLOC", kChildBytes), kChildBlocks);
  EXPECT_EQ(count(child, child, "FREE", kChildBytes), kChildBlocks);
}

// PyTorch (Debian's python3-torch, CPU) under the agent: a training step with a DataLoader
// whose two workers are fork()ed children, as users run it. The tensor of a distinctive size
// comes from torch's CPU allocator (posix_memalign) and must be recorded with its size.
constexpr uint64_t kTensorBytes = 10000019;
constexpr const char* kTorchScript = R"(
import os, torch
from torch.utils.data import DataLoader, TensorDataset
big = torch.empty(10000019, dtype=torch.uint8)
ds = TensorDataset(torch.randn(64, 8), torch.randn(64, 1))
model = torch.nn.Linear(8, 1)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for x, y in DataLoader(ds, batch_size=16, num_workers=2):
    loss = ((model(x) - y) ** 2).mean()
    opt.zero_grad(); loss.backward(); opt.step()
del big
print(f"pid={os.getpid()}", flush=True)
)";

TEST(PythonWorkload, TorchTrainingWithDataLoaderWorkers) {
  if (access(kPython, X_OK) != 0) GTEST_SKIP() << kPython << " is not installed";
  ProcessSpec probe;
  probe.argv = {kPython, "-c", "import torch"};
  if (run_process(probe, kProcessTimeout).exit_code != 0) {
    GTEST_SKIP() << "torch is not importable by " << kPython;
  }
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string script = dir.file("train.py");
  std::ofstream(script) << kTorchScript;
  const std::string db = dir.file("torch.db");
  ProcessResult r = run_process(spec_in(dir, {kMemtapBin, "run", "-o", db, "--", kPython, script}),
                                kProcessTimeout);
  ASSERT_TRUE(r.exited && r.exit_code == 0) << describe(r) << "\nstderr:\n" << r.err;
  long long pid = 0;
  ASSERT_EQ(sscanf(r.out.c_str(), "pid=%lld", &pid), 1) << r.out;

  // Importing torch makes a million allocations: the checks are SQL queries here, not the
  // whole recording loaded into memory (the well-formedness of recordings is pinned by
  // the other tests).
  std::string error;
  std::unique_ptr<DbQuery> q = DbQuery::open(db, &error);
  ASSERT_TRUE(q) << error;
  const std::string p = std::to_string(pid);
  EXPECT_EQ(q->scalar_int("SELECT COUNT(*) FROM memtap_session WHERE forked_from_pid = " + p), 2)
      << "both DataLoader workers recorded as processes of their own";
  EXPECT_EQ(q->scalar_int("SELECT COUNT(*) FROM memtap_session"), 3);
  // It failed once in a loaded ctest run (1 of ~10 runs, not reproduced in 18 more beside
  // the same load): the interpreter's session lacked the tensor's rows and had 22 unpaired
  // FREEs. What each process's session says, and memtap's own summary, are what tell a
  // drop in the agent from a loss on the way or in the monitor.
  const std::string why = memtap_session_text(*q) + "memtap's stderr:\n" + r.err;
  EXPECT_EQ(q->scalar_int("SELECT COUNT(*) FROM memtap_session WHERE bye_received != 1 OR "
                          "events_dropped != 0"),
            0)
      << why;
  const std::string tensor = "WHERE \"Process Id\" = " + p + " AND Attr LIKE '%\"size\":\"" +
                             std::to_string(kTensorBytes) + "\"%'";
  EXPECT_EQ(q->scalar_int("SELECT COUNT(*) FROM memscope_dump " + tensor + " AND Event = 'MALLOC'"),
            1)
      << "the 10000019-byte tensor's allocation\n"
      << why;
  EXPECT_EQ(q->scalar_int("SELECT COUNT(*) FROM memscope_dump " + tensor + " AND Event = 'FREE'"),
            1)
      << "and its release";
  // Every FREE in the interpreter paired: same id as an earlier MALLOC of that address.
  EXPECT_EQ(q->scalar_int("SELECT COUNT(*) FROM memscope_dump WHERE \"Process Id\" = " + p +
                          " AND Event = 'FREE' AND Attr LIKE '{\"allocation_id\":\"0\"%'"),
            0)
      << "FREEs of blocks never seen allocated";
}

// memtap run watches PyTorch's CUDA pool as soon as a program imports torch; a torch without
// CUDA (Debian's) has no pool, and the program must see nothing of it: no message, no
// compiler run, torch as usual.
TEST(PythonWorkload, TorchWithoutCudaLeavesThePoolUnwatchedQuietly) {
  if (access(kPython, X_OK) != 0) GTEST_SKIP() << kPython << " is not installed";
  ProcessSpec probe;
  probe.argv = {kPython, "-c", "import sys, torch; sys.exit(torch.version.cuda is not None)"};
  if (run_process(probe, kProcessTimeout).exit_code != 0) {
    GTEST_SKIP() << "no CPU-only torch importable by " << kPython;
  }
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string script = dir.file("cpu_torch.py");
  std::ofstream(script) << "import torch\n"
                           "from memtap import _torch_pool\n"
                           "print('sum', int(torch.ones(1000).sum()))\n"
                           "print('pool', _torch_pool.mode, '|', _torch_pool.reason)\n";
  ProcessResult r = run_process(
      spec_in(dir, {kMemtapBin, "run", "-o", dir.file("cpu.db"), "--", kPython, script}),
      kProcessTimeout);
  ASSERT_TRUE(r.exited && r.exit_code == 0) << describe(r) << "\nstderr:\n" << r.err;
  EXPECT_NE(r.out.find("sum 1000\n"), std::string::npos) << r.out;
  // "off", not None: the import of torch ran memtap.torch.watch_pool().
  EXPECT_NE(r.out.find("pool off | this torch has no CUDA"), std::string::npos) << r.out;
  EXPECT_EQ(r.err.find("memtap: PyTorch"), std::string::npos) << r.err;
  EXPECT_EQ(r.err.find("compiling"), std::string::npos) << r.err;

  // --no-torch-pool leaves it alone altogether.
  r = run_process(spec_in(dir, {kMemtapBin, "run", "-o", dir.file("cpu2.db"), "--no-torch-pool",
                                "--", kPython, script}),
                  kProcessTimeout);
  ASSERT_TRUE(r.exited && r.exit_code == 0) << describe(r) << "\nstderr:\n" << r.err;
  EXPECT_NE(r.out.find("pool None | None"), std::string::npos) << r.out;
}

// LD_PRELOAD with a relative path (as a user types it), then the program changes directory
// and forks: the child must still find the sender library to stream on its own.
TEST(PythonWorkload, RelativeAgentPathSurvivesChdirAndFork) {
  if (access(kPython, X_OK) != 0) GTEST_SKIP() << kPython << " is not installed";
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string endpoint = "ipc://" + dir.file("m.sock");
  const std::string db = dir.file("relative.db");
  std::unique_ptr<Process> recorder = start_recorder(dir, endpoint, db);
  ASSERT_TRUE(recorder);
  const std::string script = dir.file("chdir_fork.py");
  std::ofstream(script) << R"(
import os
os.chdir("/")
pid = os.fork()
if pid == 0:
    blocks = [bytearray(4321) for _ in range(3)]
    os._exit(0)
os.waitpid(pid, 0)
print(pid, flush=True)
)";
  const std::string agent_dir = kAgentLib.substr(0, kAgentLib.rfind('/'));
  ProcessSpec spec = spec_in(dir, {kPython, script});
  spec.cwd = agent_dir.substr(0, agent_dir.rfind('/'));
  spec.env_set.push_back("LD_PRELOAD=" + agent_dir.substr(agent_dir.rfind('/') + 1) + "/" +
                         kAgentLib.substr(kAgentLib.rfind('/') + 1));
  spec.env_set.push_back("MEMTAP_ENDPOINT=" + endpoint);
  ProcessResult r = run_process(spec, kProcessTimeout);
  ASSERT_TRUE(r.exited && r.exit_code == 0) << describe(r) << "\nstderr:\n" << r.err;
  EXPECT_EQ(r.err.find("memtap agent"), std::string::npos) << "no agent warning: " << r.err;
  const std::string child = std::to_string(std::stoll(r.out));
  ProcessResult stopped = stop_recorder(*recorder);
  ASSERT_TRUE(stopped.exited && stopped.exit_code == 0) << describe(stopped) << stopped.err;

  std::string error;
  std::unique_ptr<DbQuery> q = DbQuery::open(db, &error);
  ASSERT_TRUE(q) << error;
  EXPECT_EQ(q->scalar_int("SELECT bye_received FROM memtap_session WHERE pid = " + child), 1);
  EXPECT_EQ(q->scalar_int("SELECT COUNT(*) FROM memscope_dump WHERE \"Process Id\" = " + child +
                          " AND Event = 'MALLOC' AND Attr LIKE '%\"size\":\"4322\"%'"),
            3);
}

}  // namespace
}  // namespace memtap::e2e
