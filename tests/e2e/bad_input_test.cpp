// Bad input gives a one-line error that names the culprit, a non-zero exit, and nothing
// on disk that could pass for a recording: a program that does not exist, an output that
// cannot be written, an endpoint that cannot be bound or is already taken, an unknown
// option.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>

#include "tests/e2e/e2e_support.h"
#include "tests/e2e/pattern_checks.h"
#include "tests/e2e/recording_checks.h"

namespace memtap::e2e {
namespace {

class BadInput : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(dir.ok()) << "cannot create a temporary directory"; }

  // memtap with these arguments, run in the temporary directory (where a default output
  // would go).
  ProcessResult memtap(std::vector<std::string> args) {
    args.insert(args.begin(), kMemtapBin);
    ProcessSpec spec = spec_in(dir, args);
    spec.cwd = dir.path();
    return run_process(spec, kProcessTimeout);
  }

  // Every file (not directory) under the temporary directory: databases, .partial files,
  // WAL files, sockets.
  std::vector<std::string> files_left() const {
    std::vector<std::string> files;
    for (const auto& e : std::filesystem::recursive_directory_iterator(dir.path()))
      if (!e.is_directory()) files.push_back(e.path().string());
    return files;
  }

  TempDir dir;
};

// The one line a failure prints, or a failure of the test if there are more (or none).
std::string one_line(const ProcessResult& r) {
  std::vector<std::string> lines = split_lines(r.err);
  EXPECT_EQ(lines.size(), 1u) << "expected a one-line error, got:\n" << r.err;
  return lines.empty() ? "" : lines[0];
}

TEST_F(BadInput, ProgramThatDoesNotExist) {
  for (bool with_output : {false, true}) {
    SCOPED_TRACE(with_output ? "with -o" : "default output");
    std::vector<std::string> args = {"run"};
    if (with_output) args.insert(args.end(), {"-o", dir.file("x.db")});
    args.insert(args.end(), {"--", "/nonexistent/prog", "arg"});
    ProcessResult r = memtap(args);
    ASSERT_TRUE(r.exited) << describe(r);
    EXPECT_EQ(r.exit_code, 127) << "the shell's code for a command not found";
    EXPECT_NE(one_line(r).find("/nonexistent/prog"), std::string::npos) << r.err;
    EXPECT_EQ(files_left(), std::vector<std::string>{});
  }
}

TEST_F(BadInput, OutputThatCannotBeWritten) {
  const std::string out = dir.file("missing/x.db");
  ProcessResult r = memtap({"run", "-o", out, "--", kExitCode, "0"});
  ASSERT_TRUE(r.exited) << describe(r);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(one_line(r).find(out), std::string::npos) << "the message names the path: " << r.err;
  EXPECT_EQ(r.out, "") << "the program is not run when its recording cannot be written";
  EXPECT_EQ(files_left(), std::vector<std::string>{});
}

// Secure by default: nothing listens on the network without authentication.
TEST_F(BadInput, RemoteEndpointIsRefused) {
  const std::string endpoint = "tcp://0.0.0.0:47391";
  ProcessResult r = memtap({"record", "--listen", endpoint, "-o", dir.file("r.db")});
  ASSERT_TRUE(r.exited) << describe(r);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(one_line(r).find(endpoint), std::string::npos)
      << "the message names the endpoint: " << r.err;
  EXPECT_NE(r.err.find("authentication"), std::string::npos) << r.err;
  EXPECT_NE(r.err.find("--keys DIR"), std::string::npos) << "says what to do: " << r.err;
  EXPECT_NE(r.err.find("--insecure"), std::string::npos) << r.err;
  EXPECT_EQ(files_left(), std::vector<std::string>{});
}

// The per-user socket directory ($XDG_RUNTIME_DIR/memtap) is used only when it is a
// directory of ours that nobody else can enter; a link planted there is never followed.
TEST_F(BadInput, SocketDirectoryThatIsNotPrivateIsRefused) {
  struct Case {
    const char* what;
    std::function<void(const std::string& path)> plant;
    const char* says;
  };
  const std::string elsewhere = dir.file("elsewhere");
  std::filesystem::create_directory(elsewhere);
  chmod(elsewhere.c_str(), 0700);
  const Case cases[] = {
      {"a symbolic link", [&](const std::string& p) { symlink(elsewhere.c_str(), p.c_str()); },
       "symbolic link"},
      {"mode 0755", [](const std::string& p) { mkdir(p.c_str(), 0700), chmod(p.c_str(), 0755); },
       "open to other users (mode 0755"},
      {"mode 0777", [](const std::string& p) { mkdir(p.c_str(), 0700), chmod(p.c_str(), 0777); },
       "open to other users (mode 0777"},
      {"a file", [](const std::string& p) { std::ofstream(p) << "x"; }, "not a directory"},
  };
  int i = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    const std::string runtime = dir.file("runtime" + std::to_string(i++));
    std::filesystem::create_directory(runtime);
    const std::string socket_dir = runtime + "/memtap";
    c.plant(socket_dir);
    ProcessSpec spec = spec_in(dir, {kMemtapBin, "record", "-o", dir.file("x.db")});
    for (std::string& kv : spec.env_set) {
      if (kv.rfind("XDG_RUNTIME_DIR=", 0) == 0) kv = "XDG_RUNTIME_DIR=" + runtime;
    }
    ProcessResult r = run_process(spec, kProcessTimeout);
    ASSERT_TRUE(r.exited) << describe(r);
    EXPECT_NE(r.exit_code, 0);
    EXPECT_NE(r.err.find(socket_dir), std::string::npos) << r.err;
    EXPECT_NE(r.err.find(c.says), std::string::npos) << r.err;
    EXPECT_TRUE(std::filesystem::is_empty(elsewhere)) << "nothing was put behind the link";
    EXPECT_FALSE(std::filesystem::exists(dir.file("x.db")));
  }
}

TEST_F(BadInput, EndpointThatCannotBeBound) {
  const std::string endpoint = "ipc://" + dir.file("no_such_dir/m.sock");
  ProcessResult r = memtap({"record", "--listen", endpoint, "-o", dir.file("r.db")});
  ASSERT_TRUE(r.exited) << describe(r);
  EXPECT_NE(r.exit_code, 0);
  EXPECT_NE(one_line(r).find(endpoint), std::string::npos)
      << "the message names the endpoint: " << r.err;
  EXPECT_EQ(files_left(), std::vector<std::string>{});
}

TEST_F(BadInput, EndpointAlreadyInUse) {
  const std::string endpoint = "ipc://" + dir.file("m.sock");
  const std::string first_db = dir.file("first.db");
  std::unique_ptr<Process> first = start_recorder(dir, endpoint, first_db);
  ASSERT_TRUE(first);

  ProcessResult second = memtap({"record", "--listen", endpoint, "-o", dir.file("second.db")});
  ASSERT_TRUE(second.exited) << describe(second);
  EXPECT_NE(second.exit_code, 0);
  const std::string line = one_line(second);
  EXPECT_NE(line.find("in use"), std::string::npos) << second.err;
  EXPECT_NE(line.find(endpoint), std::string::npos) << second.err;
  EXPECT_FALSE(std::filesystem::exists(dir.file("second.db")));
  EXPECT_FALSE(std::filesystem::exists(dir.file("second.db.partial")));

  // The first recorder still owns the endpoint and records what comes to it.
  EXPECT_TRUE(is_socket(dir.file("m.sock"))) << "the second recorder removed the first's socket";
  WallWindow window;
  window.begin_ns = realtime_now_ns();
  ProcessResult program =
      run_process(preloaded_spec(dir, {kAllocPattern}, endpoint), kProcessTimeout);
  window.end_ns = realtime_now_ns();
  ASSERT_TRUE(program.exited && program.exit_code == 0) << describe(program) << program.err;
  ProcessResult stopped = stop_recorder(*first);
  ASSERT_TRUE(stopped.exited) << describe(stopped);
  EXPECT_EQ(stopped.exit_code, 0) << stopped.err;

  PatternRun run;
  std::string error;
  ASSERT_TRUE(parse_pattern_output(program.out, &run, &error)) << error;
  run.expected_ppid = getpid();
  run.command_line = kAllocPattern;
  RecordingData rec;
  ASSERT_TRUE(load_recording(first_db, &rec, &error)) << error;
  expect_well_formed(rec, window);
  expect_alloc_pattern(rec, run);
}

TEST_F(BadInput, UnknownOptionIsAUsageError) {
  struct Case {
    std::vector<std::string> args;
    std::string named;  // what the message must mention
  };
  const Case cases[] = {
      {{"run", "--bogus", "-o", dir.file("x.db"), "--", kExitCode, "0"}, "--bogus"},
      {{"record", "--bogus", "-o", dir.file("x.db")}, "--bogus"},
      {{"frobnicate"}, "frobnicate"},
  };
  for (const Case& c : cases) {
    SCOPED_TRACE("memtap " + c.args[0] + " " + c.named);
    ProcessResult r = memtap(c.args);
    ASSERT_TRUE(r.exited) << describe(r);
    EXPECT_EQ(r.exit_code, 2) << "a usage error exits 2\n" << r.err;
    EXPECT_NE(r.err.find(c.named), std::string::npos) << r.err;
    EXPECT_EQ(r.out, "") << "nothing runs";
    EXPECT_EQ(files_left(), std::vector<std::string>{});
  }
}

}  // namespace
}  // namespace memtap::e2e
