// GPU memory end to end, on machines without a GPU: `memtap run` of memtap_test_cuda_pool
// against the stand-in CUDA runtime and driver (tests/fake_cuda/), which reach each other
// as the real ones do (the runtime finds the driver only through dlsym on a dlopen'ed
// handle and cuGetProcAddress). The program prints what memtap must record ("expect ..."
// lines); each test compares them with the recording's rows as multisets, so a missing,
// extra or double-counted row fails it.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "tests/e2e/cuda_expectations.h"
#include "tests/e2e/e2e_support.h"

namespace memtap::e2e {
namespace {

const std::string kCudaProgram = MEMTAP_TEST_CUDA_POOL;
const std::string kFakeCudaDir = MEMTAP_FAKE_CUDA_LIB_DIR;
const std::string kCudaProbe = MEMTAP_TEST_CUDA_PROBE;

Recording run_scenarios(const TempDir& dir, const std::vector<std::string>& scenarios,
                        int devices = 1, std::vector<std::string> options = {}) {
  Recording run;
  const std::string db = dir.file("cuda.db");
  std::vector<std::string> cmd = {kMemtapBin, "run", "-o", db};
  cmd.insert(cmd.end(), options.begin(), options.end());
  cmd.push_back("--");
  cmd.push_back(kCudaProgram);
  cmd.insert(cmd.end(), scenarios.begin(), scenarios.end());
  ProcessSpec spec = spec_in(dir, cmd);
  spec.env_set.push_back("LD_LIBRARY_PATH=" + kFakeCudaDir);
  spec.env_set.push_back("MEMTAP_FAKE_CUDA_DEVICES=" + std::to_string(devices));
  spec.env_set.push_back("MEMTAP_FAKE_CUDA_CAPACITY=" + std::to_string(256 << 20));
  run.result = run_process(spec, kProcessTimeout);
  EXPECT_TRUE(run.result.exited && run.result.exit_code == 0) << describe(run.result) << "\n"
                                                              << run.result.err;
  run.expected = parse_expectations(run.result.out);
  read_recording_rows(db, &run);
  return run;
}

TEST(Cuda, RuntimeAndDriverAllocationsAreEachRecordedOnce) {
  TempDir dir;
  Recording run = run_scenarios(dir, {"basic", "vmm", "pool"});
  // cudaMalloc reaches the stand-in driver's cuMemAlloc_v2 through an entry point: were the
  // driver call recorded too, every runtime block would be there twice.
  expect_recorded(run, {"deviceMalloc", "deviceFree"});
}

TEST(Cuda, AsyncAllocationsCarryTheirStream) {
  TempDir dir;
  Recording run = run_scenarios(dir, {"async"});
  expect_recorded(run, {"deviceMalloc", "deviceFree"});
  std::multiset<std::string> want, got;
  for (const Expected& e : run.expected) {
    if (e.event == "deviceMalloc") {
      want.insert(canonical_hex(e.fields.at("addr")) + " " + canonical_hex(e.fields.at("stream")));
    }
  }
  for (const Row& r : run.rows) {
    if (r.event == "MALLOC" && r.event_type == "HAL") {
      got.insert(canonical_hex(r.ptr) + " " + canonical_hex(attr_value(r.attr, "stream")));
    }
  }
  EXPECT_EQ(got, want);
}

TEST(Cuda, PinnedHostMemoryIsHostPinned) {
  TempDir dir;
  Recording run = run_scenarios(dir, {"pinned"});
  expect_recorded(run, {"pinnedMalloc", "pinnedFree"});
}

TEST(Cuda, KernelLaunchesAreNamedFromEveryPath) {
  TempDir dir;
  Recording run = run_scenarios(dir, {"launch"});
  expect_recorded(run, {"kernelLaunch"});
}

TEST(Cuda, OutOfMemoryIsOneRowWithTheLargestLiveBlocks) {
  TempDir dir;
  Recording run = run_scenarios(dir, {"oom"});
  expect_recorded(run, {"deviceOom", "deviceMalloc", "deviceFree"});
  // Each OOM_TRIGGER is followed by OOM_TOP_ALLOC rows of blocks live at that moment,
  // largest first: the scenario holds three 64 MiB blocks.
  for (size_t i = 0; i < run.rows.size(); ++i) {
    if (run.rows[i].event_type != "OOM_TRIGGER") continue;
    std::vector<uint64_t> sizes;
    for (size_t j = i + 1; j < run.rows.size() && run.rows[j].event_type == "OOM_TOP_ALLOC"; ++j) {
      sizes.push_back(std::stoull(attr_value(run.rows[j].attr, "size")));
    }
    ASSERT_GE(sizes.size(), 3u) << "OOM_TOP_ALLOC rows after row " << i;
    EXPECT_TRUE(std::is_sorted(sizes.rbegin(), sizes.rend()));
    EXPECT_EQ(sizes[0], uint64_t{64} << 20);
  }
}

TEST(Cuda, TwoDevicesAndAFreeWhileAnotherDeviceIsCurrent) {
  TempDir dir;
  Recording run = run_scenarios(dir, {"two_devices"}, 2);
  expect_recorded(run, {"deviceMalloc", "deviceFree", "kernelLaunch"});
  // Each device's capacity, once, as a START_TRACE row with total and free.
  std::multiset<std::string> capacities;
  for (const Row& r : run.rows) {
    if (r.event == "SYSTEM" && r.event_type == "START_TRACE" && r.device != "cpu" &&
        r.device != "N/A") {
      capacities.insert(r.device + " " + attr_value(r.attr, "total"));
    }
  }
  const std::string total = std::to_string(256 << 20);
  EXPECT_EQ(capacities, (std::multiset<std::string>{"0 " + total, "1 " + total}));
}

TEST(Cuda, DeviceAllocationsCarryTheirCallStacks) {
  TempDir dir;
  Recording run =
      run_scenarios(dir, {"basic", "pinned"}, 1, {"--stacks", "c", "--stack-min-size", "0"});
  size_t blocks = 0;
  for (const Row& r : run.rows) {
    if (r.event != "MALLOC" || (r.event_type != "HAL" && r.event_type != "HOST_PINNED")) continue;
    ++blocks;
    // The program's frames, named by its path.
    EXPECT_NE(r.stack_c.find(real_path(kCudaProgram)), std::string::npos)
        << r.name << " at " << r.ptr << ": " << r.stack_c;
  }
  EXPECT_EQ(blocks,
            expected_as(run, "deviceMalloc").size() + expected_as(run, "pinnedMalloc").size());
}

TEST(Cuda, ThreadsAndAForkChildAreRecordedEach) {
  TempDir dir;
  Recording run = run_scenarios(dir, {"threads", "fork"});
  expect_recorded(run, {"deviceMalloc", "deviceFree", "kernelLaunch"});
}

// The framework pool (PTA): memtap_test_cuda_pool's miniature caching allocator reports its
// blocks and figures as memtap.torch's tracker does for PyTorch. Each report must be one row
// of its own, the segments must stay the only HAL blocks, an OOM must list the pool's live
// blocks (the tensors) with their owners, and the report's pool curves must be what the
// program's own bookkeeping says.

TEST(Cuda, APoolsBlocksArePtaRowsInsideItsSegments) {
  TempDir dir;
  Recording run = run_scenarios(dir, {"caching"});
  // The segments are the only HAL blocks: no block is recorded twice.
  expect_recorded(run, {"deviceMalloc", "deviceFree", "deviceOom"});
  expect_pool_rows(run);
  // One free waited for another stream: its FREE says pending and a FREE_COMPLETED follows;
  // every other completion came at once and is folded into its FREE.
  EXPECT_EQ(expected_pool(run, "poolFreeCompleted").size(), 1u);

  // The OOM lists the pool's live blocks, largest first, with the owner of the one the
  // program allocated inside memtap_owner_push("activations").
  std::vector<std::string> want_top, got_top;
  for (const Expected& e : run.expected) {
    if (e.event == "oomTopAlloc") {
      want_top.push_back(canonical_hex(e.fields.at("addr")) + " " + e.fields.at("size_bytes"));
    }
  }
  std::string top_owner;
  for (const Row& r : run.rows) {
    if (r.event == "OOM_DETAIL" && r.event_type == "OOM_TOP_ALLOC") {
      got_top.push_back(canonical_hex(r.ptr) + " " + attr_value(r.attr, "size"));
      if (got_top.size() == 1) top_owner = attr_value(r.attr, "owner");
    }
  }
  ASSERT_EQ(want_top.size(), 10u);
  EXPECT_EQ(got_top, want_top);
  EXPECT_EQ(top_owner, "activations");
  size_t owned = 0;
  for (const Row& r : run.rows) {
    owned += r.event == "MALLOC" && r.event_type == "PTA" &&
             attr_value(r.attr, "owner") == "activations";
  }
  EXPECT_EQ(owned, 1u) << "the one block allocated inside the owner";

  // The report's pool figures for device 0.
  const ReportedPool got = reported_pool(dir, dir.file("cuda.db"));
  const PoolFigures want = simulate_pool(run, "0");
  EXPECT_EQ(got.source, "blocks");
  EXPECT_EQ(got.allocated_peak, want.allocated_peak);
  EXPECT_EQ(got.reserved_peak, want.reserved_peak);
  EXPECT_EQ(got.active_peak, want.active_peak);
  EXPECT_EQ(got.pending_frees, want.pending_frees);
  EXPECT_EQ(got.allocated_final, 0);
}

// The pool shared by four threads: a block one thread frees is another's next (the FREE
// must come before that MALLOC), and a free pending on one thread is completed by another
// thread's allocation (no fold across threads: a pending FREE, then FREE_COMPLETED).
TEST(Cuda, APoolSharedByThreadsKeepsEachBlocksOrderAcrossThem) {
  TempDir dir;
  Recording run = run_scenarios(dir, {"caching_threads"});
  expect_recorded(run, {"deviceMalloc", "deviceFree"});
  expect_pool_rows(run);
  // Every FREE found its block: no synthetic closes, no unmatched frees (an id of 0).
  for (const Row& r : run.rows) {
    if (r.event_type == "PTA" && r.event == "FREE") {
      EXPECT_NE(attr_value(r.attr, "allocation_id"), "0") << r.ptr;
    }
  }
  const ReportedPool got = reported_pool(dir, dir.file("cuda.db"));
  const PoolFigures want = simulate_pool(run, "0");  // the lines come in the pool's order
  EXPECT_GT(want.pending_frees, 0);
  EXPECT_EQ(got.allocated_peak, want.allocated_peak);
  EXPECT_EQ(got.active_peak, want.active_peak);
  EXPECT_EQ(got.pending_frees, want.pending_frees);
  EXPECT_EQ(got.active_final, 0);
}

TEST(Cuda, APoolOnTheSecondDeviceIsThatDevicesAndWaitsForItsStream) {
  TempDir dir;
  Recording run = run_scenarios(dir, {"caching_two_devices"}, 2);
  expect_recorded(run, {"deviceMalloc", "deviceFree"});
  expect_pool_rows(run);
  for (const Row& r : run.rows) {
    if (r.event_type == "PTA") {
      EXPECT_EQ(r.device, "1") << r.event << " " << r.ptr;
    }
  }
}

// The agent defines every CUDA function it hooks. A program without CUDA that asks whether it
// is there (a lookup by name: RTLD_DEFAULT, RTLD_NEXT, or its own handle, which is what
// Python's ctypes.CDLL(None) looks in) must hear no under memtap as without it, with a dlerror()
// text naming the function: otherwise it takes its CUDA path and fails in our hook.
std::map<std::string, std::string> probe_cuda(const TempDir& dir,
                                              const std::vector<std::string>& load) {
  std::vector<std::string> cmd = {kMemtapBin, "run", "-o", dir.file("probe.db"), "--", kCudaProbe};
  cmd.insert(cmd.end(), load.begin(), load.end());
  ProcessResult r = run_process(spec_in(dir, cmd), kProcessTimeout);
  EXPECT_TRUE(r.exited && r.exit_code == 0) << describe(r) << "\n" << r.err;
  std::map<std::string, std::string> answers;  // "phase route name" -> "found" or the error
  for (const std::string& line : split_lines(r.out)) {
    std::istringstream fields(line);
    std::string phase, route, name, answer;
    fields >> phase >> route >> name;
    std::getline(fields >> std::ws, answer);
    answers[phase + " " + route + " " + name] = answer;
  }
  return answers;
}

const std::vector<std::string> kProbedHooks = {
    "cudaMalloc",    "cudaLaunchKernel",    "__cudaLaunchKernel", "cudaGetDriverEntryPoint",
    "cuMemAlloc_v2", "cuGetProcAddress_v2", "cuLaunchKernel"};

TEST(Cuda, AProgramWithoutCudaFindsNoCudaFunctionUnderMemtap) {
  TempDir dir;
  const std::map<std::string, std::string> answers = probe_cuda(dir, {});
  ASSERT_EQ(answers.size(), 27u);  // 9 names, 3 routes
  for (const std::string route : {"default", "next", "self"}) {
    for (const std::string& name : kProbedHooks) {
      const std::string answer = answers.at("before " + route + " " + name);
      EXPECT_EQ(answer.rfind("absent ", 0), 0u) << route << " " << name << ": " << answer;
      EXPECT_NE(answer.find(name), std::string::npos) << route << " " << name << ": " << answer;
    }
    EXPECT_EQ(answers.at("before " + route + " malloc"), "found");
  }
}

// Once the runtime is loaded, the same lookups find it (our hooks, which call it), whether it
// came in with RTLD_GLOBAL or, like a Python extension's dependency, RTLD_LOCAL.
TEST(Cuda, LookupsFindCudaOnceItIsLoaded) {
  TempDir dir;
  std::map<std::string, std::string> answers = probe_cuda(dir, {kFakeCudaDir + "/libcudart.so.13"});
  for (const std::string route : {"default", "next", "self"}) {
    for (const std::string name : {"cudaMalloc", "cudaLaunchKernel", "cudaDeviceSynchronize"}) {
      EXPECT_EQ(answers["after " + route + " " + name], "found") << route << " " << name;
    }
  }
  answers = probe_cuda(dir, {kFakeCudaDir + "/libcuda.so.1", "local"});
  for (const std::string name : {"cuMemAlloc_v2", "cuLaunchKernel"}) {
    EXPECT_EQ(answers["after default " + name], "found") << name;
    EXPECT_EQ(answers["before default " + name].rfind("absent ", 0), 0u) << name;
  }
}

}  // namespace
}  // namespace memtap::e2e
