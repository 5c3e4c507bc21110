// The agent stays out of the application's way: it exports only the hooks and the
// memtap_* C ABI, depends on nothing but libc (its ZeroMQ and Cap'n Proto live in
// libmemtap_sender.so, loaded with dlmopen), and a program with its own libzmq works
// under it and is recorded.
#include <gtest/gtest.h>
#include <unistd.h>

#include <set>
#include <sstream>

#include "tests/e2e/e2e_support.h"
#include "tests/e2e/recording_checks.h"

namespace memtap::e2e {
namespace {

// The absolute path of a tool found in PATH, or "".
std::string find_tool(const std::string& name) {
  const char* path = getenv("PATH");
  std::stringstream dirs(path ? path : "/usr/bin:/bin");
  std::string dir;
  while (std::getline(dirs, dir, ':')) {
    std::string candidate = (dir.empty() ? "." : dir) + "/" + name;
    if (access(candidate.c_str(), X_OK) == 0) return candidate;
  }
  return "";
}

// Output of a binutils tool run on the agent; fails the test if it cannot run.
std::string tool_output(const std::vector<std::string>& argv) {
  std::string tool = find_tool(argv[0]);
  if (tool.empty()) {
    ADD_FAILURE() << argv[0] << " not found in PATH (binutils is needed to build memtap)";
    return "";
  }
  ProcessSpec spec;
  spec.argv = argv;
  spec.argv[0] = tool;
  spec.env_set = {"LC_ALL=C"};
  ProcessResult r = run_process(spec, kProcessTimeout);
  EXPECT_TRUE(r.exited && r.exit_code == 0) << argv[0] << ": " << describe(r) << "\n" << r.err;
  return r.out;
}

TEST(AgentIsolation, ExportsOnlyTheHooksAndTheMemtapAbi) {
  const std::set<std::string> hooks = {
      "malloc",   "free",   "calloc",  "realloc", "reallocarray", "posix_memalign", "aligned_alloc",
      "memalign", "valloc", "pvalloc", "mmap",    "mmap64",       "munmap",         "mremap",
      "fork",     "_exit",  "_Exit",   "dlsym",   "dlvsym",       "dlclose"};
  // agent/hooks/exec_hooks.cpp: the flush before exec, and before closing every descriptor.
  const std::set<std::string> exec_hooks = {
      "execve",  "execv",    "execvp",      "execvpe",   "execl", "execlp", "execle",
      "fexecve", "execveat", "close_range", "closefrom", "close", "dup2",   "dup3"};
  // agent/hooks/signal_hooks.cpp: the program's own signal dispositions.
  const std::set<std::string> signal_hooks = {"sigaction", "signal",      "bsd_signal",
                                              "ssignal",   "sysv_signal", "__sysv_signal",
                                              "sigset",    "sigignore",   "siginterrupt"};
  // The CUDA runtime and driver functions (agent/exports.map): by prefix, since the list
  // follows the CUDA API.
  auto is_cuda_hook = [](const std::string& name) {
    return name.rfind("cuda", 0) == 0 || name.rfind("__cuda", 0) == 0 ||
           name.rfind("cuMem", 0) == 0 || name.rfind("cuLaunchKernel", 0) == 0 ||
           name.rfind("cuGetProcAddress", 0) == 0;
  };
  std::set<std::string> exported, unexpected;
  for (const std::string& line :
       split_lines(tool_output({"nm", "-D", "--defined-only", kAgentLib}))) {
    // "<address> <type> <name>[@version]"
    std::istringstream fields(line);
    std::string address, type, name;
    if (!(fields >> address >> type >> name)) continue;
    name = name.substr(0, name.find('@'));
    exported.insert(name);
    if (!hooks.count(name) && !exec_hooks.count(name) && !signal_hooks.count(name) &&
        !is_cuda_hook(name) && name.rfind("memtap_", 0) != 0) {
      unexpected.insert(name);
    }
  }
  EXPECT_EQ(unexpected, std::set<std::string>{}) << "symbols the agent must not export";
  for (const std::string& hook : hooks)
    EXPECT_TRUE(exported.count(hook)) << "hook not exported: " << hook;
  for (const std::string& hook : exec_hooks)
    EXPECT_TRUE(exported.count(hook)) << "hook not exported: " << hook;
  for (const std::string& hook : signal_hooks)
    EXPECT_TRUE(exported.count(hook)) << "signal hook not exported: " << hook;
  for (const char* hook : {"cudaMalloc", "__cudaLaunchKernel", "cuMemAlloc_v2", "cuMemMap",
                           "cuGetProcAddress_v2", "cudaGetDriverEntryPointByVersion"}) {
    EXPECT_TRUE(exported.count(hook)) << "CUDA hook not exported: " << hook;
  }
}

TEST(AgentIsolation, NeedsNothingButLibc) {
  std::vector<std::string> needed;
  for (const std::string& line : split_lines(tool_output({"readelf", "-d", kAgentLib}))) {
    if (line.find("(NEEDED)") == std::string::npos) continue;
    size_t open = line.find('['), close = line.find(']');
    if (open != std::string::npos && close != std::string::npos)
      needed.push_back(line.substr(open + 1, close - open - 1));
  }
  EXPECT_EQ(needed, std::vector<std::string>{"libc.so.6"})
      << "the agent may link only libc: ZeroMQ, Cap'n Proto and libstdc++ belong to the "
         "sender, in its own link namespace";
}

// A program that never starts a thread of its own has the sender's threads in it all the
// same (their libc is another copy), and its libc must know: believing its process
// single-threaded, it takes no lock in malloc, which the loader calls from the sender's
// threads (their TLS), and releases its locks without waking a waiter (the loader's: the
// sender hung at exit beside busy cores). Python without threads: 1 alone, 0 under the agent,
// C stacks or not.
TEST(AgentIsolation, TheProgramsLibcKnowsItIsNotSingleThreadedAnyMore) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string script =
      "import ctypes\n"
      "print(ctypes.c_byte.in_dll(ctypes.CDLL(None), '__libc_single_threaded').value)\n";
  ProcessResult alone =
      run_process(spec_in(dir, {"/usr/bin/python3", "-c", script}), kProcessTimeout);
  ASSERT_TRUE(alone.exited && alone.exit_code == 0) << describe(alone) << alone.err;
  EXPECT_EQ(alone.out, "1\n");
  for (const std::string stacks : {"", "c"}) {
    const std::string db = dir.file("single" + stacks + ".db");
    ProcessSpec spec =
        spec_in(dir, {kMemtapBin, "run", "-o", db, "--", "/usr/bin/python3", "-c", script});
    if (!stacks.empty()) spec.env_set.push_back("MEMTAP_STACKS=" + stacks);
    ProcessResult traced = run_process(spec, kProcessTimeout);
    ASSERT_TRUE(traced.exited && traced.exit_code == 0) << describe(traced) << traced.err;
    EXPECT_EQ(traced.out, "0\n") << "MEMTAP_STACKS=" << stacks;
  }
}

// The application loads the system libzmq itself and round-trips 1000 messages through
// it while the agent's own copy streams to the monitor; its blocks are still recorded.
TEST(AgentIsolation, ProgramWithItsOwnZeroMqRunsAndIsRecorded) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string db = dir.file("zmq.db");
  WallWindow window;
  window.begin_ns = realtime_now_ns();
  ProcessResult r =
      run_process(spec_in(dir, {kMemtapBin, "run", "-o", db, "--", kForeignZmq}), kProcessTimeout);
  window.end_ns = realtime_now_ns();
  ASSERT_TRUE(r.exited) << describe(r) << "\nstderr:\n" << r.err;
  EXPECT_EQ(r.exit_code, 0) << "stdout:\n" << r.out << "\nstderr:\n" << r.err;
  std::vector<std::string> lines = split_lines(r.out);
  EXPECT_TRUE(!lines.empty() && lines.back() == "foreign_zmq ok") << r.out;

  RecordingData rec;
  std::string error;
  ASSERT_TRUE(load_recording(db, &rec, &error)) << error;
  expect_well_formed(rec, window);
  ASSERT_EQ(rec.sessions.size(), 1u);
  const int64_t pid = rec.sessions.begin()->first;
  int mallocs = 0, frees = 0;
  for (const DumpRecord& row : rec.rows) {
    if (row.pid != pid || row.size != 31337) continue;
    mallocs += row.event == "MALLOC";
    frees += row.event == "FREE";
  }
  EXPECT_EQ(mallocs, 10) << "MALLOC rows of the program's 31337-byte blocks";
  EXPECT_EQ(frees, 10) << "FREE rows of the program's 31337-byte blocks";
}

}  // namespace
}  // namespace memtap::e2e
