// The agent's context events on the wire: a real program (tests/programs/context_calls.c)
// calls the memtap_* C ABI under LD_PRELOAD, and the test reads what the agent sends from
// a ZeroMQ PULL socket of its own, decoding the Cap'n Proto messages directly (no
// monitor): kinds, string ids and their texts, strings defined no later than the batch of
// their first use, one id per text across threads, the texts sent again by a fork() child,
// the loss counted when the string log is full, and the framework pool's calls
// (memtap_pool_*) as device events each after its stream.
#include <capnp/serialize.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <map>
#include <set>
#include <string>
#include <vector>
#include <zmq.hpp>

#include "common/wire.capnp.h"
#include "tests/e2e/e2e_support.h"

namespace memtap::e2e {
namespace {

const std::string kContextCalls = MEMTAP_TEST_CONTEXT_CALLS;

struct WireEvent {
  uint32_t tid = 0;
  wire::EventKind kind = wire::EventKind::MALLOC;
  uint64_t addr = 0;
  uint64_t size_bytes = 0;
  uint32_t string_id = 0;
  size_t message = 0;  // index of its message in the process's stream
  uint16_t device = 0;
  uint64_t ts_ns = 0;
};

// What one agent instance sent.
struct ProcessStream {
  uint32_t forked_from_pid = 0;
  size_t messages = 0;
  size_t largest_message_bytes = 0;
  size_t messages_with_strings = 0;
  std::map<uint32_t, std::string> strings;  // id -> text
  std::map<uint32_t, size_t> defined_in;    // id -> message that first defined it
  std::vector<std::string> redefinitions;   // an id defined again with another text
  std::vector<WireEvent> events;
  uint64_t dropped_so_far = 0;
  bool bye = false;
  uint64_t bye_dropped = 0;

  std::vector<WireEvent> of_thread(uint32_t tid) const {
    std::vector<WireEvent> out;
    for (const WireEvent& e : events) {
      if (e.tid == tid) out.push_back(e);
    }
    return out;
  }
};

void decode(const zmq::message_t& msg, std::map<uint32_t, ProcessStream>* streams) {
  ASSERT_EQ(msg.size() % sizeof(capnp::word), 0u) << "a whole number of words";
  kj::Array<capnp::word> words = kj::heapArray<capnp::word>(msg.size() / sizeof(capnp::word));
  memcpy(words.begin(), msg.data(), msg.size());
  capnp::ReaderOptions options;
  options.traversalLimitInWords = words.size() * 4 + 64;
  capnp::FlatArrayMessageReader reader(words, options);
  auto m = reader.getRoot<wire::Message>();
  ASSERT_EQ(m.getProtocolVersion(), wire::PROTOCOL_VERSION);
  ProcessStream& s = (*streams)[m.getPid()];
  size_t index = s.messages++;
  s.largest_message_bytes = std::max(s.largest_message_bytes, msg.size());
  auto body = m.getBody();
  if (body.isHello()) {
    s.forked_from_pid = body.getHello().getForkedFromPid();
  } else if (body.isBatch()) {
    auto batch = body.getBatch();
    s.dropped_so_far = std::max(s.dropped_so_far, batch.getDroppedSoFar());
    if (batch.getStrings().size() != 0) ++s.messages_with_strings;
    for (auto def : batch.getStrings()) {
      std::string text(def.getText().cStr(), def.getText().size());
      auto [it, fresh] = s.strings.emplace(def.getId(), text);
      if (fresh) s.defined_in[def.getId()] = index;
      if (!fresh && it->second != text) {
        s.redefinitions.push_back(std::to_string(def.getId()) + ": " + it->second + " / " + text);
      }
    }
    for (auto thread : batch.getThreads()) {
      for (auto e : thread.getEvents()) {
        s.events.push_back({thread.getThreadId(), e.getKind(), e.getAddr(), e.getSizeBytes(),
                            e.getStringId(), index, e.getDevice(), e.getTsNs()});
      }
    }
  } else if (body.isBye()) {
    s.bye = true;
    s.bye_dropped = body.getBye().getDroppedTotal();
  }
}

// Runs the program under the agent and collects every message until `processes` of them
// have said Bye.
struct WireRun {
  ProcessResult result;
  std::map<uint32_t, ProcessStream> streams;
  std::map<std::string, std::string> values;  // the program's name=value lines
};

WireRun run_on_wire(const TempDir& dir, const std::string& mode, size_t processes,
                    std::vector<std::string> env = {}) {
  WireRun run;
  const std::string endpoint = "ipc://" + dir.file("context.sock");
  zmq::context_t ctx;
  zmq::socket_t pull(ctx, zmq::socket_type::pull);
  pull.set(zmq::sockopt::rcvhwm, 0);
  pull.bind(endpoint);
  ProcessSpec spec = preloaded_spec(dir, {kContextCalls, mode}, endpoint);
  for (std::string& e : env) spec.env_set.push_back(std::move(e));
  std::string error;
  std::unique_ptr<Process> proc = Process::start(spec, &error);
  if (!proc) {
    ADD_FAILURE() << "cannot start " << kContextCalls << ": " << error;
    return run;
  }
  auto deadline = std::chrono::steady_clock::now() + kProcessTimeout;
  size_t byes = 0;
  while (byes < processes && std::chrono::steady_clock::now() < deadline) {
    zmq::pollitem_t item{pull.handle(), 0, ZMQ_POLLIN, 0};
    zmq::poll(&item, 1, std::chrono::milliseconds(100));
    zmq::message_t msg;
    while (pull.recv(msg, zmq::recv_flags::dontwait)) {
      decode(msg, &run.streams);
      byes = 0;
      for (const auto& [pid, s] : run.streams) byes += s.bye ? 1 : 0;
    }
  }
  EXPECT_EQ(byes, processes) << "every process said Bye";
  run.result = proc->wait(kProcessTimeout);
  EXPECT_TRUE(run.result.exited && run.result.exit_code == 0)
      << describe(run.result) << "\nstdout:\n"
      << run.result.out << "\nstderr:\n"
      << run.result.err;
  for (const std::string& line : split_lines(run.result.out)) {
    size_t eq = line.find('=');
    if (eq != std::string::npos) run.values[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return run;
}

uint32_t value_u32(const WireRun& run, const std::string& name) {
  auto it = run.values.find(name);
  return it == run.values.end() ? 0 : uint32_t(std::stoul(it->second));
}

bool is_context(wire::EventKind k) {
  return uint16_t(k) >= uint16_t(wire::EventKind::STEP);
}

// Every event's string is defined, in its own message or an earlier one, and no id is
// defined twice with different texts.
void expect_strings_defined_in_time(const ProcessStream& s) {
  EXPECT_TRUE(s.redefinitions.empty()) << s.redefinitions.front();
  size_t undefined = 0, late = 0;
  for (const WireEvent& e : s.events) {
    if (e.string_id == 0) continue;
    auto it = s.defined_in.find(e.string_id);
    if (it == s.defined_in.end()) {
      ++undefined;
    } else if (it->second > e.message) {
      ++late;
    }
  }
  EXPECT_EQ(undefined, 0u) << "events naming a string never defined";
  EXPECT_EQ(late, 0u) << "events whose string came in a later message";
}

class ContextWire : public ::testing::Test {
 protected:
  TempDir dir;
};

// agent/memtap_optional.h, as a C program uses it: each call reaches the agent when memtap
// runs the program, and without memtap the same program runs and records nothing.
TEST_F(ContextWire, TheOptionalHeadersCallsReachTheAgentAndDoNothingWithoutIt) {
  ASSERT_TRUE(dir.ok());
  ProcessSpec alone = spec_in(dir, {kContextCalls, "optional"});
  const ProcessResult plain = run_process(alone, kProcessTimeout);
  ASSERT_TRUE(plain.exited && plain.exit_code == 0) << describe(plain) << "\n" << plain.err;
  EXPECT_EQ(plain.out, "weights=0\nforward=0\nsaved=0\n");

  WireRun run = run_on_wire(dir, "optional", 1);
  ASSERT_EQ(run.streams.size(), 1u);
  const ProcessStream& s = run.streams.begin()->second;
  expect_strings_defined_in_time(s);
  const uint32_t weights = value_u32(run, "weights"), forward = value_u32(run, "forward"),
                 saved = value_u32(run, "saved");
  ASSERT_NE(weights, 0u);
  EXPECT_EQ(s.strings.at(weights), "weights");
  EXPECT_EQ(s.strings.at(forward), "forward");
  EXPECT_EQ(s.strings.at(saved), "saved");
  std::vector<std::pair<wire::EventKind, uint32_t>> context;
  bool inside = false, malloc_inside_owner = false;
  for (const WireEvent& e : s.events) {
    if (is_context(e.kind)) context.emplace_back(e.kind, e.string_id);
    if (e.kind == wire::EventKind::OWNER_PUSH) inside = true;
    if (e.kind == wire::EventKind::OWNER_POP) inside = false;
    if (inside && e.kind == wire::EventKind::MALLOC && e.size_bytes == 4343) {
      malloc_inside_owner = true;
    }
  }
  EXPECT_TRUE(malloc_inside_owner) << "malloc(4343) between owner push and pop";
  const std::vector<std::pair<wire::EventKind, uint32_t>> expected = {
      {wire::EventKind::STEP, 0},
      {wire::EventKind::STEP, 0},
      {wire::EventKind::MARK, saved},
      {wire::EventKind::RANGE_START, forward},
      {wire::EventKind::RANGE_END, forward},
      {wire::EventKind::OWNER_PUSH, weights},
      {wire::EventKind::OWNER_POP, 0},
  };
  EXPECT_EQ(context, expected);
}

TEST_F(ContextWire, EveryCallBecomesOneEventWithItsText) {
  ASSERT_TRUE(dir.ok());
  WireRun run = run_on_wire(dir, "basic", 1);
  ASSERT_EQ(run.streams.size(), 1u);
  const ProcessStream& s = run.streams.begin()->second;
  expect_strings_defined_in_time(s);

  const uint32_t alpha = value_u32(run, "alpha");
  EXPECT_NE(alpha, 0u);
  EXPECT_EQ(value_u32(run, "alpha_again"), alpha) << "the same text, the same id";
  EXPECT_EQ(value_u32(run, "empty"), 0u) << "empty text has no id";
  const uint32_t range = value_u32(run, "range"), owner = value_u32(run, "owner"),
                 op = value_u32(run, "op"), func = value_u32(run, "func");
  EXPECT_EQ(s.strings.at(alpha), "alpha");
  EXPECT_EQ(s.strings.at(range), "range-r");
  EXPECT_EQ(s.strings.at(owner), "model");
  EXPECT_EQ(s.strings.at(op), "aten::add");
  EXPECT_EQ(s.strings.at(func), "train.py(10): forward");

  // The main thread: the one with the steps.
  uint32_t main_tid = 0;
  for (const WireEvent& e : s.events) {
    if (e.kind == wire::EventKind::STEP) main_tid = e.tid;
  }
  ASSERT_NE(main_tid, 0u) << "no STEP event";
  std::vector<WireEvent> context;
  bool malloc_inside_owner = false, inside = false;
  for (const WireEvent& e : s.of_thread(main_tid)) {
    if (is_context(e.kind)) context.push_back(e);
    if (e.kind == wire::EventKind::OWNER_PUSH) inside = true;
    if (e.kind == wire::EventKind::OWNER_POP) inside = false;
    if (inside && e.kind == wire::EventKind::MALLOC && e.size_bytes == 4242) {
      malloc_inside_owner = true;
    }
  }
  EXPECT_TRUE(malloc_inside_owner) << "malloc(4242) between owner push and pop";
  struct Expected {
    wire::EventKind kind;
    uint32_t string_id;
    uint64_t addr;
  };
  const std::vector<Expected> expected = {
      {wire::EventKind::STEP, 0, 1},
      {wire::EventKind::STEP, 0, 2},
      {wire::EventKind::STEP, 0, 3},
      {wire::EventKind::MARK, alpha, 0},
      {wire::EventKind::RANGE_START, range, 0},
      {wire::EventKind::RANGE_END, range, 0},
      {wire::EventKind::OWNER_PUSH, owner, 0},
      {wire::EventKind::OWNER_POP, 0, 0},
      {wire::EventKind::OP_START, op, 0},
      {wire::EventKind::OP_END, op, 0},
      {wire::EventKind::TRACE_SLICE, func, 123456789},
  };
  ASSERT_EQ(context.size(), expected.size());
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(context[i].kind, expected[i].kind) << "event " << i;
    EXPECT_EQ(context[i].string_id, expected[i].string_id) << "event " << i;
    EXPECT_EQ(context[i].addr, expected[i].addr) << "event " << i;
  }
  // The tracer slice's start and end are the caller's monotonic ns, not converted.
  EXPECT_EQ(context.back().size_bytes, 987654321u);

  // Two threads interned "shared-0".. at once: both got the same ids, and each id's text.
  EXPECT_EQ(run.values["threads_agree"], "1");
  std::map<uint32_t, std::vector<WireEvent>> marks_by_thread;
  for (const WireEvent& e : s.events) {
    if (e.tid != main_tid && e.kind == wire::EventKind::MARK) marks_by_thread[e.tid].push_back(e);
  }
  ASSERT_EQ(marks_by_thread.size(), 2u);
  const std::vector<WireEvent>& a = marks_by_thread.begin()->second;
  const std::vector<WireEvent>& b = marks_by_thread.rbegin()->second;
  ASSERT_EQ(a.size(), 2000u);
  ASSERT_EQ(b.size(), 2000u);
  std::set<std::string> texts;
  for (size_t i = 0; i < a.size(); ++i) {
    EXPECT_EQ(a[i].string_id, b[i].string_id) << "text " << i;
    EXPECT_EQ(s.strings.at(a[i].string_id), "shared-" + std::to_string(i));
    texts.insert(s.strings.at(a[i].string_id));
  }
  EXPECT_EQ(texts.size(), 2000u);
  // Dedupe across the whole stream: the ids events name never share a text.
  std::map<std::string, uint32_t> id_of_text;
  for (const WireEvent& e : s.events) {
    if (e.string_id == 0) continue;
    auto [it, fresh] = id_of_text.emplace(s.strings.at(e.string_id), e.string_id);
    EXPECT_EQ(it->second, e.string_id) << "two ids for '" << it->first << "'";
  }
  EXPECT_EQ(s.dropped_so_far, 0u);
}

TEST_F(ContextWire, ForkChildKeepsIdsAndSendsEveryTextAgain) {
  ASSERT_TRUE(dir.ok());
  WireRun run = run_on_wire(dir, "fork", 2);
  const uint32_t child_pid = value_u32(run, "child_pid");
  ASSERT_NE(child_pid, 0u) << run.result.out;
  ASSERT_EQ(run.streams.size(), 2u);
  ASSERT_TRUE(run.streams.count(child_pid));
  const ProcessStream& child = run.streams.at(child_pid);
  uint32_t parent = 0;
  for (const auto& [pid, s] : run.streams) {
    if (pid != child_pid) parent = pid;
  }
  EXPECT_EQ(child.forked_from_pid, parent);
  expect_strings_defined_in_time(child);
  expect_strings_defined_in_time(run.streams.at(parent));

  const uint32_t parent_text = value_u32(run, "parent_text");
  ASSERT_NE(parent_text, 0u);
  EXPECT_EQ(value_u32(run, "child_parent_text"), parent_text) << "the child keeps the ids";
  const uint32_t child_text = value_u32(run, "child_text");
  EXPECT_NE(child_text, parent_text);
  ASSERT_TRUE(child.strings.count(parent_text)) << "the child sends its parent's texts again";
  EXPECT_EQ(child.strings.at(parent_text), "parent-text");
  EXPECT_EQ(child.strings.at(child_text), "child-text");
  std::vector<uint32_t> marks;
  for (const WireEvent& e : child.events) {
    if (e.kind == wire::EventKind::MARK) marks.push_back(e.string_id);
  }
  EXPECT_EQ(marks, (std::vector<uint32_t>{parent_text, child_text}));
  // The parent interned 30,000 texts of 200 bytes before the fork: more than one batch
  // holds, so the child sends them ahead in batches of their own, each of bounded size.
  size_t bulk = 0;
  for (const auto& [id, text] : child.strings) bulk += text.rfind("bulk-", 0) == 0 ? 1 : 0;
  EXPECT_EQ(bulk, 30000u);
  EXPECT_GE(child.messages_with_strings, 2u);
  EXPECT_LT(child.largest_message_bytes, size_t{8} << 20);
}

TEST_F(ContextWire, FullStringLogRefusesAndCountsTheLoss) {
  ASSERT_TRUE(dir.ok());
  WireRun run = run_on_wire(dir, "full", 1, {"MEMTAP_STRING_MB=1"});
  ASSERT_EQ(run.streams.size(), 1u);
  const ProcessStream& s = run.streams.begin()->second;
  expect_strings_defined_in_time(s);
  const uint32_t interned = value_u32(run, "interned"), lost = value_u32(run, "lost");
  EXPECT_GT(interned, 1000u) << "1 MiB holds thousands of 200-byte texts";
  EXPECT_EQ(lost, 100u);
  EXPECT_EQ(run.values["refound"], "1") << "a full log still finds the texts it holds";
  EXPECT_GE(s.strings.size(), interned);
  const uint32_t last = value_u32(run, "last");
  ASSERT_TRUE(s.strings.count(last));
  EXPECT_EQ(s.strings.at(last).size(), 200u);
  EXPECT_TRUE(s.bye);
  EXPECT_GE(s.bye_dropped, uint64_t{lost}) << "refused texts reach the monitor as dropped";
  EXPECT_GE(s.dropped_so_far, uint64_t{lost});
}

// The pool's calls on the calling thread, in order: each block event right after a
// deviceStream record of its device and stream (the default stream's 0 too) and at its time,
// a large block's C stack before both, the pool's figures as addr and sizeBytes, and nothing
// for a device that is not a CUDA ordinal.
TEST_F(ContextWire, PoolCallsAreDeviceEventsEachAfterItsStream) {
  ASSERT_TRUE(dir.ok());
  WireRun run = run_on_wire(dir, "pool", 1, {"MEMTAP_STACKS=c", "MEMTAP_STACK_MIN_SIZE=1048576"});
  ASSERT_EQ(run.streams.size(), 1u);
  const ProcessStream& s = run.streams.begin()->second;
  const uint32_t begin = value_u32(run, "pool_begin"), end = value_u32(run, "pool_end");
  ASSERT_NE(begin, 0u) << run.result.out;
  std::vector<WireEvent> got;
  bool inside = false;
  for (const WireEvent& e : s.events) {
    if (e.kind == wire::EventKind::MARK) inside = e.string_id == begin;
    if (!inside || e.kind == wire::EventKind::MARK) continue;
    // The heap's blocks, and the sender's resident-set samples, which land where they may.
    if (e.kind == wire::EventKind::MALLOC || e.kind == wire::EventKind::FREE ||
        e.kind == wire::EventKind::RSS_SAMPLE) {
      continue;
    }
    got.push_back(e);
  }
  EXPECT_TRUE(std::any_of(s.events.begin(), s.events.end(), [&](const WireEvent& e) {
    return e.kind == wire::EventKind::MARK && e.string_id == end;
  }));

  using K = wire::EventKind;
  struct Expected {
    K kind;
    uint16_t device;
    uint64_t addr, size_bytes;
  };
  const uint64_t block = 0x7f0000200000, small = 0x7f0000400000, mib2 = 2u << 20;
  const std::vector<Expected> expected = {
      {K::POOL_STATE, 0, 0, mib2},
      {K::C_STACK, 0, 0, 0},
      {K::DEVICE_STREAM, 0, 0, 0},
      {K::POOL_MALLOC, 0, block, mib2},
      {K::DEVICE_STREAM, 3, 0xabc0, 0},
      {K::POOL_MALLOC, 3, small, 4096},
      {K::DEVICE_STREAM, 3, 0xabc0, 0},
      {K::POOL_FREE, 3, small, 0},
      {K::DEVICE_STREAM, 3, 0xabc0, 0},
      {K::POOL_FREE_COMPLETED, 3, small, 0},
      {K::C_STACK, 0, 0, 0},
      {K::DEVICE_STREAM, 65535, UINT64_MAX, 0},
      {K::POOL_MALLOC, 65535, UINT64_MAX, UINT64_MAX},
      {K::POOL_PEAKS, 65535, UINT64_MAX - 2, UINT64_MAX - 3},
      {K::POOL_STATE, 65535, UINT64_MAX, UINT64_MAX - 1},
      {K::DEVICE_STREAM, 0, 0, 0},
      {K::POOL_FREE, 0, block, 0},
      {K::DEVICE_STREAM, 0, 0, 0},
      {K::POOL_FREE_COMPLETED, 0, block, 0},
      {K::POOL_STATE, 0, 0, 0},
  };
  std::string kinds;
  for (const WireEvent& e : got) kinds += " " + std::to_string(int(e.kind));
  ASSERT_EQ(got.size(), expected.size()) << "kinds:" << kinds;
  for (size_t i = 0; i < expected.size(); ++i) {
    EXPECT_EQ(got[i].kind, expected[i].kind) << "event " << i;
    if (expected[i].kind == K::C_STACK) {
      EXPECT_NE(got[i].string_id, 0u) << "event " << i << ": the stack's text";
      continue;
    }
    EXPECT_EQ(got[i].device, expected[i].device) << "event " << i;
    EXPECT_EQ(got[i].addr, expected[i].addr) << "event " << i;
    EXPECT_EQ(got[i].size_bytes, expected[i].size_bytes) << "event " << i;
    EXPECT_EQ(got[i].string_id, 0u) << "event " << i;
    if (expected[i].kind == K::DEVICE_STREAM) {
      EXPECT_EQ(got[i].ts_ns, got[i + 1].ts_ns) << "event " << i << ": the block's time";
      EXPECT_EQ(got[i].tid, got[i + 1].tid);
    }
  }
  expect_strings_defined_in_time(s);
  EXPECT_EQ(s.dropped_so_far, 0u);
}

}  // namespace
}  // namespace memtap::e2e
