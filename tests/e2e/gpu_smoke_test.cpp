// tests/gpu/smoke.sh, the check a machine with a real GPU runs, run here on the stand-ins: the
// stand-in torch of tests/fake_torch/ (tensors, torch.nn and Adam with memory and kernels but
// no values, a caching allocator with cudaMalloc segments or expandable segments) over the
// stand-in CUDA runtime and driver. The script, its training loop (smoke_train.py) and its
// checks (check_recording.py) run unchanged, so that a GPU machine lent for minutes finds
// them working; and where the script cannot find a GPU it says so and passes.
//
// The stand-in allocator and kernels also print what memtap must record ("expect ..." lines,
// tests/e2e/cuda_expectations.h): each run's recording must hold exactly those rows.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <string>
#include <vector>

#include "tests/e2e/cuda_expectations.h"
#include "tests/e2e/e2e_support.h"

namespace memtap::e2e {
namespace {

constexpr const char* kPython = "/usr/bin/python3";
const std::string kFakeTorch = std::string(MEMTAP_FAKE_TORCH_DIR) + "/torch-2.9";
const std::string kSmokeScript = MEMTAP_GPU_SMOKE_SCRIPT;
constexpr const char* kRunMarker = "== PYTORCH_CUDA_ALLOC_CONF=";

class GpuSmoke : public ::testing::Test {
 protected:
  void SetUp() override {
    if (access(kPython, X_OK) != 0) GTEST_SKIP() << kPython << " is not installed";
    ASSERT_TRUE(dir.ok());
  }

  // `bash tests/gpu/smoke.sh BUILD` with this build's memtap, `pythonpath` first for the
  // interpreter, and the recordings in the test's directory.
  ProcessResult smoke(const std::string& pythonpath, const std::string& memtap = "") {
    ProcessSpec spec = spec_in(dir, {"/bin/bash", kSmokeScript, std::string(MEMTAP_BUILD_DIR)});
    for (const char* name : {"PYTHONPATH", "PYTORCH_CUDA_ALLOC_CONF", "CXX", "CUDA_HOME",
                             "CUDA_PATH", "MEMTAP", "MEMTAP_SMOKE_PYTHON"}) {
      spec.env_unset.push_back(name);
    }
    spec.env_set.push_back("PYTHONPATH=" + pythonpath);
    spec.env_set.push_back(std::string("MEMTAP_SMOKE_PYTHON=") + kPython);
    if (!memtap.empty()) spec.env_set.push_back("MEMTAP=" + memtap);
    spec.env_set.push_back("MEMTAP_SMOKE_OUT=" + dir.path());
    spec.env_set.push_back("MEMTAP_CACHE_DIR=" + dir.file("cache"));
    spec.env_set.push_back("CUDA_HOME=" + kFakeTorch + "/cuda");
    // One stand-in GPU of 4 GiB: the loop's peak (1.3 GiB) fits, its out-of-memory request
    // (twice the device) does not.
    spec.env_set.push_back("MEMTAP_FAKE_CUDA_DEVICES=1");
    spec.env_set.push_back("MEMTAP_FAKE_CUDA_CAPACITY=" + std::to_string(4ll << 30));
    return run_process(spec, std::chrono::seconds(240));
  }

  TempDir dir;
};

// What the script printed for one allocator setting: from its "== ..." line to the next.
std::string run_output(const std::string& out, const std::string& conf) {
  const std::string marker = kRunMarker + std::string("'") + conf + "'";
  const size_t from = out.find(marker);
  if (from == std::string::npos) return "";
  const size_t to = out.find(kRunMarker, from + marker.size());
  return out.substr(from, to == std::string::npos ? std::string::npos : to - from);
}

TEST_F(GpuSmoke, PassesOnTheStandInGpuWithCudaMallocAndExpandableSegments) {
  const ProcessResult r = smoke(kFakeTorch);
  ASSERT_TRUE(r.exited && r.exit_code == 0) << describe(r) << "\n" << r.out << "\n" << r.err;
  EXPECT_NE(r.out.find("tests/gpu/smoke.sh: passed"), std::string::npos) << r.out;

  for (const std::string conf : {"", "expandable_segments:True"}) {
    SCOPED_TRACE("PYTORCH_CUDA_ALLOC_CONF=" + conf);
    const std::string out = run_output(r.out, conf);
    ASSERT_FALSE(out.empty()) << r.out;
    // check_recording.py compared the recording with torch's own figures, with the pool
    // watched through its trace tracker, and said so.
    const std::vector<std::string> lines = split_lines(out);
    EXPECT_EQ(std::count(lines.begin(), lines.end(), "ok"), 1) << out;
    EXPECT_NE(out.find("pool: tracker (None)"), std::string::npos) << out;
    EXPECT_NE(out.find("(0 without a name)"), std::string::npos) << out;

    // And the recording holds exactly what the allocator and the kernels did: each segment
    // (a cudaMalloc, or a page's cuMemMap) once, each kernel launch, the out-of-memory
    // request (the whole 8 GiB to cudaMalloc; one 20 MiB page to cuMemCreate), and every
    // block and pool state.
    Recording run;
    run.result = r;
    run.expected = parse_expectations(out);
    const std::string db = dir.file(conf.empty() ? "segments.db" : "expandable.db");
    read_recording_rows(db, &run);
    expect_recorded(run, {"deviceMalloc", "kernelLaunch", "deviceOom"});
    expect_pool_rows(run);
    const std::string api = conf.empty() ? "cudaMalloc" : "cuMemMap";
    size_t segments = 0;
    for (const Expected& e : run.expected) {
      segments += e.event == "deviceMalloc" && e.fields.at("api") == api;
    }
    EXPECT_GT(segments, 5u) << out;
    // The pool's widest gap worth naming is one the training met while asking for memory,
    // not the end, where every tensor is freed and the pool keeps its segments.
    std::ifstream report_file(
        dir.file(conf.empty() ? "segments.report.txt" : "expandable.report.txt"));
    const std::string report((std::istreambuf_iterator<char>(report_file)),
                             std::istreambuf_iterator<char>());
    const size_t device_0 = report.find(", device 0:");
    const size_t fragmentation = report.find("Fragmentation: worst at", device_0);
    ASSERT_NE(fragmentation, std::string::npos) << report;
    const std::string line =
        report.substr(fragmentation, report.find('\n', fragmentation) - fragmentation);
    EXPECT_EQ(line.find("allocated 0 B"), std::string::npos) << line;

    // Refused, the allocator gives its cache back and asks again, as PyTorch's does: two rows
    // of the same request, which the report counts as one OOM refused again.
    const std::multiset<std::string> ooms = expected_as(run, "deviceOom");
    ASSERT_EQ(ooms.size(), 2u) << out;
    EXPECT_EQ(*ooms.begin(), *ooms.rbegin());
    const std::string asked =
        conf.empty() ? "cudaMalloc asked 8.0 GiB" : "cuMemCreate asked 20.0 MiB";
    EXPECT_NE(ooms.begin()->find(conf.empty() ? " cudaMalloc dev0 8589934592"
                                              : " cuMemCreate dev0 20971520"),
              std::string::npos)
        << *ooms.begin();
    const std::string device_section = report.substr(device_0);
    size_t oom_lines = 0;
    for (const std::string& l : split_lines(device_section))
      oom_lines += l.find("    OOM at ") == 0;
    EXPECT_EQ(oom_lines, 1u) << report;
    const size_t oom_line = device_section.find("    OOM at ");
    ASSERT_NE(oom_line, std::string::npos) << report;
    const std::string oom =
        device_section.substr(oom_line, device_section.find('\n', oom_line) - oom_line);
    EXPECT_NE(oom.find(asked), std::string::npos) << oom;
    EXPECT_NE(oom.find(", refused again at +"), std::string::npos) << oom;
  }
}

// A GPU machine is lent for minutes: when one configuration fails its check, the script still
// checks the other, and says which failed. Here the first run leaves the pool alone
// (--no-torch-pool), so its check fails in the middle while its last step (the snapshot's
// reading) passes; a script that took a configuration's status from its last step, or stopped
// at the first failure, would not say this.
TEST_F(GpuSmoke, AConfigurationThatFailsItsCheckDoesNotStopTheOther) {
  const std::string wrapper = dir.file("memtap_no_pool_first");
  std::ofstream(wrapper) << "#!/bin/bash\n"
                            "if [ \"$1\" = run ] && [ -z \"$PYTORCH_CUDA_ALLOC_CONF\" ]; then\n"
                            "  shift; exec " MEMTAP_BUILD_DIR
                            "/bin/memtap run --no-torch-pool \"$@\"\n"
                            "fi\n"
                            "exec " MEMTAP_BUILD_DIR "/bin/memtap \"$@\"\n";
  std::filesystem::permissions(wrapper, std::filesystem::perms::owner_all);
  const ProcessResult r = smoke(kFakeTorch, wrapper);
  ASSERT_TRUE(r.exited) << describe(r);
  EXPECT_EQ(r.exit_code, 1) << r.out << "\n" << r.err;

  const std::string segments = run_output(r.out, "");
  EXPECT_NE(segments.find("FAIL: PyTorch's pool was not watched"), std::string::npos) << r.out;
  // The configuration stopped at its failed check: no report of it followed.
  EXPECT_EQ(segments.find("device 0:"), std::string::npos) << segments;
  const std::vector<std::string> expandable =
      split_lines(run_output(r.out, "expandable_segments:True"));
  EXPECT_EQ(std::count(expandable.begin(), expandable.end(), "ok"), 1) << r.out;
  EXPECT_NE(r.out.find("tests/gpu/smoke.sh: FAILED: segments (recordings in"), std::string::npos)
      << r.out;
  EXPECT_EQ(r.out.find("tests/gpu/smoke.sh: passed"), std::string::npos) << r.out;
}

// A machine whose PyTorch has no CUDA: one line says why, and the script passes.
TEST_F(GpuSmoke, SkipsWithAMessageWhereTorchHasNoGpu) {
  const std::string cpu_torch = dir.file("cpu_torch");
  std::filesystem::create_directories(cpu_torch + "/torch");
  std::ofstream(cpu_torch + "/torch/__init__.py")
      << "import types\ncuda = types.SimpleNamespace(is_available=lambda: False)\n";
  const ProcessResult r = smoke(cpu_torch);
  ASSERT_TRUE(r.exited && r.exit_code == 0) << describe(r) << "\n" << r.out << "\n" << r.err;
  EXPECT_EQ(split_lines(r.out),
            std::vector<std::string>{std::string("tests/gpu/smoke.sh: skipped: no CUDA GPU "
                                                 "visible to ") +
                                     kPython + "'s PyTorch"});
  EXPECT_FALSE(std::filesystem::exists(dir.file("segments.db")));
}

}  // namespace
}  // namespace memtap::e2e
