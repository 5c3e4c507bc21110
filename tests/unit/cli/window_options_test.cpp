// The window's command line as memtap checks it and memtap-gui reads it
// (monitor/cli/window_options.h): one declaration, so these hold for both.
#include "monitor/cli/window_options.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "monitor/model/mem_event.h"

namespace memtap {
namespace {

struct Parsed {
  int code = -1;
  WindowCommand command;
  std::string out, err;
};

Parsed parse(const std::vector<std::string>& args) {
  Parsed p;
  testing::internal::CaptureStdout();
  testing::internal::CaptureStderr();
  p.code = parse_window_command(args, &p.command);
  p.out = testing::internal::GetCapturedStdout();
  p.err = testing::internal::GetCapturedStderr();
  return p;
}

// A mistake is two lines: "memtap CMD: message", then the pointer to the help; exit 2.
void expect_mistake(const std::vector<std::string>& args, const std::string& command,
                    const std::string& message) {
  const Parsed p = parse(args);
  std::string joined;
  for (const std::string& a : args) joined += a + " ";
  EXPECT_EQ(p.code, 2) << joined;
  EXPECT_EQ(p.err, "memtap " + command + ": " + message + "\nsee memtap " + command + " --help\n")
      << joined;
  EXPECT_EQ(p.out, "") << joined;
}

TEST(WindowCommandLine, ARecordingWithTheWindowsOptions) {
  const Parsed p = parse({"run.db", "--size", "800x600", "--view", "pool", "--device", "1", "--at",
                          "12.5s", "--screenshot", "shot.png", "--stats"});
  ASSERT_EQ(p.code, -1) << p.err;
  const WindowCommand& c = p.command;
  EXPECT_EQ(c.mode, WindowMode::kReplay);
  EXPECT_EQ(c.file, "run.db");
  EXPECT_EQ(c.window.width, 800);
  EXPECT_EQ(c.window.height, 600);
  EXPECT_EQ(c.window.view, "pool");
  EXPECT_TRUE(c.window.device_given);
  EXPECT_EQ(c.window.device, 1);
  EXPECT_EQ(c.window.at_ns, 12'500'000'000);
  EXPECT_FALSE(c.window.at_peak);
  EXPECT_EQ(c.window.range_from_ns, -1) << "no --range: the whole session";
  EXPECT_EQ(c.window.screenshot, "shot.png");
  EXPECT_TRUE(c.window.stats);
}

// --range: the span every view shows, as two times since the start.
TEST(WindowCommandLine, ARangeIsTwoTimesSinceTheStart) {
  Parsed p = parse({"run.db", "--range", "1.5s..2s"});
  ASSERT_EQ(p.code, -1) << p.err;
  EXPECT_EQ(p.command.window.range_from_ns, 1'500'000'000);
  EXPECT_EQ(p.command.window.range_to_ns, 2'000'000'000);
  p = parse({"run.db", "--range", "0..450ms"});
  ASSERT_EQ(p.code, -1) << p.err;
  EXPECT_EQ(p.command.window.range_from_ns, 0);
  EXPECT_EQ(p.command.window.range_to_ns, 450'000'000);
  expect_mistake({"--run", "--range", "1s..2s", "--", "prog"}, "run", "unknown option '--range'");
}

TEST(WindowCommandLine, DefaultsAndTheHostDevice) {
  Parsed p = parse({"run.db"});
  ASSERT_EQ(p.code, -1) << p.err;
  EXPECT_EQ(p.command.window.width, 1600);
  EXPECT_EQ(p.command.window.height, 1000);
  EXPECT_EQ(p.command.window.view, "curves");
  EXPECT_FALSE(p.command.window.device_given);
  EXPECT_EQ(p.command.window.at_ns, -1);
  EXPECT_EQ(p.command.window.screenshot_after_ms, 3000);
  p = parse({"--device", "cpu", "--at", "peak", "run.db"});
  ASSERT_EQ(p.code, -1) << p.err;
  EXPECT_EQ(p.command.window.device, kHostDevice);
  EXPECT_TRUE(p.command.window.at_peak);
}

// --device takes a device as recordings name it: msMemScope's Device Id ("cpu", older files
// "host", "0") and the NPU profilers' "npu:1"; "N/A", no device, has no memory to show.
TEST(WindowCommandLine, TheDeviceAsARecordingNamesIt) {
  for (const auto& [text, device] : std::vector<std::pair<std::string, int32_t>>{
           {"cpu", kHostDevice}, {"host", kHostDevice}, {"0", 0}, {"3", 3}, {"npu:1", 1}}) {
    const Parsed p = parse({"--device", text, "run.db"});
    ASSERT_EQ(p.code, -1) << text << ": " << p.err;
    EXPECT_TRUE(p.command.window.device_given) << text;
    EXPECT_EQ(p.command.window.device, device) << text;
  }
  for (const std::string text : {"N/A", "-1", "gpu", "1.5", ""}) {
    expect_mistake({"a.db", "--device", text}, "monitor",
                   "--device '" + text + "': expected cpu or a device number (0, 1, ...)");
  }
}

TEST(WindowCommandLine, ALiveSessionOnAnEndpoint) {
  const Parsed p = parse({"--listen", "ipc:///tmp/m.sock", "-o", "live.db", "--compact", "--keys",
                          "keys", "--max-processes", "8", "--screenshot-after", "1500ms"});
  ASSERT_EQ(p.code, -1) << p.err;
  const WindowCommand& c = p.command;
  EXPECT_EQ(c.mode, WindowMode::kListen);
  EXPECT_EQ(c.listen, "ipc:///tmp/m.sock");
  EXPECT_EQ(c.out, "live.db");
  EXPECT_TRUE(c.compact);
  EXPECT_EQ(c.security.keys_dir, "keys");
  EXPECT_FALSE(c.security.insecure);
  EXPECT_EQ(c.limits.max_processes, 8u);
  EXPECT_EQ(c.window.screenshot_after_ms, 1500);
}

TEST(WindowCommandLine, MistakesAreSaidAsEveryCommandSaysThem) {
  expect_mistake({}, "monitor",
                 "no recording given (memtap monitor FILE, or memtap monitor --listen ENDPOINT)");
  expect_mistake({"a.db", "--listen", "ipc:///tmp/x"}, "monitor",
                 "either a recording to open or --listen, not both");
  expect_mistake({"a.db", "-o", "b.db"}, "monitor",
                 "-o goes with --listen (a recording is opened as it is)");
  expect_mistake({"a.db", "--insecure"}, "monitor",
                 "--insecure goes with --listen (a recording is opened as it is)");
  expect_mistake({"a.db", "--size", "10x10"}, "monitor",
                 "--size '10x10': expected WIDTHxHEIGHT, e.g. 1600x1000 (at least 320x240)");
  expect_mistake({"a.db", "--size", "x600"}, "monitor",
                 "--size 'x600': expected WIDTHxHEIGHT, e.g. 1600x1000 (at least 320x240)");
  expect_mistake({"a.db", "--view", "graph"}, "monitor",
                 "--view 'graph': expected one of curves, lifetime, pool, breakdown, flame, "
                 "blocks, events, findings");
  expect_mistake({"a.db", "--device", "gpu0"}, "monitor",
                 "--device 'gpu0': expected cpu or a device number (0, 1, ...)");
  expect_mistake({"a.db", "--at", "-1s"}, "monitor",
                 "--at '-1s': expected a time since the start (12.5s, 1500ms) or peak");
  for (const std::string range : {"2s..1s", "1s..1s", "1s", "1s..", "..2s", "a..b", "-1s..2s"}) {
    expect_mistake({"a.db", "--range", range}, "monitor",
                   "--range '" + range +
                       "': expected two times since the start, the first the earlier "
                       "(1.5s..2s, 200ms..450ms)");
  }
  expect_mistake({"a.db", "--screenshot-after", "soon"}, "monitor",
                 "--screenshot-after 'soon': expected a duration (3s, 1500ms)");
  expect_mistake({"a.db", "b.db"}, "monitor", "unexpected argument 'b.db'");
  expect_mistake({"a.db", "--zoom"}, "monitor", "unknown option '--zoom'");
  expect_mistake({"a.db", "--size"}, "monitor", "--size needs a value");
}

TEST(WindowCommandLine, HelpListsTheWindowsOptionsOnStdout) {
  const Parsed p = parse({"--help"});
  EXPECT_EQ(p.code, 0);
  EXPECT_EQ(p.err, "");
  EXPECT_EQ(p.out.rfind("usage: memtap monitor FILE", 0), 0u) << p.out;
  for (const char* option : {"--listen", "--keys", "--screenshot", "--size WxH", "--view NAME",
                             "--device cpu|N", "--at TIME", "--range FROM..TO", "--stats"}) {
    EXPECT_NE(p.out.find(option), std::string::npos) << option << "\n" << p.out;
  }
}

TEST(WindowCommandLine, ALiveRunTakesRunsOptionsAndLeavesTheProgramItsOwn) {
  const Parsed p = parse({"--run", "--stacks", "c", "--stack-min-size", "1MiB", "--size", "800x600",
                          "-o", "r.db", "--", "prog", "--size", "1", "-o"});
  ASSERT_EQ(p.code, -1) << p.err;
  const WindowCommand& c = p.command;
  EXPECT_EQ(c.mode, WindowMode::kRun);
  EXPECT_EQ(c.run.stacks, "c");
  EXPECT_EQ(c.run.stack_min_size, "1048576");
  EXPECT_EQ(c.run.out, "r.db");
  EXPECT_EQ(c.window.width, 800);
  EXPECT_EQ(c.run.command, (std::vector<std::string>{"prog", "--size", "1", "-o"}));
  // Without "--", the program's name ends the options all the same.
  const Parsed q = parse({"--run", "--torch-ops", "python3", "train.py", "--stats"});
  ASSERT_EQ(q.code, -1) << q.err;
  EXPECT_TRUE(q.command.run.torch_ops);
  EXPECT_FALSE(q.command.window.stats);
  EXPECT_EQ(q.command.run.command, (std::vector<std::string>{"python3", "train.py", "--stats"}));
}

TEST(WindowCommandLine, ALiveRunsMistakesAreRunsMistakes) {
  expect_mistake({"--run"}, "run", "no program given");
  expect_mistake({"--run", "--connect", "ipc:///tmp/x", "--", "prog"}, "run",
                 "--gui records here; it cannot be combined with --connect");
  expect_mistake({"--run", "--stacks", "rust", "--", "prog"}, "run",
                 "--stacks 'rust': expected python, c or python,c");
  // --at is a recording's: a live run has no instant to put the cursor on yet.
  expect_mistake({"--run", "--at", "peak", "--", "prog"}, "run", "unknown option '--at'");
}

}  // namespace
}  // namespace memtap
