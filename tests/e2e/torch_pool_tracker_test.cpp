// PyTorch's CUDA caching allocator through memtap's trace tracker, end to end, on machines
// without a GPU: a real interpreter under `memtap run`, with the stand-in torch of
// tests/fake_torch/ first on PYTHONPATH (C++ headers in the shape of a PyTorch release, a
// caching allocator in its libc10_cuda.so over the stand-in CUDA runtime). memtap.torch
// compiles agent/python/memtap/_torch_pool_tracker.cpp against those headers with the
// machine's compiler, loads it and attaches it, as on a user's machine with a CUDA torch.
//
// The stand-in allocator prints what memtap must record of each call ("expect ..." lines,
// tests/e2e/cuda_expectations.h): its segments as HAL blocks, and while a tracker is
// attached every block (PTA MALLOC/FREE/FREE_COMPLETED) and the pool's state after every
// segment change. The recording must hold exactly those rows. Where the tracker cannot be
// had (a torch without trace trackers, an allocator that refuses them, a compiler that
// fails) the run says why in one line and samples the pool at each memtap.step().
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "tests/e2e/cuda_expectations.h"
#include "tests/e2e/db_query.h"
#include "tests/e2e/e2e_support.h"

namespace memtap::e2e {
namespace {

constexpr const char* kPython = "/usr/bin/python3";
const std::string kFakeTorchDir = MEMTAP_FAKE_TORCH_DIR;

// Two devices, two streams, a free that waits for another stream, an owner, a segment
// reused, every segment given back.
constexpr const char* kTrainScript = R"(
import torch
import memtap
from memtap import _torch_pool

cuda = torch.cuda
cuda.init()  # CUDA initialises: memtap's queued call attaches the tracker
print("mode=%s" % _torch_pool.mode, flush=True)
side = cuda.Stream()
a = cuda.caching_allocator_alloc(1000)               # a new 2 MiB segment
with memtap.owner("weights"):
    b = cuda.caching_allocator_alloc(3 << 20)        # a segment of its own
c = cuda.caching_allocator_alloc(4096, stream=side)  # a segment for the other stream
cuda.caching_allocator_delete(a)
cuda.record_stream(c, 0)                             # used on the default stream too,
cuda.caching_allocator_delete(c)                     # so its free waits
d = cuda.caching_allocator_alloc(2000)               # where a was
cuda.synchronize()                                   # c's free completes
memtap.step()
cuda.set_device(1)
e = cuda.caching_allocator_alloc(5000)               # device 1's pool
cuda.set_device(0)
cuda.caching_allocator_delete(e)                     # freed while device 0 is current
cuda.caching_allocator_delete(b)
cuda.caching_allocator_delete(d)
cuda.empty_cache()                                   # every segment goes back
)";

// Three steps, each after a larger block, with the pool's figures as the step saw them.
constexpr const char* kSampledScript = R"(
import torch
import memtap
from memtap import _torch_pool

cuda = torch.cuda
cuda.init()
print("mode=%s" % _torch_pool.mode, flush=True)
blocks = []
for step in range(3):
    blocks.append(cuda.caching_allocator_alloc((step + 1) << 20))
    s = cuda.memory_stats(0)
    print("sample allocated=%d reserved=%d max_allocated=%d max_reserved=%d" % (
        s["allocated_bytes.all.current"], s["reserved_bytes.all.current"],
        s["allocated_bytes.all.peak"], s["reserved_bytes.all.peak"]), flush=True)
    memtap.step()
for p in blocks:
    cuda.caching_allocator_delete(p)
cuda.empty_cache()
)";

// Run with --no-torch-pool: blocks are live before the program asks memtap to watch the
// pool; the tracker, attached late, must start from them.
constexpr const char* kLateScript = R"(
import os
import torch
import memtap
import memtap.torch

cuda = torch.cuda
side = cuda.Stream()
a = cuda.caching_allocator_alloc(1000, stream=side)
b = cuda.caching_allocator_alloc(3 << 20)
print("mode=%s" % memtap.torch.watch_pool(), flush=True)  # CUDA is up: attached now
pid = os.getpid()
for addr, size, stream in ((a, 1000, side.cuda_stream), (b, 3 << 20, 0)):
    print("expect poolMalloc device=0 size_bytes=%d addr=%#x stream=%#x pid=%d"
          % (size, addr, stream, pid))
s = cuda.memory_stats(0)
print("expect poolState device=0 allocated_bytes=%d reserved_bytes=%d pid=%d"
      % (s["requested_bytes.all.current"], s["reserved_bytes.all.current"], pid), flush=True)
cuda.record_stream(a, 0)          # used on the default stream too,
cuda.caching_allocator_delete(a)  # so its free waits
cuda.caching_allocator_delete(b)
cuda.synchronize()
cuda.empty_cache()
)";

constexpr const char* kCompiling = "memtap: compiling the PyTorch pool tracker";

struct TorchRun {
  Recording rec;
  std::string mode;  // what the program printed after "mode="
};

class TorchPoolTracker : public ::testing::Test {
 protected:
  void SetUp() override {
    if (access(kPython, X_OK) != 0) GTEST_SKIP() << kPython << " is not installed";
    ASSERT_TRUE(dir.ok());
    std::ofstream(dir.file("train.py")) << kTrainScript;
    std::ofstream(dir.file("sampled.py")) << kSampledScript;
    std::ofstream(dir.file("late.py")) << kLateScript;
  }

  std::string cache() const { return dir.file("cache"); }

  // `memtap run [options] -o db -- python script` with the stand-in torch of `release`
  // first on PYTHONPATH and (cuda_home) its CUDA headers as CUDA_HOME, two stand-in GPUs.
  TorchRun record(const std::string& release, const std::string& script, const std::string& db,
                  std::vector<std::string> env = {}, std::vector<std::string> options = {},
                  bool cuda_home = true) {
    const std::string root = kFakeTorchDir + "/torch-" + release;
    std::vector<std::string> cmd = {kMemtapBin, "run"};
    cmd.insert(cmd.end(), options.begin(), options.end());
    for (const std::string& arg :
         {std::string("-o"), db, std::string("--"), std::string(kPython), dir.file(script)}) {
      cmd.push_back(arg);
    }
    ProcessSpec spec = spec_in(dir, cmd);
    spec.env_unset.push_back("PYTHONPATH");
    spec.env_unset.push_back("PYTORCH_CUDA_ALLOC_CONF");
    spec.env_unset.push_back("CXX");
    spec.env_set.push_back("PYTHONPATH=" + root);
    spec.env_unset.push_back("CUDA_HOME");
    spec.env_unset.push_back("CUDA_PATH");
    if (cuda_home) spec.env_set.push_back("CUDA_HOME=" + root + "/cuda");
    spec.env_set.push_back("MEMTAP_CACHE_DIR=" + cache());
    spec.env_set.push_back("MEMTAP_FAKE_CUDA_DEVICES=2");
    spec.env_set.push_back("MEMTAP_FAKE_CUDA_CAPACITY=" + std::to_string(256 << 20));
    spec.env_set.insert(spec.env_set.end(), env.begin(), env.end());
    TorchRun out;
    out.rec.result = run_process(spec, kProcessTimeout);
    const ProcessResult& r = out.rec.result;
    EXPECT_TRUE(r.exited && r.exit_code == 0) << describe(r) << "\n" << r.out << "\n" << r.err;
    out.rec.expected = parse_expectations(r.out);
    for (const std::string& line : split_lines(r.out)) {
      if (line.rfind("mode=", 0) == 0) out.mode = line.substr(5);
    }
    read_recording_rows(db, &out.rec);
    return out;
  }

  // memtap's lines on stderr that say why the pool is sampled.
  static std::vector<std::string> why_sampled(const std::string& err) {
    std::vector<std::string> out;
    for (const std::string& line : split_lines(err)) {
      if (line.find("PyTorch's pool blocks are not recorded") != std::string::npos) {
        out.push_back(line);
      }
    }
    return out;
  }

  // The SNAPSHOT PTA rows' figures must be the program's "sample" lines, step by step.
  static void expect_samples(const TorchRun& run) {
    std::vector<std::string> want, got;
    for (const std::string& line : split_lines(run.rec.result.out)) {
      if (line.rfind("sample ", 0) == 0) want.push_back(line.substr(7));
    }
    for (const Row& r : run.rec.rows) {
      if (r.event != "SNAPSHOT" || r.event_type != "PTA") continue;
      EXPECT_EQ(r.device, "0");
      got.push_back("allocated=" + attr_value(r.attr, "allocated") +
                    " reserved=" + attr_value(r.attr, "reserved") +
                    " max_allocated=" + attr_value(r.attr, "max_allocated") +
                    " max_reserved=" + attr_value(r.attr, "max_reserved"));
    }
    EXPECT_EQ(want.size(), 3u) << run.rec.result.out;
    EXPECT_EQ(got, want);
  }

  // A run of sampled.py that could not have the tracker, for `reason`: it says so in one
  // line, records the allocator's own segments (HAL) and no blocks, and each step's sample.
  static void expect_sampled(const TorchRun& run, const std::string& reason) {
    EXPECT_EQ(run.mode, "samples");
    EXPECT_EQ(why_sampled(run.rec.result.err),
              std::vector<std::string>{"memtap: PyTorch's pool blocks are not recorded (" + reason +
                                       "); the pool is sampled at each memtap.step() instead"})
        << run.rec.result.err;
    expect_recorded(run.rec, {"deviceMalloc", "deviceFree"});
    size_t blocks = 0;
    for (const Row& r : run.rec.rows) blocks += r.event_type == "PTA" && r.event == "MALLOC";
    EXPECT_EQ(blocks, 0u);
    expect_samples(run);
  }

  TempDir dir;
};

// 2.1 and 2.9: two layouts of the trace entry; 2.14: headers that need C++20.
TEST_F(TorchPoolTracker, EveryBlockAndSegmentIsOneRowWithTheTorch21And29And214Headers) {
  for (const std::string release : {"2.1", "2.9", "2.14"}) {
    SCOPED_TRACE("torch " + release);
    const std::string db = dir.file("train-" + release + ".db");
    const TorchRun run = record(release, "train.py", db);
    EXPECT_EQ(run.mode, "tracker") << run.rec.result.err;
    EXPECT_NE(
        run.rec.result.err.find(std::string(kCompiling) + " for torch " + release + ".0+standin"),
        std::string::npos)
        << run.rec.result.err;
    EXPECT_TRUE(why_sampled(run.rec.result.err).empty()) << run.rec.result.err;

    // The segments are the HAL blocks, once each; the blocks and the pool's states are the
    // PTA rows, once each, on their own device and stream.
    expect_recorded(run.rec, {"deviceMalloc", "deviceFree"});
    expect_pool_rows(run.rec);
    EXPECT_EQ(expected_pool(run.rec, "poolFreeCompleted").size(), 1u);
    size_t device_1 = 0, owned = 0;
    for (const Row& r : run.rec.rows) {
      if (r.event_type != "PTA" || r.event != "MALLOC") continue;
      device_1 += r.device == "1";
      owned += attr_value(r.attr, "owner") == "weights";
    }
    EXPECT_EQ(device_1, 1u);
    EXPECT_EQ(owned, 1u) << "the one block allocated inside memtap.owner";

    // The report takes the pool from its blocks, with the figures the allocator printed.
    const ReportedPool got = reported_pool(dir, db);
    const PoolFigures want = simulate_pool(run.rec, "0");
    EXPECT_EQ(got.source, "blocks");
    EXPECT_EQ(got.allocated_peak, want.allocated_peak);
    EXPECT_EQ(got.reserved_peak, want.reserved_peak);
    EXPECT_EQ(got.active_peak, want.active_peak);
    EXPECT_EQ(got.pending_frees, 1);
    EXPECT_EQ(got.allocated_final, 0);
  }

  // The next run finds the trackers compiled.
  for (const std::string release : {"2.1", "2.9", "2.14"}) {
    SCOPED_TRACE("torch " + release + ", again");
    const TorchRun again = record(release, "train.py", dir.file("again-" + release + ".db"));
    EXPECT_EQ(again.mode, "tracker") << again.rec.result.err;
    EXPECT_EQ(again.rec.result.err.find(kCompiling), std::string::npos) << again.rec.result.err;
    expect_pool_rows(again.rec);
  }
}

// PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True: a segment is an address range mapped a
// page at a time (cuMemCreate, cuMemMap through driver entry points), the tracker hears
// SEGMENT_MAP and, when empty_cache() unmaps the free pages, SEGMENT_UNMAP. Each page is one
// HAL row, each block and pool state one PTA row, and the report's pool figures are the
// allocator's.
TEST_F(TorchPoolTracker, ExpandableSegmentsArePagesMappedAndUnmappedWithTheirPoolStates) {
  const std::string db = dir.file("expandable.db");
  const TorchRun run =
      record("2.9", "train.py", db, {"PYTORCH_CUDA_ALLOC_CONF=expandable_segments:True"});
  EXPECT_EQ(run.mode, "tracker") << run.rec.result.err;
  expect_recorded(run.rec, {"deviceMalloc", "deviceFree"});
  expect_pool_rows(run.rec);
  size_t maps = 0, unmaps = 0;
  for (const Expected& e : run.rec.expected) {
    if (e.event == "deviceMalloc") {
      EXPECT_EQ(e.fields.at("api"), "cuMemMap");
      ++maps;
    }
    unmaps += e.event == "deviceFree" && e.fields.at("api") == "cuMemUnmap";
  }
  // Device 0: a small-block range per stream and a large one (a 20 MiB page); device 1: a
  // small one. Every page goes back at empty_cache().
  EXPECT_EQ(maps, 4u) << run.rec.result.out;
  EXPECT_EQ(unmaps, maps) << run.rec.result.out;

  const ReportedPool got = reported_pool(dir, db);
  const PoolFigures want = simulate_pool(run.rec, "0");
  EXPECT_EQ(got.source, "blocks");
  EXPECT_EQ(got.allocated_peak, want.allocated_peak);
  EXPECT_EQ(got.reserved_peak, want.reserved_peak);
  EXPECT_EQ(got.reserved_peak, (2 + 2 + 20) << 20);
  EXPECT_EQ(got.active_peak, want.active_peak);
  EXPECT_EQ(got.pending_frees, 1);
  EXPECT_EQ(got.allocated_final, 0);
}

// memtap run --stacks python: a pool block carries the Python stack of the code that asked
// for it, as a host block does, because the tracker records on the allocating thread. The
// frames are innermost first: the stand-in's torch/cuda.py, then train.py at the line of
// each caching_allocator_alloc (a: 10, b: 12, c: 13, d: 17, e: 21).
TEST_F(TorchPoolTracker, APoolBlockCarriesThePythonStackThatAskedForIt) {
  const std::string db = dir.file("stacks.db");
  const TorchRun run =
      record("2.9", "train.py", db, {}, {"--stacks", "python", "--stack-min-size", "0"});
  EXPECT_EQ(run.mode, "tracker") << run.rec.result.err;
  std::string error;
  auto q = DbQuery::open(db, &error);
  ASSERT_TRUE(q) << error;
  DbRows rows;
  ASSERT_TRUE(
      q->query("SELECT \"Call Stack(Python)\" FROM memscope_dump "
               "WHERE \"Event Type\" = 'PTA' AND Event = 'MALLOC' ORDER BY ID",
               {}, &rows, &error))
      << error;
  std::vector<std::string> callers;
  for (const auto& row : rows.rows) {
    const std::vector<std::string> frames = split_lines(row[0].text);
    ASSERT_GE(frames.size(), 2u) << row[0].text;
    EXPECT_NE(frames[0].find("/torch/cuda.py("), std::string::npos) << row[0].text;
    EXPECT_NE(frames[0].find("): caching_allocator_alloc"), std::string::npos) << row[0].text;
    callers.push_back(frames[1]);
  }
  const std::string script = dir.file("train.py");
  EXPECT_EQ(callers, (std::vector<std::string>{script + "(10): <module>", script + "(12): <module>",
                                               script + "(13): <module>", script + "(17): <module>",
                                               script + "(21): <module>"}));
}

// Without a toolkit, as most pip installs: the headers come from the nvidia-* wheels beside
// torch, searched before /usr/local/cuda (which may be another CUDA version), and the
// crt/host_defines.h that no wheel ships from memtap's own directory, searched last.
TEST_F(TorchPoolTracker, TheWheelsCudaHeadersAreTakenAndTheirMissingCrtHeaderSupplied) {
  const std::string root = kFakeTorchDir + "/torch-2.9";
  const TorchRun run = record("2.9", "train.py", dir.file("wheels.db"), {}, {}, false);
  EXPECT_EQ(run.mode, "tracker") << run.rec.result.err;
  expect_pool_rows(run.rec);

  // The compiler's command, the first line of its log, says where it looked, in order.
  std::string command;
  for (const auto& entry : std::filesystem::directory_iterator(cache())) {
    if (entry.path().extension() == ".log") std::getline(std::ifstream(entry.path()), command);
  }
  ASSERT_FALSE(command.empty()) << "no compiler log in " << cache();
  const size_t wheel = command.find(" -I " + root + "/nvidia/cuda_runtime/include ");
  const size_t shim = command.find("/memtap/_cuda_shim");
  ASSERT_NE(wheel, std::string::npos) << command;
  ASSERT_NE(shim, std::string::npos) << command;
  EXPECT_LT(wheel, shim) << command;
  const size_t toolkit = command.find(" -I /usr/local/cuda/include ");
  if (toolkit != std::string::npos) {
    EXPECT_LT(wheel, toolkit) << command;
    EXPECT_LT(toolkit, shim) << command;
  }
}

TEST_F(TorchPoolTracker, BlocksLiveBeforeALateAttachAreWhereThePoolStarts) {
  const TorchRun run = record("2.9", "late.py", dir.file("late.db"), {}, {"--no-torch-pool"});
  EXPECT_EQ(run.mode, "tracker") << run.rec.result.err;
  // The program's lines for the two live blocks and the state they make, the allocator's
  // for their frees and the segments given back.
  expect_pool_rows(run.rec);
  expect_recorded(run.rec, {"deviceMalloc", "deviceFree"});
  // Every FREE found its block (allocation ids are given to MALLOCs only).
  for (const Row& r : run.rec.rows) {
    if (r.event_type == "PTA" && r.event == "FREE") {
      EXPECT_NE(attr_value(r.attr, "allocation_id"), "0") << r.ptr;
    }
  }
}

TEST_F(TorchPoolTracker, AnAllocatorThatRefusesTrackersIsSampledAndSaysWhyInOneLine) {
  const TorchRun run = record("2.9", "sampled.py", dir.file("async.db"),
                              {"PYTORCH_CUDA_ALLOC_CONF=backend:cudaMallocAsync"});
  // PyTorch's message, without the C++ backtrace lines c10::Error adds.
  expect_sampled(run,
                 "cudaMallocAsync does not yet support attachAllocatorTraceTracker. If you need "
                 "it, please file an issue describing your use case.");
  EXPECT_EQ(run.rec.result.err.find("Exception raised from"), std::string::npos);
}

TEST_F(TorchPoolTracker, ATorchWithoutTraceTrackersIsSampledWithoutCompiling) {
  const TorchRun run = record("2.0", "sampled.py", dir.file("torch20.db"));
  expect_sampled(run,
                 "this torch's caching allocator has no trace trackers (PyTorch 2.1 and later "
                 "have them)");
  EXPECT_EQ(run.rec.result.err.find(kCompiling), std::string::npos) << run.rec.result.err;
  EXPECT_FALSE(std::filesystem::exists(cache()));
}

TEST_F(TorchPoolTracker, ACompilerThatFailedIsNotRunAgainAndItsOutputIsKept) {
  const std::string cxx = dir.file("failing-c++");
  std::ofstream(cxx) << "#!/bin/sh\necho run >> \"$0.calls\"\n"
                        "echo 'stand-in compiler: error: this compiler always fails' >&2\n"
                        "exit 1\n";
  ASSERT_EQ(chmod(cxx.c_str(), 0755), 0);
  for (int attempt = 1; attempt <= 2; ++attempt) {
    SCOPED_TRACE("run " + std::to_string(attempt));
    const TorchRun run = record("2.9", "sampled.py",
                                dir.file("cc" + std::to_string(attempt) + ".db"), {"CXX=" + cxx});
    EXPECT_EQ(run.mode, "samples");
    const std::vector<std::string> why = why_sampled(run.rec.result.err);
    ASSERT_EQ(why.size(), 1u) << run.rec.result.err;
    // Either way the line names the compiler's output, which says what went wrong.
    const size_t at = why[0].find(cache() + "/torch_pool_tracker-2.9.0_standin-");
    ASSERT_NE(at, std::string::npos) << why[0];
    const std::string log = why[0].substr(at, why[0].find(".log", at) + 4 - at);
    std::ifstream in(log);
    std::stringstream text;
    text << in.rdbuf();
    EXPECT_NE(text.str().find("this compiler always fails"), std::string::npos) << log;
    EXPECT_NE(
        why[0].find(attempt == 1 ? "failing-c++ failed (exit 1)" : "compiling it failed before"),
        std::string::npos)
        << why[0];
    expect_samples(run);
  }
  std::ifstream calls(cxx + ".calls");
  std::string all((std::istreambuf_iterator<char>(calls)), std::istreambuf_iterator<char>());
  EXPECT_EQ(all, "run\n") << "the compiler ran once in two runs";
}

}  // namespace
}  // namespace memtap::e2e
