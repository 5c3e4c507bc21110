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

#include "tests/e2e/db_query.h"
#include "tests/e2e/e2e_support.h"

namespace memtap::e2e {
namespace {

const std::string kCudaProgram = MEMTAP_TEST_CUDA_POOL;
const std::string kFakeCudaDir = MEMTAP_FAKE_CUDA_LIB_DIR;

using Fields = std::map<std::string, std::string>;

struct Expected {
  std::string event;  // deviceMalloc, deviceFree, pinnedMalloc, pinnedFree, kernelLaunch,
                      // deviceOom
  Fields fields;
};

std::vector<Expected> parse_expectations(const std::string& out) {
  std::vector<Expected> result;
  for (const std::string& line : split_lines(out)) {
    std::istringstream in(line);
    std::string word, event;
    if (!(in >> word) || word != "expect" || !(in >> event)) continue;
    Expected e{event, {}};
    while (in >> word) {
      const size_t eq = word.find('=');
      if (eq != std::string::npos) e.fields[word.substr(0, eq)] = word.substr(eq + 1);
    }
    result.push_back(e);
  }
  return result;
}

// An address or stream as a number: the program prints "0x1000", the recording writes
// Ptr as "0x0000000000001000" and the Attr stream in decimal, as msMemScope does.
std::string canonical_hex(const std::string& text) {
  if (text.empty()) return text;
  return std::to_string(std::stoull(text, nullptr, text.rfind("0x", 0) == 0 ? 16 : 10));
}

// An Attr value ({"size":"4096",...}); "" when absent.
std::string attr_value(const std::string& attr, const std::string& key) {
  const std::string quoted = "\"" + key + "\":\"";
  const size_t at = attr.find(quoted);
  if (at == std::string::npos) return "";
  const size_t start = at + quoted.size();
  return attr.substr(start, attr.find('"', start) - start);
}

struct Row {
  std::string event, event_type, name, device, ptr, attr;
  int64_t pid = 0;
  std::string stack_c;
};

struct Recording {
  ProcessResult result;
  std::vector<Expected> expected;
  std::vector<Row> rows;
};

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
  std::string error;
  auto q = DbQuery::open(db, &error);
  if (!q) {
    ADD_FAILURE() << error;
    return run;
  }
  DbRows rows;
  EXPECT_TRUE(
      q->query("SELECT Event, \"Event Type\", Name, \"Device Id\", Ptr, Attr, "
               "\"Process Id\", \"Call Stack(C)\" FROM memscope_dump "
               "ORDER BY \"Timestamp(ns)\", ID",
               {}, &rows, &error))
      << error;
  for (const auto& r : rows.rows) {
    run.rows.push_back({r[0].text, r[1].text, r[2].text, r[3].text, r[4].text, r[5].text,
                        r[6].integer, r[7].text});
  }
  return run;
}

// What each expectation and each row says, in one comparable form.
std::multiset<std::string> expected_as(const Recording& run, const std::string& event) {
  std::multiset<std::string> out;
  for (const Expected& e : run.expected) {
    if (e.event != event) continue;
    const Fields& f = e.fields;
    auto get = [&](const char* key) {
      auto it = f.find(key);
      return it == f.end() ? std::string() : it->second;
    };
    if (event == "deviceMalloc" || event == "pinnedMalloc") {
      out.insert(get("pid") + " " + get("api") + " dev" +
                 (event == "pinnedMalloc" ? std::string("cpu") : get("device")) + " " +
                 canonical_hex(get("addr")) + " " + get("size_bytes"));
    } else if (event == "deviceFree" || event == "pinnedFree") {
      out.insert(get("pid") + " dev" +
                 (event == "pinnedFree" ? std::string("cpu") : get("device")) + " " +
                 canonical_hex(get("addr")));
    } else if (event == "kernelLaunch") {
      out.insert(get("pid") + " " + get("name") + " dev" + get("device") + " " +
                 canonical_hex(get("stream")));
    } else if (event == "deviceOom") {
      out.insert(get("pid") + " " + get("api") + " dev" + get("device") + " " + get("size_bytes"));
    }
  }
  return out;
}

std::multiset<std::string> recorded_as(const Recording& run, const std::string& event) {
  std::multiset<std::string> out;
  for (const Row& r : run.rows) {
    const std::string pid = std::to_string(r.pid);
    if ((event == "deviceMalloc" && r.event == "MALLOC" && r.event_type == "HAL") ||
        (event == "pinnedMalloc" && r.event == "MALLOC" && r.event_type == "HOST_PINNED")) {
      out.insert(pid + " " + r.name + " dev" + r.device + " " + canonical_hex(r.ptr) + " " +
                 attr_value(r.attr, "size"));
    } else if ((event == "deviceFree" && r.event == "FREE" && r.event_type == "HAL") ||
               (event == "pinnedFree" && r.event == "FREE" && r.event_type == "HOST_PINNED")) {
      out.insert(pid + " dev" + r.device + " " + canonical_hex(r.ptr));
    } else if (event == "kernelLaunch" && r.event == "KERNEL_LAUNCH") {
      out.insert(pid + " " + r.name + " dev" + r.device + " " +
                 canonical_hex(attr_value(r.attr, "stream")));
    } else if (event == "deviceOom" && r.event == "OOM_DETAIL" && r.event_type == "OOM_TRIGGER") {
      out.insert(pid + " " + r.name + " dev" + r.device + " " + attr_value(r.attr, "size"));
    }
  }
  return out;
}

void expect_recorded(const Recording& run, const std::vector<std::string>& events) {
  for (const std::string& event : events) {
    const auto want = expected_as(run, event);
    EXPECT_FALSE(want.empty()) << "the program printed no " << event;
    EXPECT_EQ(recorded_as(run, event), want) << event << " rows";
  }
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
std::multiset<std::string> expected_pool(const Recording& run, const std::string& event) {
  std::multiset<std::string> out;
  for (const Expected& e : run.expected) {
    if (e.event != event) continue;
    auto get = [&](const char* key) {
      auto it = e.fields.find(key);
      return it == e.fields.end() ? std::string() : it->second;
    };
    const std::string head = get("pid") + " dev" + get("device") + " ";
    if (event == "poolMalloc") {
      out.insert(head + canonical_hex(get("addr")) + " " + get("size_bytes") + " " +
                 canonical_hex(get("stream")));
    } else if (event == "poolFree") {
      out.insert(head + canonical_hex(get("addr")) + " " + get("size_bytes") + " pending" +
                 get("pending") + " " + canonical_hex(get("stream")));
    } else if (event == "poolFreeCompleted") {
      out.insert(head + canonical_hex(get("addr")) + " " + get("size_bytes"));
    } else if (event == "poolState") {
      out.insert(head + get("allocated_bytes") + " " + get("reserved_bytes"));
    }
  }
  return out;
}

std::multiset<std::string> recorded_pool(const Recording& run, const std::string& event) {
  std::multiset<std::string> out;
  for (const Row& r : run.rows) {
    const std::string head = std::to_string(r.pid) + " dev" + r.device + " ";
    const std::string& a = r.attr;
    if (r.event_type != "PTA") continue;
    if (event == "poolMalloc" && r.event == "MALLOC") {
      out.insert(head + canonical_hex(r.ptr) + " " + attr_value(a, "size") + " " +
                 canonical_hex(attr_value(a, "stream")));
    } else if (event == "poolFree" && r.event == "FREE") {
      out.insert(head + canonical_hex(r.ptr) + " " + attr_value(a, "size") + " pending" +
                 (attr_value(a, "pending") == "1" ? "1" : "0") + " " +
                 canonical_hex(attr_value(a, "stream")));
    } else if (event == "poolFreeCompleted" && r.event == "FREE_COMPLETED") {
      out.insert(head + canonical_hex(r.ptr) + " " + attr_value(a, "size"));
    } else if (event == "poolState" && r.event == "SNAPSHOT") {
      out.insert(head + attr_value(a, "allocated") + " " + attr_value(a, "reserved"));
    }
  }
  return out;
}

// Allocated, Reserved and Active as the program's expect lines say they went, in its order
// (one thread): their peaks, and how many frees waited.
struct PoolFigures {
  int64_t allocated_peak = 0, reserved_peak = 0, active_peak = 0, pending_frees = 0;
};

PoolFigures simulate_pool(const Recording& run, const std::string& device) {
  PoolFigures f;
  int64_t allocated = 0, pending = 0;
  std::map<std::string, int64_t> waiting;
  for (const Expected& e : run.expected) {
    auto it = e.fields.find("device");
    if (it == e.fields.end() || it->second != device) continue;
    auto number = [&](const char* key) { return int64_t(std::stoll(e.fields.at(key))); };
    if (e.event == "poolMalloc") {
      allocated += number("size_bytes");
    } else if (e.event == "poolFree") {
      allocated -= number("size_bytes");
      if (e.fields.at("pending") == "1") {
        pending += number("size_bytes");
        waiting[e.fields.at("addr")] = number("size_bytes");
        ++f.pending_frees;
      }
    } else if (e.event == "poolFreeCompleted") {
      pending -= waiting[e.fields.at("addr")];
      waiting.erase(e.fields.at("addr"));
    } else if (e.event == "poolState") {
      f.reserved_peak = std::max(f.reserved_peak, number("reserved_bytes"));
    }
    f.allocated_peak = std::max(f.allocated_peak, allocated);
    f.active_peak = std::max(f.active_peak, allocated + pending);
  }
  return f;
}

// Every pool report the program printed is one row of its own, and nothing else is.
void expect_pool_rows(const Recording& run) {
  for (const char* event : {"poolMalloc", "poolFree", "poolFreeCompleted", "poolState"}) {
    const auto want = expected_pool(run, event);
    EXPECT_FALSE(want.empty()) << "the program printed no " << event;
    EXPECT_EQ(recorded_pool(run, event), want) << event << " rows";
  }
}

// Device 0's pool as `memtap report --json` of the run's recording gives it.
struct ReportedPool {
  std::string source;
  int64_t allocated_peak = -1, reserved_peak = -1, active_peak = -1, pending_frees = -1;
  int64_t allocated_final = -1, active_final = -1;
};

ReportedPool reported_pool(const TempDir& dir) {
  ReportedPool out;
  ProcessResult report = run_process(
      spec_in(dir, {kMemtapBin, "report", "--json", dir.file("cuda.db")}), kProcessTimeout);
  EXPECT_TRUE(report.exited && report.exit_code == 0) << describe(report) << report.err;
  std::string error;
  auto q = DbQuery::open(":memory:", &error);
  if (!q) {
    ADD_FAILURE() << error;
    return out;
  }
  DbRows rows;
  EXPECT_TRUE(
      q->query("SELECT json_extract(d.value, '$.pool.source'), "
               "json_extract(d.value, '$.pool.allocated.peak_bytes'), "
               "json_extract(d.value, '$.pool.reserved.peak_bytes'), "
               "json_extract(d.value, '$.pool.active.peak_bytes'), "
               "json_extract(d.value, '$.pool.pending_frees'), "
               "json_extract(d.value, '$.pool.allocated.final_bytes'), "
               "json_extract(d.value, '$.pool.active.final_bytes') "
               "FROM json_each(json_extract(?, '$.devices')) d "
               "WHERE json_extract(d.value, '$.device') = 'device 0'",
               {report.out}, &rows, &error))
      << error;
  if (rows.rows.size() != 1) {
    ADD_FAILURE() << "no one device 0 in the report:\n" << report.out;
    return out;
  }
  const auto& r = rows.rows[0];
  out.source = r[0].text;
  out.allocated_peak = r[1].integer;
  out.reserved_peak = r[2].integer;
  out.active_peak = r[3].integer;
  out.pending_frees = r[4].integer;
  out.allocated_final = r[5].integer;
  out.active_final = r[6].integer;
  return out;
}

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
  const ReportedPool got = reported_pool(dir);
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
  const ReportedPool got = reported_pool(dir);
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

}  // namespace
}  // namespace memtap::e2e
