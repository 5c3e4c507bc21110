// The command line explains itself: `memtap CMD --help` for every command, `memtap --help`
// listing them, and one wording for every mistake (command_line.h), with real memtap
// processes.
#include <gtest/gtest.h>

#include <filesystem>
#include <map>

#include "tests/e2e/e2e_support.h"

namespace memtap::e2e {
namespace {

// Every command and the options its help must show.
const std::map<std::string, std::vector<std::string>>& commands() {
  static const std::map<std::string, std::vector<std::string>> options = {
      {"run",
       {"-o", "--compact", "--connect", "--keys", "--stacks", "--stack-min-size", "--torch-ops",
        "--no-torch-pool", "--max-processes", "--gui", "--screenshot", "--screenshot-after",
        "--size", "--view", "--device", "--stats"}},
      {"record", {"--listen", "-o", "--compact", "--keys", "--insecure", "--max-processes"}},
      {"report",
       {"--json", "--low-memory", "--top", "--lazy-used-ms", "--delayed-free-ms", "--long-idle-ms",
        "--capacity-mb"}},
      {"replay", {"--speed", "--json", "--low-memory", "--top", "--capacity-mb"}},
      {"diff", {"--json", "--top", "--low-memory", "--capacity-mb"}},
      {"check",
       {"--max-peak", "--max-leak-per-step", "--max-growth", "--max-fragmentation",
        "--max-peak-increase", "--no-oom", "--baseline", "--device", "--strict", "--low-memory"}},
      {"monitor",
       {"--listen", "-o", "--compact", "--keys", "--insecure", "--max-processes", "--screenshot",
        "--size", "--view", "--at", "--device", "--stats"}},
      {"export", {"--format", "--pid", "-o"}},
      {"import", {"-o"}},
      {"recover", {"-o"}},
      {"keygen", {}},
  };
  return options;
}

ProcessResult memtap(const TempDir& dir, std::vector<std::string> args) {
  args.insert(args.begin(), kMemtapBin);
  ProcessSpec spec = spec_in(dir, args);
  // `memtap monitor --help` must not need the window.
  spec.env_unset.insert(spec.env_unset.end(), {"DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"});
  return run_process(spec, kProcessTimeout);
}

bool shows(const std::string& help, const std::string& option) {
  // An option is shown at the start of its line, or after the short form ("-l,--listen").
  return help.find("\n  " + option + " ") != std::string::npos ||
         help.find("\n  " + option + ",") != std::string::npos ||
         help.find("," + option + " ") != std::string::npos;
}

TEST(CommandLine, EveryCommandExplainsItselfOnStdout) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  for (const auto& [command, options] : commands()) {
    SCOPED_TRACE("memtap " + command);
    for (const std::vector<std::string>& asked : std::vector<std::vector<std::string>>{
             {command, "--help"}, {command, "-h"}, {"help", command}}) {
      const ProcessResult r = memtap(dir, asked);
      ASSERT_TRUE(r.exited && r.exit_code == 0) << describe(r) << r.err;
      EXPECT_EQ(r.err, "");
      EXPECT_EQ(r.out.rfind("usage: memtap " + command, 0), 0u) << r.out;
      EXPECT_TRUE(shows(r.out, "-h,--help")) << r.out;
      for (const std::string& option : options) EXPECT_TRUE(shows(r.out, option)) << option;
    }
  }
}

TEST(CommandLine, HelpListsEveryCommandAndVersionSaysWhich) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const ProcessResult r = memtap(dir, {"--help"});
  ASSERT_TRUE(r.exited && r.exit_code == 0) << describe(r);
  for (const auto& [command, options] : commands()) {
    EXPECT_NE(r.out.find("\n  " + command + " "), std::string::npos) << command << "\n" << r.out;
  }
  EXPECT_NE(r.out.find("memtap <command> --help"), std::string::npos) << r.out;
  const ProcessResult version = memtap(dir, {"--version"});
  ASSERT_TRUE(version.exited && version.exit_code == 0) << describe(version);
  EXPECT_EQ(version.out.rfind("memtap ", 0), 0u) << version.out;
  EXPECT_EQ(split_lines(version.out).size(), 1u) << version.out;
}

TEST(CommandLine, MistakesAreOneLineAndThePointerToHelp) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string db = dir.file("x.db");
  const struct {
    std::vector<std::string> args;
    std::string said;  // the first line, after "memtap CMD: "
  } cases[] = {
      {{"report", "--bogus", db}, "unknown option '--bogus'"},
      {{"report", db, "--top"}, "--top needs a value"},
      {{"report", db, "--top", "many"}, "--top: expected a number of entries above 0, got 'many'"},
      {{"report", db, "--top", "0"}, "--top: expected a number of entries above 0, got '0'"},
      {{"report", db, "--lazy-used-ms", "soon"},
       "--lazy-used-ms: expected milliseconds, got 'soon'"},
      {{"report", db, "--long-idle-ms", "1e300"},
       "--long-idle-ms: expected milliseconds, got '1e300'"},
      {{"report", db, "--capacity-mb", "1e300"}, "--capacity-mb: expected megabytes, got '1e300'"},
      {{"report"}, "no recording given"},
      {{"replay", db, "--speed", "infx"},
       "--speed: expected max, 1x, 10x or <factor>x, got 'infx'"},
      {{"replay", db, "--speed", "fast"},
       "--speed: expected max, 1x, 10x or <factor>x, got 'fast'"},
      {{"diff", db, db, "--bogus"}, "unknown option '--bogus'"},
      {{"run", "--stack-min-size"}, "--stack-min-size needs a value"},
      {{"run", "--bogus", "--", kExitCode, "0"}, "unknown option '--bogus'"},
      {{"run", "-o", db}, "no program given"},
      {{"record", "--listen"}, "--listen needs a value"},
      {{"record", "-o", db, "stray"}, "unexpected argument 'stray'"},
      {{"export", db, "--pid"}, "--pid needs a value"},
      {{"import", "-x"}, "unknown option '-x'"},
      {{"recover"}, "no file given"},
      {{"check", db, "--max-peak", "lots"},
       "--max-peak 'lots' is not a size (bytes, or a number with KiB, MiB or GiB: 512MiB)"},
      {{"keygen"}, "expected one directory"},
      {{"monitor", db, "--view", "graph"},
       "--view 'graph': expected one of curves, lifetime, "
       "pool, breakdown, flame, blocks, events, findings"},
  };
  for (const auto& c : cases) {
    const std::string& command = c.args[0];
    SCOPED_TRACE(testing::PrintToString(c.args));
    const ProcessResult r = memtap(dir, c.args);
    ASSERT_TRUE(r.exited) << describe(r);
    EXPECT_EQ(r.exit_code, 2) << r.err;
    EXPECT_EQ(r.out, "");
    EXPECT_EQ(split_lines(r.err), (std::vector<std::string>{"memtap " + command + ": " + c.said,
                                                            "see memtap " + command + " --help"}));
  }
  const ProcessResult unknown = memtap(dir, {"frobnicate"});
  EXPECT_TRUE(unknown.exited && unknown.exit_code == 2) << describe(unknown);
  EXPECT_EQ(
      split_lines(unknown.err),
      (std::vector<std::string>{"memtap: unknown command 'frobnicate'", "see memtap --help"}));
  EXPECT_FALSE(std::filesystem::exists(db)) << "no mistake writes anything";
}

// Everything after the program's name is the program's, --help included, with or without "--".
TEST(CommandLine, RunLeavesTheProgramItsOwnOptions) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string echo = R"(printf '%s\n' "$@")";
  for (const bool dashes : {true, false}) {
    SCOPED_TRACE(dashes ? "with --" : "without --");
    const std::string db = dir.file(dashes ? "dashes.db" : "plain.db");
    std::vector<std::string> args = {"run", "-o", db};
    if (dashes) args.push_back("--");
    args.insert(args.end(), {"/bin/sh", "-c", echo, "sh", "--help", "-o", "elsewhere", "--", "-h"});
    const ProcessResult r = memtap(dir, args);
    ASSERT_TRUE(r.exited && r.exit_code == 0) << describe(r) << r.err;
    EXPECT_EQ(r.out, "--help\n-o\nelsewhere\n--\n-h\n");
    EXPECT_TRUE(std::filesystem::exists(db)) << "-o before the program is memtap's";
  }
}

}  // namespace
}  // namespace memtap::e2e
