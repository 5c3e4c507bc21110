// The window as a user starts it: `memtap monitor FILE --screenshot` for every view,
// `memtap run --gui` with and without a display, `memtap monitor --listen` that several
// processes stream into, and the headless memtap linking no Qt.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>

#include "tests/e2e/db_query.h"
#include "tests/e2e/e2e_support.h"

namespace memtap::e2e {
namespace {

const std::string kGuiBin = MEMTAP_GUI_BIN;

class Window : public ::testing::Test {
 protected:
  void SetUp() override { ASSERT_TRUE(dir.ok()) << "cannot create a temporary directory"; }
  TempDir dir;
};

// The width and height a PNG file says it has; {0, 0} when it is no PNG.
std::pair<uint32_t, uint32_t> png_size(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  unsigned char h[24] = {};
  if (!f.read(reinterpret_cast<char*>(h), sizeof h)) return {0, 0};
  static const unsigned char kSignature[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  if (!std::equal(kSignature, kSignature + 8, h) || std::string(h + 12, h + 16) != "IHDR") {
    return {0, 0};
  }
  auto be32 = [&](int at) {
    return uint32_t(h[at]) << 24 | uint32_t(h[at + 1]) << 16 | uint32_t(h[at + 2]) << 8 |
           uint32_t(h[at + 3]);
  };
  return {be32(16), be32(20)};
}

// A short recording of the allocation pattern, made by memtap run.
std::string record_pattern(const TempDir& dir) {
  const std::string db = dir.file("pattern.db");
  const ProcessResult r = run_process(
      spec_in(dir, {kMemtapBin, "run", "-o", db, "--", kAllocPattern}), kProcessTimeout);
  EXPECT_TRUE(r.exited && r.exit_code == 0) << describe(r) << r.err;
  return db;
}

TEST_F(Window, HeadlessMemtapLinksNoQt) {
  const ProcessResult r = run_process(spec_in(dir, {"/usr/bin/readelf", "-d", kMemtapBin}));
  ASSERT_TRUE(r.exited && r.exit_code == 0) << describe(r) << r.err;
  EXPECT_NE(r.out.find("(NEEDED)"), std::string::npos) << r.out;
  EXPECT_EQ(r.out.find("Qt"), std::string::npos) << "memtap needs Qt:\n" << r.out;
  const ProcessResult gui = run_process(spec_in(dir, {"/usr/bin/readelf", "-d", kGuiBin}));
  EXPECT_NE(gui.out.find("libQt6Charts"), std::string::npos) << "memtap-gui is the window";
}

TEST_F(Window, ScreenshotOfEveryViewOfARecording) {
  const std::string db = record_pattern(dir);
  for (const char* view :
       {"curves", "lifetime", "pool", "breakdown", "flame", "blocks", "events", "findings"}) {
    const std::string png = dir.file(std::string(view) + ".png");
    ProcessSpec spec = spec_in(dir, {kMemtapBin, "monitor", db, "--screenshot", png, "--size",
                                     "1200x800", "--view", view, "--at", "peak"});
    spec.env_unset = {"DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"};
    const ProcessResult r = run_process(spec, kProcessTimeout);
    ASSERT_TRUE(r.exited && r.exit_code == 0) << view << ": " << describe(r) << r.err;
    EXPECT_EQ(png_size(png), std::make_pair(1200u, 800u)) << view;
    EXPECT_GT(std::filesystem::file_size(png), 10000u) << view << ": a picture of a window";
  }
}

TEST_F(Window, MonitorExplainsItselfAndItsErrors) {
  ProcessResult help = run_process(spec_in(dir, {kMemtapBin, "monitor", "--help"}));
  EXPECT_TRUE(help.exited && help.exit_code == 0) << describe(help) << help.err;
  EXPECT_NE(help.out.find("usage: memtap monitor FILE"), std::string::npos) << help.out;

  ProcessSpec missing = spec_in(
      dir, {kMemtapBin, "monitor", dir.file("nothing.db"), "--screenshot", dir.file("x.png")});
  ProcessResult r = run_process(missing);
  EXPECT_TRUE(r.exited && r.exit_code == 2) << describe(r);
  EXPECT_NE(r.err.find(dir.file("nothing.db") + ": no such file"), std::string::npos) << r.err;
  EXPECT_EQ(std::count(r.err.begin(), r.err.end(), '\n'), 1) << "one line:\n" << r.err;

  ProcessSpec bad_view =
      spec_in(dir, {kMemtapBin, "monitor", "x.db", "--view", "graph", "--screenshot", "x.png"});
  r = run_process(bad_view);
  EXPECT_TRUE(r.exited && r.exit_code == 2) << describe(r);
  EXPECT_NE(r.err.find("--view 'graph': expected one of curves,"), std::string::npos) << r.err;
}

// memtap-gui reads the command line memtap checked with the same declaration
// (monitor/cli/window_options.h): the same help, the same words for a mistake.
TEST_F(Window, TheWindowReadsTheCommandLineMemtapChecked) {
  ProcessResult help = run_process(spec_in(dir, {kGuiBin, "--help"}));
  EXPECT_TRUE(help.exited && help.exit_code == 0) << describe(help) << help.err;
  const ProcessResult memtap_help = run_process(spec_in(dir, {kMemtapBin, "monitor", "--help"}));
  EXPECT_EQ(help.out, memtap_help.out);
  help = run_process(spec_in(dir, {kGuiBin, "--run", "--help"}));
  EXPECT_EQ(help.out.rfind("usage: memtap run [options]", 0), 0u) << help.out;
  EXPECT_NE(help.out.find("--stack-min-size SIZE"), std::string::npos) << help.out;
  EXPECT_NE(help.out.find("--screenshot-after DURATION"), std::string::npos) << help.out;

  for (const std::vector<std::string>& args : std::vector<std::vector<std::string>>{
           {"x.db", "--size", "10x10"}, {"--run", "--stacks", "rust", "--", "true"}}) {
    const bool run = args[0] == "--run";
    std::vector<std::string> gui_args = {kGuiBin}, memtap_args = {kMemtapBin};
    gui_args.insert(gui_args.end(), args.begin(), args.end());
    memtap_args.push_back(run ? "run" : "monitor");
    if (run) memtap_args.push_back("--gui");
    memtap_args.insert(memtap_args.end(), args.begin() + (run ? 1 : 0), args.end());
    const ProcessResult gui = run_process(spec_in(dir, gui_args));
    const ProcessResult memtap = run_process(spec_in(dir, memtap_args));
    EXPECT_TRUE(gui.exited && gui.exit_code == 2) << describe(gui) << gui.err;
    EXPECT_TRUE(memtap.exited && memtap.exit_code == 2) << describe(memtap) << memtap.err;
    EXPECT_EQ(gui.err, memtap.err);
    EXPECT_EQ(split_lines(gui.err).size(), 2u) << gui.err;
    EXPECT_EQ(split_lines(gui.err).back(),
              std::string("see memtap ") + (run ? "run" : "monitor") + " --help")
        << gui.err;
  }
}

TEST_F(Window, MonitorSaysWhyWhenTheWindowIsNotThere) {
  // memtap alone, without memtap-gui beside it (a headless install).
  const std::string lone = dir.file("memtap");
  std::filesystem::copy_file(kMemtapBin, lone);
  std::filesystem::permissions(lone, std::filesystem::perms::owner_all);
  const ProcessResult r =
      run_process(spec_in(dir, {lone, "monitor", "x.db", "--screenshot", "x.png"}));
  EXPECT_TRUE(r.exited && r.exit_code == 2) << describe(r);
  EXPECT_NE(r.err.find("the window (memtap-gui) is not beside memtap in " + dir.path()),
            std::string::npos)
      << r.err;
}

TEST_F(Window, RunGuiWithoutADisplayRecordsHeadless) {
  const std::string db = dir.file("headless.db");
  ProcessSpec spec = spec_in(dir, {kMemtapBin, "run", "--gui", "-o", db, "--", kExitCode, "3"});
  spec.env_unset = {"DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"};
  const ProcessResult r = run_process(spec, kProcessTimeout);
  EXPECT_TRUE(r.exited && r.exit_code == 3) << describe(r) << r.err;
  EXPECT_NE(r.err.find("memtap run: no display (DISPLAY and WAYLAND_DISPLAY are unset): recording "
                       "without the window\n"),
            std::string::npos)
      << r.err;
  EXPECT_TRUE(std::filesystem::exists(db)) << r.err;
}

TEST_F(Window, RunGuiScreenshotDuringTheRunThenTheRunGoesOn) {
  const std::string db = dir.file("live.db");
  const std::string png = dir.file("live.png");
  // A program that runs about 1.5 s and allocates as it goes, then exits with 5.
  ProcessSpec spec =
      spec_in(dir, {kMemtapBin, "run", "--gui", "--screenshot", png, "--screenshot-after", "500ms",
                    "--size", "1000x700", "-o", db, "--", "/bin/sh", "-c",
                    "for i in 1 2 3 4 5 6 7 8 9 10 11 12 13 14 15; do sleep 0.1; done; exit 5"});
  spec.env_unset = {"DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"};
  const ProcessResult r = run_process(spec, kProcessTimeout);
  EXPECT_TRUE(r.exited && r.exit_code == 5) << describe(r) << r.err;
  EXPECT_EQ(png_size(png), std::make_pair(1000u, 700u)) << r.err;
  EXPECT_NE(r.err.find("memtap: recording written to " + db), std::string::npos) << r.err;
  std::string error;
  auto q = DbQuery::open(db, &error);
  ASSERT_TRUE(q) << error;
  EXPECT_GT(q->scalar_int("SELECT COUNT(*) FROM memscope_dump WHERE Event = 'MALLOC'"), 0);
}

TEST_F(Window, ListenTakesSeveralRanksAndRecordsThem) {
  const std::string endpoint = "ipc://" + dir.file("w.sock");
  const std::string db = dir.file("ranks.db");
  ProcessSpec spec = spec_in(dir, {kMemtapBin, "monitor", "--listen", endpoint, "-o", db});
  spec.env_unset = {"DISPLAY", "WAYLAND_DISPLAY"};
  spec.env_set.push_back("QT_QPA_PLATFORM=offscreen");  // a window nobody sees
  std::string error;
  auto monitor = Process::start(spec, &error);
  ASSERT_TRUE(monitor) << error;
  ASSERT_TRUE(poll_until([&] { return is_socket(dir.file("w.sock")); }, kProcessTimeout));
  for (int rank = 0; rank < 2; ++rank) {
    ProcessSpec p = preloaded_spec(dir, {kAllocPattern}, endpoint);
    p.env_set.push_back("RANK=" + std::to_string(rank));
    p.env_set.push_back("WORLD_SIZE=2");
    const ProcessResult r = run_process(p, kProcessTimeout);
    ASSERT_TRUE(r.exited && r.exit_code == 0) << describe(r) << r.err;
  }
  // Ctrl-C (here SIGTERM) ends the recording, as for memtap record.
  ASSERT_TRUE(monitor->signal(SIGTERM));
  const ProcessResult r = monitor->wait(kProcessTimeout);
  EXPECT_TRUE(r.exited && r.exit_code == 0) << describe(r) << r.err;
  EXPECT_NE(r.err.find("memtap: recording written to " + db), std::string::npos) << r.err;
  auto q = DbQuery::open(db, &error);
  ASSERT_TRUE(q) << error;
  EXPECT_EQ(q->scalar_int("SELECT COUNT(*) FROM memtap_session"), 4)
      << "two ranks and the child each forks";
  EXPECT_EQ(q->scalar_int("SELECT COUNT(DISTINCT rank) FROM memtap_session WHERE rank >= 0"), 2);
}

}  // namespace
}  // namespace memtap::e2e

namespace memtap::e2e {
namespace {

TEST_F(Window, InstalledBesideMemtapAndOpensARecording) {
  const std::string prefix = dir.file("prefix");
  const ProcessResult inst = install_build(dir, prefix);
  ASSERT_TRUE(inst.exited && inst.exit_code == 0) << describe(inst) << inst.err;
  const std::string db = record_pattern(dir);
  const std::string png = dir.file("installed.png");
  ProcessSpec spec = spec_in(dir, {prefix + "/bin/memtap", "monitor", db, "--screenshot", png});
  spec.env_unset = {"DISPLAY", "WAYLAND_DISPLAY", "QT_QPA_PLATFORM"};
  const ProcessResult r = run_process(spec, kProcessTimeout);
  EXPECT_TRUE(r.exited && r.exit_code == 0) << describe(r) << r.err;
  EXPECT_EQ(png_size(png), std::make_pair(1600u, 1000u)) << "the default size";
}

TEST_F(Window, ABuildWithoutQtChartsSaysWhyTheWindowIsMissing) {
  // Configure only (a build would take minutes): Qt 6 made unfindable, as on a node without it.
  const ProcessResult r = run_process(
      spec_in(dir, {CMAKE_COMMAND, "-S", MEMTAP_SOURCE_DIR, "-B", dir.file("no-qt"),
                    "-DCMAKE_DISABLE_FIND_PACKAGE_Qt6=TRUE", "-DMEMTAP_BUILD_TESTS=OFF"}),
      kProcessTimeout);
  EXPECT_TRUE(r.exited && r.exit_code == 0) << describe(r) << r.err;
  EXPECT_NE((r.out + r.err)
                .find("memtap-gui will not be built: Qt 6 Widgets, Charts and Test were "
                      "not found"),
            std::string::npos)
      << r.out << r.err;
  std::ifstream cache(dir.file("no-qt/CMakeCache.txt"));
  const std::string text((std::istreambuf_iterator<char>(cache)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("MEMTAP_BUILD_GUI:BOOL=ON"), std::string::npos);
}

}  // namespace
}  // namespace memtap::e2e
