// Call stacks on large allocations, read straight off the wire: a real interpreter
// (/usr/bin/python3) and a real C program run under LD_PRELOAD with MEMTAP_STACKS, and the
// test decodes what the agent sends to a ZeroMQ PULL socket of its own (no monitor).
//
// Pinned: a pythonStack record right before a large block's malloc, its text innermost
// first as "file(line): function"; the same for a thread started with threading.Thread;
// no stack on a small block; none at all without MEMTAP_STACKS; a cStack naming the C
// functions that called malloc.
#include <capnp/serialize.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <fstream>
#include <map>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "common/wire.capnp.h"
#include "tests/e2e/db_query.h"
#include "tests/e2e/e2e_support.h"

namespace memtap::e2e {
namespace {

constexpr const char* kPython = "/usr/bin/python3";
const std::string kStackAlloc = MEMTAP_TEST_STACK_ALLOC;
constexpr uint64_t kDefaultMinSize = 1 << 20;

struct Event {
  wire::EventKind kind = wire::EventKind::MALLOC;
  uint64_t size_bytes = 0;
  uint32_t string_id = 0;
};

// What the one traced process sent.
struct Module {
  std::string path;
  uint64_t load_bias = 0, start = 0, end = 0;
};

struct Stream {
  std::map<uint32_t, std::string> strings;         // id -> text
  std::vector<Module> modules;                     // Batch.modules, in the order sent
  std::map<uint32_t, std::vector<Event>> threads;  // tid -> events in the thread's order
  bool bye = false;
};

void decode(const zmq::message_t& msg, Stream* s) {
  ASSERT_EQ(msg.size() % sizeof(capnp::word), 0u);
  kj::Array<capnp::word> words = kj::heapArray<capnp::word>(msg.size() / sizeof(capnp::word));
  memcpy(words.begin(), msg.data(), msg.size());
  capnp::ReaderOptions options;
  options.traversalLimitInWords = words.size() * 4 + 64;
  capnp::FlatArrayMessageReader reader(words, options);
  auto m = reader.getRoot<wire::Message>();
  ASSERT_EQ(m.getProtocolVersion(), wire::PROTOCOL_VERSION);
  auto body = m.getBody();
  if (body.isBatch()) {
    for (auto def : body.getBatch().getStrings())
      s->strings[def.getId()] = std::string(def.getText().cStr(), def.getText().size());
    for (auto m : body.getBatch().getModules())
      s->modules.push_back({m.getPath(), m.getLoadBias(), m.getStart(), m.getEnd()});
    for (auto thread : body.getBatch().getThreads()) {
      std::vector<Event>& events = s->threads[thread.getThreadId()];
      for (auto e : thread.getEvents()) {
        // The sender's resident-set readings travel as a run of their own under the pid, the
        // main thread's id: they are not in the thread's order, and would fall between a
        // stack and its malloc whenever a batch ends there.
        if (e.getKind() == wire::EventKind::RSS_SAMPLE) continue;
        events.push_back({e.getKind(), e.getSizeBytes(), e.getStringId()});
      }
    }
  } else if (body.isBye()) {
    s->bye = true;
  }
}

struct StackRun {
  ProcessResult result;
  Stream stream;
};

// Runs argv under the agent with `env` added, collecting the stream until its Bye.
StackRun run_on_wire(const TempDir& dir, std::vector<std::string> argv,
                     std::vector<std::string> env) {
  StackRun run;
  const std::string endpoint = "ipc://" + dir.file("stacks.sock");
  zmq::context_t ctx;
  zmq::socket_t pull(ctx, zmq::socket_type::pull);
  pull.set(zmq::sockopt::rcvhwm, 0);
  pull.bind(endpoint);
  ProcessSpec spec = preloaded_spec(dir, std::move(argv), endpoint);
  spec.env_unset.push_back("MEMTAP_STACKS");
  spec.env_unset.push_back("MEMTAP_STACK_MIN_SIZE");
  spec.env_unset.push_back("PYTHONPATH");
  for (std::string& e : env) spec.env_set.push_back(std::move(e));
  std::string error;
  std::unique_ptr<Process> proc = Process::start(spec, &error);
  if (!proc) {
    ADD_FAILURE() << "cannot start " << spec.argv[0] << ": " << error;
    return run;
  }
  auto deadline = std::chrono::steady_clock::now() + kProcessTimeout;
  while (!run.stream.bye && std::chrono::steady_clock::now() < deadline) {
    zmq::pollitem_t item{pull.handle(), 0, ZMQ_POLLIN, 0};
    zmq::poll(&item, 1, std::chrono::milliseconds(100));
    zmq::message_t msg;
    while (pull.recv(msg, zmq::recv_flags::dontwait)) decode(msg, &run.stream);
  }
  EXPECT_TRUE(run.stream.bye) << "the process said Bye";
  run.result = proc->wait(kProcessTimeout);
  EXPECT_TRUE(run.result.exited && run.result.exit_code == 0)
      << describe(run.result) << "\nstdout:\n"
      << run.result.out << "\nstderr:\n"
      << run.result.err;
  return run;
}

bool is_stack(wire::EventKind k) {
  return k == wire::EventKind::PYTHON_STACK || k == wire::EventKind::C_STACK;
}

bool is_acquisition(wire::EventKind k) {
  return k == wire::EventKind::MALLOC || k == wire::EventKind::MMAP;
}

// Every stack record is followed, after the thread's other stack records, by a malloc or
// mmap of at least `min_size` bytes, and every smaller one has no stack before it.
void expect_stacks_only_on_large_blocks(const Stream& s, uint64_t min_size) {
  size_t stacks = 0, misplaced = 0, small_with_stack = 0;
  for (const auto& [tid, events] : s.threads) {
    for (size_t i = 0; i < events.size(); ++i) {
      if (is_stack(events[i].kind)) {
        ++stacks;
        size_t j = i + 1;
        while (j < events.size() && is_stack(events[j].kind)) ++j;
        if (j == events.size() || !is_acquisition(events[j].kind) ||
            events[j].size_bytes < min_size) {
          ++misplaced;
        }
      } else if (is_acquisition(events[i].kind) && events[i].size_bytes < min_size && i > 0 &&
                 is_stack(events[i - 1].kind)) {
        ++small_with_stack;
      }
    }
  }
  EXPECT_GT(stacks, 0u);
  EXPECT_EQ(misplaced, 0u) << "stack records not followed by a large malloc / mmap";
  EXPECT_EQ(small_with_stack, 0u) << "small blocks with a stack";
}

// The text of the `kind` stack right before thread `tid`'s malloc of [size, size + 64)
// bytes; "" (and a failure) if there is no such malloc or no such stack before it.
std::string stack_before_malloc(const Stream& s, uint32_t tid, uint64_t size,
                                wire::EventKind kind) {
  auto thread = s.threads.find(tid);
  if (thread == s.threads.end()) {
    ADD_FAILURE() << "no events of thread " << tid;
    return "";
  }
  const std::vector<Event>& events = thread->second;
  for (size_t i = 0; i < events.size(); ++i) {
    const Event& e = events[i];
    if (e.kind != wire::EventKind::MALLOC || e.size_bytes < size || e.size_bytes >= size + 64)
      continue;
    for (size_t j = i; j-- > 0 && is_stack(events[j].kind);) {
      if (events[j].kind != kind) continue;
      auto text = s.strings.find(events[j].string_id);
      if (text == s.strings.end()) {
        ADD_FAILURE() << "stack string " << events[j].string_id << " never defined";
        return "";
      }
      return text->second;
    }
    ADD_FAILURE() << "the malloc of " << e.size_bytes << " bytes has no stack of that kind";
    return "";
  }
  ADD_FAILURE() << "thread " << tid << " has no malloc of " << size << " bytes";
  return "";
}

size_t count_kind(const Stream& s, wire::EventKind kind) {
  size_t n = 0;
  for (const auto& [tid, events] : s.threads)
    for (const Event& e : events) n += e.kind == kind;
  return n;
}

// The script's line numbers are part of the expected stacks: keep them in step.
constexpr const char* kScript = R"(import threading

def make_block():
    block = bytearray(12345678)
    return block

def outer():
    return make_block()

def small_blocks():
    return [bytearray(1777) for _ in range(200)]

keep = outer()
small_blocks()
t = threading.Thread(target=outer)
t.start()
t.join()
print("main=%d worker=%d" % (threading.get_native_id(), t.native_id), flush=True)
)";
constexpr uint64_t kBlockBytes = 12345678;

// The agent's Python package (memtap run puts it on PYTHONPATH; its sitecustomize turns
// Python stacks on when MEMTAP_STACKS says so).
std::string python_package_dir() {
  return kAgentLib.substr(0, kAgentLib.rfind('/')) + "/python";
}

struct ScriptRun {
  StackRun run;
  std::string script;
  uint32_t main_tid = 0, worker_tid = 0;
};

ScriptRun run_script(const TempDir& dir, std::vector<std::string> env) {
  ScriptRun r;
  r.script = dir.file("script.py");
  std::ofstream(r.script) << kScript;
  env.push_back("PYTHONPATH=" + python_package_dir());
  r.run = run_on_wire(dir, {kPython, r.script}, std::move(env));
  unsigned main_tid = 0, worker_tid = 0;
  EXPECT_EQ(sscanf(r.run.result.out.c_str(), "main=%u worker=%u", &main_tid, &worker_tid), 2)
      << r.run.result.out;
  r.main_tid = main_tid;
  r.worker_tid = worker_tid;
  return r;
}

class Stacks : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(dir_.ok()); }
  TempDir dir_;
};

TEST_F(Stacks, PythonStackPrecedesLargeMallocInnermostFirst) {
  if (access(kPython, X_OK) != 0) GTEST_SKIP() << kPython << " is not installed";
  ScriptRun r = run_script(dir_, {"MEMTAP_STACKS=python"});
  const Stream& s = r.run.stream;
  std::vector<std::string> main_frames =
      split_lines(stack_before_malloc(s, r.main_tid, kBlockBytes, wire::EventKind::PYTHON_STACK));
  EXPECT_EQ(main_frames,
            (std::vector<std::string>{r.script + "(4): make_block", r.script + "(8): outer",
                                      r.script + "(13): <module>"}));
  EXPECT_EQ(count_kind(s, wire::EventKind::C_STACK), 0u) << "C stacks were not asked for";
  expect_stacks_only_on_large_blocks(s, kDefaultMinSize);
}

TEST_F(Stacks, ThreadStartedWithThreadingGetsPythonStacks) {
  if (access(kPython, X_OK) != 0) GTEST_SKIP() << kPython << " is not installed";
  ScriptRun r = run_script(dir_, {"MEMTAP_STACKS=python"});
  ASSERT_NE(r.worker_tid, r.main_tid);
  std::vector<std::string> frames = split_lines(
      stack_before_malloc(r.run.stream, r.worker_tid, kBlockBytes, wire::EventKind::PYTHON_STACK));
  ASSERT_GE(frames.size(), 3u) << testing::PrintToString(frames);
  EXPECT_EQ(frames[0], r.script + "(4): make_block");
  EXPECT_EQ(frames[1], r.script + "(8): outer");
  // Then threading's own frames, down to the thread's first one.
  EXPECT_NE(frames[2].find("threading.py("), std::string::npos) << frames[2];
  EXPECT_NE(frames[2].find("): run"), std::string::npos) << frames[2];
  EXPECT_NE(frames.back().find("): _bootstrap"), std::string::npos) << frames.back();
}

TEST_F(Stacks, NoStacksWithoutMemtapStacks) {
  if (access(kPython, X_OK) != 0) GTEST_SKIP() << kPython << " is not installed";
  ScriptRun r = run_script(dir_, {});
  EXPECT_EQ(count_kind(r.run.stream, wire::EventKind::PYTHON_STACK), 0u);
  EXPECT_EQ(count_kind(r.run.stream, wire::EventKind::C_STACK), 0u);
  size_t blocks = 0;
  for (const Event& e : r.run.stream.threads[r.main_tid])
    blocks += e.kind == wire::EventKind::MALLOC && e.size_bytes >= kBlockBytes;
  EXPECT_GE(blocks, 1u) << "the large block is recorded, without a stack";
}

TEST_F(Stacks, MinSizeIsTheSetting) {
  if (access(kPython, X_OK) != 0) GTEST_SKIP() << kPython << " is not installed";
  // Below the 1777-byte blocks of small_blocks(): those get stacks now.
  ScriptRun r = run_script(dir_, {"MEMTAP_STACKS=python", "MEMTAP_STACK_MIN_SIZE=512"});
  std::vector<std::string> frames = split_lines(
      stack_before_malloc(r.run.stream, r.main_tid, 1777, wire::EventKind::PYTHON_STACK));
  ASSERT_GE(frames.size(), 2u) << testing::PrintToString(frames);
  // Python 3.11 runs the comprehension in a frame of its own; 3.12 inlines it (PEP 709).
  size_t at = frames[0] == r.script + "(11): <listcomp>" ? 1 : 0;
  EXPECT_EQ(frames[at], r.script + "(11): small_blocks") << testing::PrintToString(frames);
  expect_stacks_only_on_large_blocks(r.run.stream, 512);
}

TEST_F(Stacks, CStackNamesTheCallingFunctions) {
  StackRun run = run_on_wire(dir_, {kStackAlloc}, {"MEMTAP_STACKS=c"});
  EXPECT_NE(run.result.out.find("stack_alloc ok"), std::string::npos) << run.result.out;
  const Stream& s = run.stream;
  ASSERT_EQ(s.threads.size(), 1u);
  const uint32_t tid = s.threads.begin()->first;
  std::vector<std::string> frames =
      split_lines(stack_before_malloc(s, tid, 5 * 1024 * 1024 + 3, wire::EventKind::C_STACK));
  ASSERT_GE(frames.size(), 3u) << testing::PrintToString(frames);
  // Return addresses only (common/address_stack.h), innermost first, the agent's own frames
  // left out: the caller of malloc comes first. The modules sent with them say where each
  // lies; the program's offsets are its functions'.
  const std::string program = real_path(kStackAlloc);
  const char* expected[] = {"memtap_test_stack_inner", "memtap_test_stack_outer", "main"};
  for (size_t i = 0; i < 3; ++i) {
    ASSERT_EQ(frames[i].rfind("0x", 0), 0u) << frames[i];
    const uint64_t address = std::stoull(frames[i].substr(2), nullptr, 16);
    const Module* in = nullptr;
    for (const Module& m : s.modules) {
      if (address - 1 >= m.start && address - 1 < m.end) in = &m;
    }
    ASSERT_TRUE(in) << frames[i] << " lies in no module sent";
    EXPECT_EQ(in->path, program) << frames[i];
    EXPECT_EQ(function_at(program, address - in->load_bias), expected[i]) << frames[i];
  }
  EXPECT_EQ(count_kind(s, wire::EventKind::PYTHON_STACK), 0u);
  expect_stacks_only_on_large_blocks(s, kDefaultMinSize);
}

// The whole path: memtap run --stacks python,c sets the environment and PYTHONPATH, and the
// recording's Call Stack(Python) and Call Stack(C) columns hold the texts.
TEST_F(Stacks, MemtapRunFillsTheCallStackColumns) {
  if (access(kPython, X_OK) != 0) GTEST_SKIP() << kPython << " is not installed";
  const std::string script = dir_.file("script.py");
  std::ofstream(script) << kScript;
  const std::string db = dir_.file("stacks.db");
  ProcessSpec spec = spec_in(dir_, {kMemtapBin, "run", "--stacks", "python,c", "--stack-min-size",
                                    "1MiB", "-o", db, "--", kPython, script});
  spec.env_unset.push_back("PYTHONPATH");
  ProcessResult r = run_process(spec, kProcessTimeout);
  ASSERT_TRUE(r.exited && r.exit_code == 0) << describe(r) << "\n" << r.err;
  std::string error;
  std::unique_ptr<DbQuery> q = DbQuery::open(db, &error);
  ASSERT_TRUE(q) << error;
  DbRows rows;
  ASSERT_TRUE(
      q->query("SELECT \"Call Stack(Python)\", \"Call Stack(C)\" FROM memscope_dump "
               "WHERE Event = 'MALLOC' AND Attr LIKE ?1 ORDER BY ID",
               {"%\"size\":\"" + std::to_string(kBlockBytes + 1) + "\"%"}, &rows, &error))
      << error;
  ASSERT_EQ(rows.rows.size(), 2u) << "the block of the main thread and the worker's";
  for (const auto& row : rows.rows) {
    std::vector<std::string> frames = split_lines(row[0].text);
    ASSERT_GE(frames.size(), 2u) << row[0].text;
    EXPECT_EQ(frames[0], script + "(4): make_block");
    EXPECT_EQ(frames[1], script + "(8): outer");
    // The interpreter's frames, symbolised by the monitor: named by its absolute path.
    EXPECT_NE(row[1].text.find(real_path(kPython)), std::string::npos) << row[1].text;
  }
}

}  // namespace
}  // namespace memtap::e2e
