// Writes the seeds that follow memtap's current formats, so that they never go stale when
// the wire schema or the recording changes: `make_fuzz_seeds DIR` writes
//   DIR/wire_message/*  conversations (Hello, Batches, Bye; messages joined by
//                       kMessageSeparator) of every event kind, with the current protocol
//                       version, one message alone, a fork child's;
//   DIR/memscope_db/*   the same conversations recorded by the real Session and writer, as
//                       msMemScope's text table and as memtap's compact tables, then
//                       rewritten with 512-byte pages so that each is a few KiB.
// scripts/fuzz.sh runs it before the fuzzers. Hand-made seeds and the reproducers of bugs
// found are committed under tests/fuzz/seeds/ instead.
#include <capnp/message.h>
#include <capnp/serialize.h>
#include <sqlite3.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "common/wire.capnp.h"
#include "monitor/engine/session.h"
#include "monitor/store/memscope_writer.h"
#include "tests/fuzz/wire_separator.h"

namespace memtap {
namespace {

using Bytes = std::string;
using Kind = wire::EventKind;

constexpr uint64_t kMono0 = 1'000'000;
constexpr uint64_t kReal0 = 1'779'862'930'000'000'000;

struct Ev {
  uint64_t ts_ns;
  Kind kind;
  uint64_t addr = 0;
  uint64_t size_bytes = 0;
  uint32_t string_id = 0;
  uint16_t device = 0;
};

Bytes flat(capnp::MallocMessageBuilder& builder) {
  const auto words = capnp::messageToFlatArray(builder);
  const auto bytes = words.asBytes();
  return Bytes(reinterpret_cast<const char*>(bytes.begin()), bytes.size());
}

wire::Message::Builder header(capnp::MallocMessageBuilder& b, uint32_t pid, uint64_t sequence) {
  auto m = b.initRoot<wire::Message>();
  m.setProtocolVersion(wire::PROTOCOL_VERSION);
  m.setPid(pid);
  m.setInstanceId(pid * 1000 + 7);
  m.setSequence(sequence);
  return m;
}

Bytes hello(uint32_t pid, uint32_t forked_from = 0) {
  capnp::MallocMessageBuilder b;
  auto h = header(b, pid, 0).getBody().initHello();
  h.setPpid(1);
  h.setHostname("node-1");
  auto cmd = h.initCommandLine(2);
  cmd.set(0, "python");
  cmd.set(1, "train.py");
  h.setRank(0);
  h.setWorldSize(2);
  h.setClockMonotonicNs(kMono0);
  h.setClockRealtimeNs(kReal0);
  h.setAgentVersion("0.1.0");
  h.setForkedFromPid(forked_from);
  h.setTraceStartNs(kMono0);
  h.setMemoryTotalBytes(uint64_t{64} << 30);
  return flat(b);
}

Bytes batch(uint32_t pid, uint64_t sequence, uint64_t watermark_ns,
            const std::vector<std::pair<uint32_t, std::string>>& strings,
            const std::vector<std::pair<uint32_t, std::vector<Ev>>>& threads,
            uint64_t dropped = 0) {
  capnp::MallocMessageBuilder b;
  auto batch = header(b, pid, sequence).getBody().initBatch();
  batch.setWatermarkNs(watermark_ns);
  batch.setDroppedSoFar(dropped);
  auto defs = batch.initStrings(unsigned(strings.size()));
  for (size_t i = 0; i < strings.size(); ++i) {
    defs[unsigned(i)].setId(strings[i].first);
    defs[unsigned(i)].setText(strings[i].second);
  }
  auto list = batch.initThreads(unsigned(threads.size()));
  for (size_t t = 0; t < threads.size(); ++t) {
    list[unsigned(t)].setThreadId(threads[t].first);
    auto events = list[unsigned(t)].initEvents(unsigned(threads[t].second.size()));
    for (size_t e = 0; e < threads[t].second.size(); ++e) {
      const Ev& ev = threads[t].second[e];
      auto out = events[unsigned(e)];
      out.setTsNs(ev.ts_ns);
      out.setKind(ev.kind);
      out.setAddr(ev.addr);
      out.setSizeBytes(ev.size_bytes);
      out.setStringId(ev.string_id);
      out.setDevice(ev.device);
    }
  }
  return flat(b);
}

Bytes bye(uint32_t pid, uint64_t sequence, uint64_t ts_ns, std::vector<uint32_t> children = {}) {
  capnp::MallocMessageBuilder b;
  auto y = header(b, pid, sequence).getBody().initBye();
  y.setTsNs(ts_ns);
  y.setDroppedTotal(3);
  y.setEventsSent(40);
  auto list = y.initChildPids(unsigned(children.size()));
  for (size_t i = 0; i < children.size(); ++i) list.set(unsigned(i), children[i]);
  y.setEnd(wire::ProcessEnd::EXITED);
  y.setEndCode(0);
  return flat(b);
}

// Every event kind, on two threads, with owners, operators, stacks and device memory.
std::vector<Bytes> training_run(uint32_t pid) {
  const uint64_t t = kMono0;
  const std::vector<std::pair<uint32_t, std::string>> strings = {
      {1, "model@encoder"},
      {2, "aten::empty"},
      {3, "train.py(12): step\nmodel.py(40): forward"},
      {4, "libc.so.6(malloc+0x10) [0x7f00]"},
      {5, "epoch 1"},
      {6, "cudaMalloc"},
      {7, "void gemm<float>(float*)"},
      {8, "train.py(3): main"},
  };
  const std::vector<Ev> main_thread = {
      {t + 10, Kind::STEP, 1},
      {t + 20, Kind::OWNER_PUSH, 0, 0, 1},
      {t + 30, Kind::OP_START, 0, 0, 2},
      {t + 40, Kind::PYTHON_STACK, 0, 0, 3},
      {t + 41, Kind::C_STACK, 0, 0, 4},
      {t + 50, Kind::MALLOC, 0x5000, 4096},
      {t + 60, Kind::MMAP, 0x7f0000000000, 1 << 20},
      {t + 70, Kind::MUNMAP, 0x7f0000001000, 4096},
      {t + 80, Kind::OP_END, 0, 0, 2},
      {t + 90, Kind::OWNER_POP},
      {t + 100, Kind::MARK, 0, 0, 5},
      {t + 110, Kind::RANGE_START, 0, 0, 5},
      {t + 120, Kind::RSS_SAMPLE, 0, 8 << 20},
      {t + 130, Kind::FREE, 0x5000},
      {t + 140, Kind::RANGE_END, 0, 0, 5},
      {t + 150, Kind::TRACE_SLICE, t + 5, t + 145, 8},
      {t + 160, Kind::FORK, pid + 1},
  };
  const std::vector<Ev> device_thread = {
      {t + 15, Kind::DEVICE_INFO, 60ull << 30, 80ull << 30, 0, 0},
      {t + 25, Kind::DEVICE_STREAM, 0x77, 0, 0, 0},
      {t + 35, Kind::DEVICE_MALLOC, 0x7e0000000000, 2 << 20, 6, 0},
      {t + 45, Kind::KERNEL_LAUNCH, 0x77, 0, 7, 0},
      {t + 55, Kind::PINNED_MALLOC, 0x6000, 8192, 6, 0},
      {t + 65, Kind::DEVICE_OOM, 0x77, 1ull << 40, 6, 0},
      {t + 75, Kind::PINNED_FREE, 0x6000, 0, 0, 0},
      {t + 85, Kind::DEVICE_FREE, 0x7e0000000000, 0, 0, 0},
  };
  // The framework pool: a FREE folded, a pending one and its completion, the pool's state
  // with its peaks, and a FREE its batch ends with, whose completion comes in the next batch.
  const std::vector<Ev> pool_thread = {
      {t + 10, Kind::POOL_PEAKS, 1 << 20, 4 << 20, 0, 0},
      {t + 11, Kind::POOL_STATE, 0, 2 << 20, 0, 0},
      {t + 12, Kind::DEVICE_STREAM, 0, 0, 0, 0},
      {t + 13, Kind::POOL_MALLOC, 0x7e0000000000, 512, 0, 0},
      {t + 14, Kind::DEVICE_STREAM, 0x77, 0, 0, 0},
      {t + 16, Kind::POOL_MALLOC, 0x7e0000000200, 1024, 0, 0},
      {t + 17, Kind::DEVICE_STREAM, 0, 0, 0, 0},
      {t + 18, Kind::POOL_FREE, 0x7e0000000000, 0, 0, 0},
      {t + 19, Kind::DEVICE_STREAM, 0, 0, 0, 0},
      {t + 20, Kind::POOL_FREE_COMPLETED, 0x7e0000000000, 0, 0, 0},
      {t + 21, Kind::DEVICE_STREAM, 0x77, 0, 0, 0},
      {t + 22, Kind::POOL_FREE, 0x7e0000000200, 0, 0, 0},
      {t + 23, Kind::POOL_MALLOC, 0x7e0000000400, 256, 0, 0},
      {t + 24, Kind::DEVICE_STREAM, 0x77, 0, 0, 0},
      {t + 26, Kind::POOL_FREE_COMPLETED, 0x7e0000000200, 0, 0, 0},
      {t + 27, Kind::DEVICE_STREAM, 0, 0, 0, 0},
      {t + 28, Kind::POOL_FREE, 0x7e0000000400, 0, 0, 0},
  };
  const std::vector<Ev> pool_after = {
      {t + 210, Kind::DEVICE_STREAM, 0, 0, 0, 0},
      {t + 211, Kind::POOL_FREE_COMPLETED, 0x7e0000000400, 0, 0, 0},
  };
  return {hello(pid),
          batch(pid, 1, t + 100, strings,
                {{pid, main_thread}, {pid + 5, device_thread}, {pid + 6, pool_thread}}),
          batch(pid, 3, t + 300, {},
                {{pid, {{t + 200, Kind::MALLOC, 0x9000, 64}}}, {pid + 6, pool_after}}, 2),
          bye(pid, 4, t + 400, {pid + 1})};
}

// A fork child: inherits its parent's blocks, frees one, ends without Bye.
std::vector<Bytes> fork_child(uint32_t parent) {
  const uint32_t child = parent + 1;
  return {
      hello(child, parent),
      batch(child, 1, kMono0 + 500, {},
            {{child,
              {{kMono0 + 170, Kind::FREE, 0x9000}, {kMono0 + 180, Kind::MALLOC, 0xa000, 32}}}})};
}

Bytes joined(const std::vector<Bytes>& messages) {
  Bytes out;
  for (size_t i = 0; i < messages.size(); ++i) {
    if (i > 0) out += fuzz::kMessageSeparator;
    out += messages[i];
  }
  return out;
}

bool write_file(const std::filesystem::path& path, const Bytes& bytes) {
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file.write(bytes.data(), std::streamsize(bytes.size()));
  if (file.good()) return true;
  std::fprintf(stderr, "make_fuzz_seeds: cannot write %s\n", path.c_str());
  return false;
}

bool exec(sqlite3* db, const char* sql) {
  char* message = nullptr;
  if (sqlite3_exec(db, sql, nullptr, nullptr, &message) == SQLITE_OK) return true;
  std::fprintf(stderr, "make_fuzz_seeds: %s: %s\n", sql, message != nullptr ? message : "?");
  sqlite3_free(message);
  return false;
}

// The conversation through the real Session and writer, then shrunk: 512-byte pages and
// no WAL, so that the fuzzer's mutations land on few bytes.
bool record(const std::vector<Bytes>& messages, bool compact, const std::string& path) {
  MemscopeWriterOptions options;
  options.compact = compact;
  std::string error;
  auto writer = MemscopeWriter::create(path, options, &error);
  if (writer == nullptr) {
    std::fprintf(stderr, "make_fuzz_seeds: %s\n", error.c_str());
    return false;
  }
  Session session([&](const DumpRow* rows, size_t count) { writer->append(rows, count); },
                  [&](uint32_t id, std::string_view text) { writer->define_string(id, text); });
  for (const Bytes& message : messages) {
    const IngestResult result = session.ingest(message.data(), message.size());
    if (!result.ok) {
      std::fprintf(stderr, "make_fuzz_seeds: a seed message was rejected: %s\n",
                   result.error.c_str());
      return false;
    }
  }
  session.finish();
  if (!writer->finish(session.processes(), {{"seed", "1"}}, &error)) {
    std::fprintf(stderr, "make_fuzz_seeds: %s\n", error.c_str());
    return false;
  }
  sqlite3* db = nullptr;
  const bool ok = sqlite3_open(path.c_str(), &db) == SQLITE_OK &&
                  exec(db, "PRAGMA journal_mode = DELETE") && exec(db, "PRAGMA page_size = 512") &&
                  exec(db, "VACUUM");
  sqlite3_close(db);
  return ok;
}

}  // namespace
}  // namespace memtap

int main(int argc, char** argv) {
  using namespace memtap;
  if (argc != 2) {
    std::fprintf(stderr, "usage: make_fuzz_seeds DIR\n");
    return 2;
  }
  const std::filesystem::path dir = argv[1];
  std::filesystem::create_directories(dir / "wire_message");
  std::filesystem::create_directories(dir / "memscope_db");

  const std::vector<Bytes> run = training_run(4242);
  std::vector<Bytes> with_child = run;
  for (const Bytes& message : fork_child(4242)) with_child.push_back(message);
  const std::vector<std::pair<std::string, std::vector<Bytes>>> conversations = {
      {"hello", {run[0]}},
      {"batch_alone", {run[1]}},
      {"training_run", run},
      {"fork_child", with_child},
  };
  bool ok = true;
  for (const auto& [name, messages] : conversations) {
    ok = write_file(dir / "wire_message" / name, joined(messages)) && ok;
  }
  ok = record(run, false, (dir / "memscope_db" / "text.db").string()) && ok;
  ok = record(with_child, true, (dir / "memscope_db" / "compact.db").string()) && ok;
  return ok ? 0 : 1;
}
