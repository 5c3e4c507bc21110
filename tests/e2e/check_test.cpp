// `memtap check` as CI runs it: a real `memtap check` process on real recordings (a Python
// training loop under `memtap run`, a GPU program against the stand-in CUDA libraries, a
// recording that dropped events, msMemScope's sample files): exit 0 when every threshold
// holds, 1 with a line per violation that names who holds the memory, 2 when it cannot
// check.
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <fstream>
#include <string>
#include <vector>

#include "tests/e2e/e2e_support.h"

namespace memtap::e2e {
namespace {

constexpr const char* kPython = "/usr/bin/python3";
const std::string kCudaProgram = MEMTAP_TEST_CUDA_POOL;
const std::string kFakeCudaDir = MEMTAP_FAKE_CUDA_LIB_DIR;
const std::string kStreamer = MEMTAP_TEST_STREAMER;
const std::string kSamples = std::string(MEMTAP_SHARED_DATA_DIR) + "/msmemscope/";
const std::string kBaselineCsv = kSamples + "msmemscope__example_compare_baseline.csv";
const std::string kLeaksCsv = kSamples + "msmemscope__example_compare_leaks.csv";

// Eight steps: 6 MiB of activations freed each step, and a history that keeps argv[1] MiB
// a step. os._exit keeps the history live at the end, as a leak is when a job is killed.
constexpr const char* kTraining = R"(
import os, sys
import memtap
leak_mib = int(sys.argv[1])
history = []
for step in range(8):
    memtap.step()
    with memtap.owner("activations"):
        acts = bytearray(6 << 20)
    with memtap.owner("history"):
        history.append(bytearray(leak_mib << 20))
    del acts
os._exit(0)
)";

ProcessResult memtap(const TempDir& dir, std::vector<std::string> args) {
  args.insert(args.begin(), kMemtapBin);
  return run_process(spec_in(dir, args), kProcessTimeout);
}

std::string outcome(const ProcessResult& r) {
  return describe(r) + "\nstdout:\n" + r.out + "stderr:\n" + r.err;
}

// `memtap check FILE ARGS...`, expected to exit with `code`.
ProcessResult check(const TempDir& dir, const std::string& file, std::vector<std::string> args,
                    int code) {
  args.insert(args.begin(), {"check", file});
  ProcessResult r = memtap(dir, args);
  EXPECT_TRUE(r.exited && r.exit_code == code)
      << "expected exit " << code << " from check " << file << ":\n"
      << outcome(r);
  return r;
}

bool has(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

// The one line of `text` that contains `part` ("" when none or several do).
std::string line_with(const std::string& text, const std::string& part) {
  std::string found;
  for (const std::string& line : split_lines(text)) {
    if (!has(line, part)) continue;
    if (!found.empty()) return "";
    found = line;
  }
  return found;
}

// The training loop recorded by `memtap run`, keeping `leak_mib` a step.
std::string record_training(const TempDir& dir, const std::string& name, int leak_mib) {
  const std::string script = dir.file("train.py");
  std::ofstream(script) << kTraining;
  const std::string db = dir.file(name);
  ProcessResult run =
      memtap(dir, {"run", "-o", db, "--", kPython, script, std::to_string(leak_mib)});
  EXPECT_TRUE(run.exited && run.exit_code == 0) << outcome(run);
  return db;
}

class Check : public ::testing::Test {
 protected:
  void SetUp() override {
    if (access(kPython, X_OK) != 0) GTEST_SKIP() << kPython << " is not installed";
    ASSERT_TRUE(dir.ok());
  }
  TempDir dir;
};

TEST_F(Check, PeakHoldsOrNamesTheOwnerThatHoldsMostOfIt) {
  const std::string db = record_training(dir, "train.db", 2);
  ProcessResult ok = check(dir, db, {"--max-peak", "1GiB"}, 0);
  EXPECT_EQ(ok.out, "memtap check: " + db + ": all 1 check passed\n");
  EXPECT_EQ(ok.err, "");
  // 16 MiB of history and 6 MiB of activations at the peak.
  ProcessResult over = check(dir, db, {"--max-peak", "20MiB"}, 1);
  ASSERT_EQ(split_lines(over.out).size(), 1u) << over.out;
  const std::string line = split_lines(over.out)[0];
  EXPECT_TRUE(has(line, "memtap check: " + db + ": pid ")) << line;
  EXPECT_TRUE(has(line, ", host: peak ")) << line;
  EXPECT_TRUE(has(line,
                  "is above --max-peak 20.0 MiB; largest at the peak: owner history (16.0 "
                  "MiB"))
      << line;
  // Plain bytes, as --stack-min-size takes them.
  check(dir, db, {"--max-peak", std::to_string(20 << 20)}, 1);
  // A figure as a report prints it (a fraction of a larger unit, a space before the unit).
  check(dir, db, {"--max-peak", "0.97GiB"}, 0);
  check(dir, db, {"--max-peak", "19.99 MiB"}, 1);
}

TEST_F(Check, LeakPerStepNamesTheSuspect) {
  const std::string db = record_training(dir, "train.db", 2);
  check(dir, db, {"--max-leak-per-step", "3MiB"}, 0);
  ProcessResult over = check(dir, db, {"--max-leak-per-step", "1MiB"}, 1);
  EXPECT_TRUE(has(line_with(over.out, "--max-leak-per-step"),
                  "over 8 steps, above --max-leak-per-step 1.0 MiB; leak suspect: owner history, "
                  "+2.0 MiB per step since step 1"))
      << over.out;
}

TEST_F(Check, GrowthNamesWhatIsLiveAtTheEnd) {
  const std::string db = record_training(dir, "train.db", 2);
  check(dir, db, {"--max-growth", "64MiB"}, 0);
  ProcessResult over = check(dir, db, {"--max-growth", "8MiB"}, 1);
  EXPECT_TRUE(has(line_with(over.out, "--max-growth"),
                  "above --max-growth 8.0 MiB; largest live at the end: owner history (16.0 MiB"))
      << over.out;
  // Without the leak, what stays is the interpreter's own few MiB.
  const std::string clean = record_training(dir, "clean.db", 0);
  check(dir, clean, {"--max-growth", "8MiB"}, 0);
}

TEST_F(Check, FragmentationAndOomOnATrainingRun) {
  const std::string db = record_training(dir, "train.db", 2);
  // Python's arenas are anonymous mappings beside the heap: some of Reserved is never
  // allocated, and never all of it.
  ProcessResult over = check(dir, db, {"--max-fragmentation", "1%"}, 1);
  EXPECT_TRUE(has(line_with(over.out, "fragmentation"), "is above --max-fragmentation 1%"))
      << over.out;
  check(dir, db, {"--max-fragmentation", "100"}, 0);
  ProcessResult all = check(dir, db,
                            {"--max-peak", "1GiB", "--max-leak-per-step", "3MiB", "--max-growth",
                             "64MiB", "--max-fragmentation", "100", "--no-oom"},
                            0);
  EXPECT_EQ(all.out, "memtap check: " + db + ": all 5 checks passed\n");
}

TEST_F(Check, AgainstABaselineRunNamesTheOwnerThatGrew) {
  const std::string base = record_training(dir, "base.db", 0);
  const std::string now = record_training(dir, "now.db", 2);
  check(dir, now, {"--baseline", base, "--max-peak-increase", "1000%"}, 0);
  // The peak went from about 7 MiB to 23 MiB.
  ProcessResult over = check(dir, now, {"--baseline", base, "--max-peak-increase", "50"}, 1);
  const std::string line = line_with(over.out, "--max-peak-increase");
  EXPECT_TRUE(has(line, "memtap check: " + now + ": process 1 (pid ")) << over.out;
  EXPECT_TRUE(has(line, "host: peak ")) << line;
  EXPECT_TRUE(has(line, "above the baseline's")) << line;
  EXPECT_TRUE(has(line,
                  "(--max-peak-increase 50%); grew most at the peak: owner history (0 B -> "
                  "16.0 MiB)"))
      << line;
}

TEST_F(Check, MsMemScopeSamplesAgainstEachOther) {
  // The leaking run's peak is 19.8 MiB against the baseline's 16.0 MiB: 23.8% more, from
  // the tensors aten._to_copy made (the files name their operators only as OP_LAUNCH ranges,
  // and a block is named after the operator running on its thread).
  check(dir, kLeaksCsv, {"--baseline", kBaselineCsv, "--max-peak-increase", "25"}, 0);
  ProcessResult over =
      check(dir, kLeaksCsv, {"--baseline", kBaselineCsv, "--max-peak-increase", "20"}, 1);
  EXPECT_EQ(over.out,
            "memtap check: " + kLeaksCsv +
                ": process 1 (pid 3101864 / pid 3290097), device 0: peak 19.8 MiB is 23.8% above "
                "the baseline's 16.0 MiB (--max-peak-increase 20%); grew most at the peak: "
                "operator torch._ops.aten._to_copy.default (0 B -> 3.8 MiB)\n");
  // The leak stays: 7.6 MiB live at the end, against the baseline's 3 KiB.
  check(dir, kBaselineCsv, {"--max-growth", "1MiB"}, 0);
  ProcessResult grew = check(dir, kLeaksCsv, {"--max-growth", "1MiB"}, 1);
  EXPECT_TRUE(has(grew.out,
                  "device 0: grew 7.6 MiB (live at the end minus at the start), above "
                  "--max-growth 1.0 MiB; largest live at the end: operator "
                  "torch._ops.aten._to_copy.default (7.6 MiB, 100% of what is live)"))
      << grew.out;
  // Reserved 38.0 MiB, allocated 3.8 MiB at the worst moment: 90% unused.
  check(dir, kLeaksCsv, {"--max-fragmentation", "90.1"}, 0);
  check(dir, kLeaksCsv, {"--max-fragmentation", "89.9"}, 1);
  check(dir, kLeaksCsv, {"--max-peak", "20MiB", "--device", "0"}, 0);
  check(dir, kLeaksCsv, {"--max-peak", "19MiB", "--device", "0"}, 1);
}

TEST_F(Check, AThresholdTheRecordingCannotAnswerWarnsAndFailsWithStrict) {
  // msMemScope's samples have no step markers: a leak per step cannot be measured.
  ProcessResult warned = check(dir, kLeaksCsv, {"--max-leak-per-step", "1MiB"}, 0);
  EXPECT_TRUE(has(warned.err, "memtap check: " + kLeaksCsv +
                                  ": warning: --max-leak-per-step not checked: no step markers"))
      << warned.err;
  ProcessResult strict = check(dir, kLeaksCsv, {"--max-leak-per-step", "1MiB", "--strict"}, 1);
  EXPECT_TRUE(has(strict.out, "--max-leak-per-step not checked: no step markers")) << strict.out;
  EXPECT_TRUE(has(strict.out, "(--strict)")) << strict.out;
}

TEST_F(Check, AnOomOnAGpuNamesTheRequestAndTheLargestBlocksOwner) {
  const std::string db = dir.file("cuda.db");
  ProcessSpec spec = spec_in(dir, {kMemtapBin, "run", "-o", db, "--", kCudaProgram, "caching"});
  spec.env_set.push_back("LD_LIBRARY_PATH=" + kFakeCudaDir);
  spec.env_set.push_back("MEMTAP_FAKE_CUDA_DEVICES=1");
  spec.env_set.push_back("MEMTAP_FAKE_CUDA_CAPACITY=" + std::to_string(256 << 20));
  ProcessResult run = run_process(spec, kProcessTimeout);
  ASSERT_TRUE(run.exited && run.exit_code == 0) << outcome(run);

  ProcessResult oom = check(dir, db, {"--no-oom"}, 1);
  // The pool's segment request failed with 15 blocks live, the largest (5 MiB) allocated
  // under the owner "activations".
  const std::string line = line_with(oom.out, "--no-oom");
  EXPECT_TRUE(has(line, ", device 0: 1 OOM at +")) << oom.out;
  EXPECT_TRUE(has(line, ": cudaMalloc of ")) << line;
  EXPECT_TRUE(has(line, " failed; largest live block then: 5.0 MiB, owner activations")) << line;
  // --device limits every threshold: the host had no OOM.
  check(dir, db, {"--no-oom", "--device", "cpu"}, 0);
  check(dir, db, {"--no-oom", "--device", "0"}, 1);
  ProcessResult absent = check(dir, db, {"--no-oom", "--device", "3"}, 2);
  EXPECT_TRUE(has(absent.err, "memtap check: " + db +
                                  ": no device 3 in the recording (its "
                                  "devices: cpu, 0)"))
      << absent.err;
}

// A recording whose agent dropped events (its monitor stopped while the program allocated
// past the agent's 1 MiB buffer): the checks pass with a warning, and fail with --strict.
TEST_F(Check, DroppedEventsWarnAndFailWithStrict) {
  const std::string endpoint = "ipc://" + dir.file("m.sock");
  const std::string db = dir.file("dropped.db");
  std::unique_ptr<Process> recorder = start_recorder(dir, endpoint, db);
  ASSERT_TRUE(recorder);
  ProcessSpec spec = preloaded_spec(dir, {kStreamer}, endpoint);
  spec.pipe_stdin = true;
  spec.env_set.push_back("MEMTAP_BUFFER_MB=1");
  std::string error;
  std::unique_ptr<Process> program = Process::start(spec, &error);
  ASSERT_TRUE(program) << error;
  auto ask = [&](const std::string& command, const std::string& out_after) {
    ASSERT_TRUE(program->write_stdin(command));
    ASSERT_TRUE(program->wait_for_output(
        [&](const std::string& out, const std::string&) { return out == out_after; },
        kProcessTimeout))
        << program->out() << program->err();
  };
  ask("alloc 1 100\n", "ok 100\n");
  ASSERT_TRUE(recorder->signal(SIGSTOP));
  ask("churn 1000000 64\n", "ok 100\nok 100\n");  // 16 MiB of records
  ASSERT_TRUE(recorder->signal(SIGCONT));
  program->close_stdin();
  ProcessResult ended = program->wait(kProcessTimeout);
  ASSERT_TRUE(ended.exited && ended.exit_code == 0) << outcome(ended);
  ProcessResult stopped = stop_recorder(*recorder);
  ASSERT_TRUE(stopped.exited) << outcome(stopped);

  ProcessResult warned = check(dir, db, {"--max-peak", "1GiB"}, 0);
  EXPECT_TRUE(has(warned.out, "all 1 check passed")) << warned.out;
  const std::string warning = line_with(warned.err, "events dropped by the agent");
  EXPECT_TRUE(has(warning, "memtap check: " + db + ": warning: pid ")) << warned.err;
  EXPECT_TRUE(has(warning, "--strict makes this a failure")) << warning;
  ProcessResult strict = check(dir, db, {"--max-peak", "1GiB", "--strict"}, 1);
  EXPECT_TRUE(has(line_with(strict.out, "events dropped by the agent"), "(--strict)"))
      << strict.out;
  EXPECT_FALSE(has(strict.out, "passed")) << strict.out;
}

TEST_F(Check, UsageErrorsExitTwoWithOneLineSayingWhat) {
  const std::string db = kLeaksCsv;
  const std::vector<std::pair<std::vector<std::string>, std::string>> cases = {
      {{"check"}, "memtap check: no recording given"},
      {{"check", db}, "memtap check: no threshold given: nothing to check"},
      {{"check", db, "--max-peak"}, "memtap check: --max-peak needs a value"},
      {{"check", db, "--max-peak", "lots"},
       "memtap check: --max-peak 'lots' is not a size (bytes, or a number with KiB, MiB or GiB: "
       "512MiB)"},
      {{"check", db, "--max-leak-per-step", "-1MiB"},
       "memtap check: --max-leak-per-step '-1MiB' is not a size"},
      {{"check", db, "--max-growth", "1.5"}, "memtap check: --max-growth '1.5' is not a size"},
      {{"check", db, "--max-fragmentation", "ten"},
       "memtap check: --max-fragmentation 'ten' is not a percentage (a number, with or without "
       "%: 10%)"},
      {{"check", db, "--max-peak-increase", "5%%"},
       "memtap check: --max-peak-increase '5%%' is not a percentage"},
      {{"check", db, "--max-peak-increase", "5"},
       "memtap check: --max-peak-increase needs --baseline BASE"},
      {{"check", db, "--baseline", db, "--no-oom"},
       "memtap check: --baseline needs --max-peak-increase PCT"},
      {{"check", db, "--device", "gpu", "--no-oom"},
       "memtap check: --device 'gpu': expected cpu or a device number (0, 1, ...)"},
      {{"check", db, "--max-peak", "1GiB", "--max-peak", "2GiB"},
       "memtap check: --max-peak given twice"},
      {{"check", db, db, "--no-oom"}, "memtap check: one recording at a time"},
      {{"check", db, "--max-peek", "1GiB"}, "memtap check: unknown option '--max-peek'"},
      {{"check", dir.file("absent.db"), "--no-oom"}, "memtap check: " + dir.file("absent.db")},
  };
  for (const auto& [args, message] : cases) {
    ProcessResult r = memtap(dir, args);
    EXPECT_TRUE(r.exited && r.exit_code == 2) << testing::PrintToString(args) << outcome(r);
    EXPECT_EQ(r.out, "") << testing::PrintToString(args);
    // A mistake on the command line points to the help; a file it cannot read does not.
    const bool usage = args.size() < 2 || args[1] != dir.file("absent.db");
    ASSERT_EQ(split_lines(r.err).size(), usage ? 2u : 1u) << testing::PrintToString(args) << r.err;
    EXPECT_EQ(r.err.rfind(message, 0), 0u) << testing::PrintToString(args) << "\n" << r.err;
    if (usage) {
      EXPECT_EQ(split_lines(r.err)[1], "see memtap check --help");
    }
  }
}

}  // namespace
}  // namespace memtap::e2e
