// The live window over a real program: memtap_test_streamer, preloaded with the agent,
// streams into a window listening on an IPC socket (memtap monitor --listen), and allocates
// only when the test says so. The window follows the newest data, holds still while
// paused, and returns to the newest data with the Live button; its findings speak of the
// program as running; the recording is written as memtap record writes it.
#include <gtest/gtest.h>

#include <QLabel>
#include <QLocale>
#include <QPushButton>
#include <QRegularExpression>
#include <chrono>
#include <future>
#include <zmq.hpp>

#include "common/clock.h"
#include "monitor/gui/breakdown_view.h"
#include "monitor/gui/curves_panel.h"
#include "monitor/gui/findings_view.h"
#include "monitor/gui/lifetime_view.h"
#include "monitor/gui/top_bar.h"
#include "monitor/viewdata/live_source.h"
#include "tests/e2e/process_runner.h"
#include "tests/e2e/wire_forgery.h"
#include "tests/unit/gui/gui_support.h"
#include "tests/unit/store/store_test_support.h"
#include "tests/unit/viewdata/recording_builder.h"
#include "tests/unit/viewdata/source_support.h"

namespace memtap {
namespace {

// The newest value of the chart's Allocated line.
int64_t allocated_now(gui::MainWindow& w) {
  const viewdata::CurvesData& d = w.curves()->chart()->data();
  for (const viewdata::CurveLine& l : d.lines) {
    if (l.name == "Allocated" && !l.points.empty()) return l.points.back().value_bytes;
  }
  return -1;
}

// memtap_test_streamer under the agent, streaming to `endpoint`, waiting for commands.
std::unique_ptr<e2e::Process> start_streamer(const std::string& endpoint, std::string* error) {
  e2e::ProcessSpec spec;
  spec.argv = {MEMTAP_TEST_STREAMER};
  spec.env_set = {std::string("LD_PRELOAD=") + MEMTAP_AGENT, "MEMTAP_ENDPOINT=" + endpoint};
  spec.pipe_stdin = true;
  return e2e::Process::start(spec, error);
}

// Sends a command to the streamer and waits for its answer line.
void command(e2e::Process& p, const std::string& line) {
  const size_t answers = std::count(p.out().begin(), p.out().end(), '\n');
  ASSERT_TRUE(p.write_stdin(line + "\n"));
  ASSERT_TRUE(p.wait_for_output(
      [&](const std::string& out, const std::string&) {
        return size_t(std::count(out.begin(), out.end(), '\n')) > answers;
      },
      std::chrono::seconds(30)))
      << "no answer to " << line;
}

// Listening on an IPC socket in `dir`, recording to live.db there.
viewdata::LiveOptions live_options(const test::TempDir& dir) {
  viewdata::LiveOptions options;
  options.listen = "ipc://" + dir.file("live.sock");
  options.out = dir.file("live.db");
  return options;
}

// The live source of `options`; nullptr with *error.
std::unique_ptr<viewdata::DataSource> start_source(const viewdata::LiveOptions& options,
                                                   std::string* error) {
  int code = 0;
  return viewdata::start_live(options, error, &code);
}

// An agent played by hand (tests/e2e/wire_forgery.h): its messages say what a test likes.
struct ForgedAgent {
  explicit ForgedAgent(const std::string& endpoint) { socket.connect(endpoint); }
  void send(const std::string& message) {
    socket.send(zmq::buffer(message), zmq::send_flags::none);
  }
  zmq::context_t context;
  zmq::socket_t socket{context, zmq::socket_type::push};
};

// The window over a small recording at its narrowest, with a large desktop font, so that the
// status line has room for its counts alone; and a live status for its bar to show.
struct NarrowBar {
  NarrowBar() {
    test::RecordingBuilder b;
    b.malloc(1, 0x1000, 1000, "weights");
    const std::string path = dir.file("small.db");
    b.write(path);
    w = test::open_window(path, 500, 500);
    if (!w.window) return;
    bar = w.window->topBar();
    QFont large = bar->statusLabel()->font();
    large.setPointSizeF(large.pointSizeF() * 2.2);
    bar->statusLabel()->setFont(large);
    status.live = true;
    status.events = 8000000;
    status.events_per_s = 1000000;
  }
  test::TempDir dir;
  test::OpenWindow w;
  gui::TopBar* bar = nullptr;
  viewdata::SourceStatus status;
};

TEST(LiveWindow, FollowsPausesAndResumesWhileAProgramStreams) {
  test::TempDir dir;
  viewdata::LiveOptions options = live_options(dir);
  std::string error;
  auto source = start_source(options, &error);
  ASSERT_NE(source, nullptr) << error;
  // While `.partial` is written, the user knows the recording by its final name.
  EXPECT_EQ(source->database_path(), options.out + ".partial");
  EXPECT_EQ(source->recording_path(), options.out);
  gui::MainWindow window(source.get());
  window.resize(1200, 800);
  window.show();

  auto program = start_streamer(options.listen, &error);
  ASSERT_NE(program, nullptr) << error;

  // Live: the window follows the newest data as it comes.
  command(*program, "alloc 100 10000");
  ASSERT_TRUE(test::wait_for([&] { return allocated_now(window) >= 1000000; },
                             "the first megabyte in the window"));
  gui::ViewState* state = window.state();
  EXPECT_TRUE(state->following());
  EXPECT_EQ(state->t1(), state->sessionEnd());
  // What the running program holds is live now, not "never freed" at an end yet to come.
  const auto live_now = [&] {
    for (const viewdata::Finding& f : window.findings()->findings()) {
      if (f.title.rfind("Live now: ", 0) == 0) return true;
    }
    return false;
  };
  ASSERT_TRUE(test::wait_for(live_now, "the findings saying what is live now"));

  // Paused: the range holds still while the program goes on.
  QPushButton* live = window.topBar()->liveButton();
  live->click();
  EXPECT_FALSE(state->following());
  const int64_t held_t1 = state->t1();
  command(*program, "alloc 100 10000");
  const int64_t end_before = state->sessionEnd();
  ASSERT_TRUE(
      test::wait_for([&] { return state->sessionEnd() > end_before; }, "new data while paused"));
  ASSERT_TRUE(test::wait_for([&] { return window.client()->pending() == 0; }, "the answers"));
  EXPECT_EQ(state->t1(), held_t1);
  EXPECT_LT(allocated_now(window), 2000000) << "the paused chart still shows the old range";

  // Live again: back to the newest data, the second megabyte included.
  live->click();
  EXPECT_TRUE(state->following());
  ASSERT_TRUE(test::wait_for([&] { return allocated_now(window) >= 2000000; },
                             "the second megabyte after resuming"));
  EXPECT_EQ(state->t1(), state->sessionEnd());

  command(*program, "free");
  program->close_stdin();
  const e2e::ProcessResult result = program->wait(std::chrono::seconds(30));
  EXPECT_TRUE(result.exited && result.exit_code == 0) << e2e::describe(result);
  source->stop();
  ASSERT_TRUE(test::wait_for([&] { return source->status().loaded; }, "the recording"));
  EXPECT_TRUE(test::exists(options.out)) << "the live recording is written";
  EXPECT_EQ(source->database_path(), options.out);
}

// The block index must not hold the engine back, so in a flood it drops events (counted,
// and said in red). After the run the recording has them all: the index is built again
// from it, and the block views end with every block. Here the index's queue has no room at
// all, so that it drops every event of the run, however fast it is.
TEST(LiveWindow, BlocksTheIndexDroppedAreReadFromTheRecordingAfterTheRun) {
  test::TempDir dir;
  viewdata::LiveOptions options = live_options(dir);
  options.block_queue_events = 0;
  options.block_spool_bytes = 0;  // and nothing may wait on disk
  std::string error;
  auto source = start_source(options, &error);
  ASSERT_NE(source, nullptr) << error;
  gui::MainWindow window(source.get());
  window.resize(1200, 800);
  window.show();

  auto program = start_streamer(options.listen, &error);
  ASSERT_NE(program, nullptr) << error;
  command(*program, "alloc 100 10000");
  ASSERT_TRUE(test::wait_for([&] { return allocated_now(window) >= 1000000; },
                             "the megabyte in the window"));
  ASSERT_TRUE(test::wait_for([&] { return source->blocks().status().events_dropped >= 100; },
                             "the index dropping the run's blocks"));
  QLabel* line = window.topBar()->statusLabel();
  ASSERT_TRUE(test::wait_for([&] { return line->toolTip().contains("block views miss"); },
                             "the bar saying what the block views miss"));
  EXPECT_EQ(source->status().blocks_generation, 0u);

  program->close_stdin();
  const e2e::ProcessResult result = program->wait(std::chrono::seconds(30));
  EXPECT_TRUE(result.exited && result.exit_code == 0) << e2e::describe(result);
  source->stop();
  ASSERT_TRUE(test::wait_for(
      [&] {
        const viewdata::SourceStatus s = source->status();
        return s.loaded && !s.blocks_reindexing;
      },
      "the recording, and the index built again from it"));
  EXPECT_EQ(source->status().blocks_generation, 1u);
  // The new index is given out once it has all its input, and takes it on its own thread:
  // settled, the window has seen it take all of it (its queue empty) and asked it again.
  ASSERT_TRUE(test::wait_for([&] { return window.settled(); }, "the window to settle"));
  const viewdata::BlockIndexStatus blocks = source->blocks().status();
  EXPECT_EQ(blocks.events_dropped, 0u);
  EXPECT_GE(blocks.blocks, 100u);
  EXPECT_EQ(blocks.events_indexed, blocks.events_added);

  // The views asked the new index: the lifetime graph counts the 100 blocks, and the bar no
  // longer says anything is missed.
  EXPECT_FALSE(line->toolTip().contains("block views miss")) << line->toolTip().toStdString();
  const QString count = window.lifetime()->countText();
  bool ok = false;
  const qulonglong blocks_shown = QLocale().toULongLong(count.section(' ', 0, 0), &ok);
  EXPECT_TRUE(ok && blocks_shown >= 100) << count.toStdString();
}

// In a flood the block index falls behind, its events waiting on disk, and catches up with
// every block while the program still runs: the block views do not wait for the run's end.
// Here the index's queue has no room at all, and its thread is held in a query while the
// program allocates, so that every event waits on disk, however fast the index is.
TEST(LiveWindow, TheBlockViewsCatchUpWithAFloodWhileTheProgramRuns) {
  test::TempDir dir;
  viewdata::LiveOptions options = live_options(dir);
  options.block_queue_events = 0;
  std::string error;
  auto source = start_source(options, &error);
  ASSERT_NE(source, nullptr) << error;
  gui::MainWindow window(source.get());
  window.resize(1600, 800);
  window.show();
  QLabel* line = window.topBar()->statusLabel();
  const auto said = [&] { return line->text() + "\n" + line->toolTip(); };

  auto program = start_streamer(options.listen, &error);
  ASSERT_NE(program, nullptr) << error;
  test::HeldBlockIndex held(source->blocks());
  command(*program, "alloc 100 10000");
  ASSERT_TRUE(test::wait_for([&] { return source->blocks().status().spooled_events >= 100; },
                             "the run's blocks waiting on disk"));
  ASSERT_TRUE(
      test::wait_for([&] { return said().contains("block views") && said().contains("behind"); },
                     "the bar saying the block views are behind"));
  held.release();

  ASSERT_TRUE(test::wait_for(
      [&] {
        const viewdata::BlockIndexStatus b = source->blocks().status();
        return b.queued_events == 0 && b.blocks >= 100;
      },
      "the index catching up"));
  const viewdata::BlockIndexStatus blocks = source->blocks().status();
  EXPECT_EQ(blocks.events_dropped, 0u);
  EXPECT_EQ(blocks.events_indexed, blocks.events_added);
  EXPECT_EQ(source->status().blocks_generation, 0u) << "no index built again";
  EXPECT_TRUE(source->status().live) << "the program still runs";
  // The lifetime graph asks again and counts the 100 blocks; the bar no longer says behind.
  const auto shown = [&] {
    bool ok = false;
    const qulonglong n =
        QLocale().toULongLong(window.lifetime()->countText().section(' ', 0, 0), &ok);
    return ok ? n : 0;
  };
  ASSERT_TRUE(test::wait_for([&] { return shown() >= 100; }, "the lifetime graph's 100 blocks"))
      << window.lifetime()->countText().toStdString();
  ASSERT_TRUE(test::wait_for([&] { return !said().contains("block views"); },
                             "the bar no longer saying the block views are behind"))
      << said().toStdString();

  program->close_stdin();
  const e2e::ProcessResult result = program->wait(std::chrono::seconds(30));
  EXPECT_TRUE(result.exited && result.exit_code == 0) << e2e::describe(result);
  source->stop();
  ASSERT_TRUE(test::wait_for([&] { return source->status().loaded; }, "the recording"));
  EXPECT_EQ(source->status().blocks_generation, 0u);
}

// A few events may be seconds of the program's time: the block views are said to be behind
// once the index's newest event is a second or more behind the curves' however few events
// wait (the index's thread is held here, with two events a little over two seconds apart).
TEST(LiveWindow, TheBarSaysTheBlockViewsAreSecondsBehindWithFewEventsWaiting) {
  test::TempDir dir;
  viewdata::LiveOptions options = live_options(dir);
  std::string error;
  auto source = start_source(options, &error);
  ASSERT_NE(source, nullptr) << error;
  gui::MainWindow window(source.get());
  window.resize(1600, 800);
  window.show();
  QLabel* line = window.topBar()->statusLabel();

  ForgedAgent agent(options.listen);
  auto send = [&](const std::string& message) { agent.send(message); };
  e2e::ForgedHeader header{.pid = 5002, .instance_id = 2, .instance_secret = 22};
  constexpr uint64_t kMs = 1'000'000;
  const uint64_t now = monotonic_ns();
  send(e2e::forged_hello(header, "node", now - 4000 * kMs));
  header.sequence = 1;
  send(e2e::forged_batch_at(header, 1, {{0x1000, 64}}, now - 3000 * kMs, 0, now - 2900 * kMs));
  ASSERT_TRUE(test::wait_for([&] { return source->blocks().status().blocks == 1; },
                             "the first block indexed"));
  test::HeldBlockIndex held(source->blocks());
  header.sequence = 2;
  send(e2e::forged_batch_at(header, 1, {{0x2000, 64}, {0x3000, 64}}, now - 800 * kMs, 100 * kMs,
                            monotonic_ns()));
  ASSERT_TRUE(
      test::wait_for([&] { return source->status().events == 4; },  // START_TRACE and three mallocs
                     "the curves' three blocks"));
  ASSERT_EQ(source->blocks().status().queued_events, 2u);
  ASSERT_TRUE(test::wait_for([&] { return line->text().contains("block views 2 events behind"); },
                             "the bar saying the block views are behind"))
      << line->text().toStdString();
  held.release();
  ASSERT_TRUE(test::wait_for([&] { return !line->text().contains("block views"); },
                             "the bar no longer saying so"))
      << line->text().toStdString();

  header.sequence = 3;
  send(e2e::forged_bye(header, 3));
  source->stop();
  ASSERT_TRUE(test::wait_for([&] { return source->status().loaded; }, "the recording"));
}

// Asked while the block index is behind a flood, the breakdown says that the blocks since
// the index's newest event are not shown yet, and stops saying it once the index caught up.
TEST(LiveWindow, TheBreakdownSaysWhenTheBlockIndexHasNotReachedItsInstant) {
  test::TempDir dir;
  viewdata::LiveOptions options = live_options(dir);
  options.block_queue_events = 0;
  std::string error;
  auto source = start_source(options, &error);
  ASSERT_NE(source, nullptr) << error;
  gui::MainWindow window(source.get());
  window.resize(1600, 800);
  window.show();
  window.showView("breakdown");
  QStringList headers;
  QObject::connect(window.breakdown(), &gui::BreakdownView::drawn,
                   [&] { headers << window.breakdown()->header()->text(); });

  // Held before the program starts, so that no block of its is indexed before the release.
  test::HeldBlockIndex held(source->blocks());
  auto program = start_streamer(options.listen, &error);
  ASSERT_NE(program, nullptr) << error;
  command(*program, "alloc 100 10000");
  ASSERT_TRUE(test::wait_for([&] { return allocated_now(window) >= 1000000; },
                             "the megabyte in the curves"));
  ASSERT_TRUE(test::wait_for([&] { return source->blocks().status().spooled_events >= 100; },
                             "the blocks waiting on disk"));
  // The breakdown's question waits behind the held one, and is answered ahead of the disk.
  headers.clear();
  window.state()->setCursor(window.state()->sessionEnd());
  // The view asks from the event loop (a queued call): it must ask before the release, or
  // the index, finding no question waiting, may read the spool first and answer after it.
  // Asked now, the question is posted behind the held one, or noted behind one in flight.
  QCoreApplication::sendPostedEvents(window.breakdown(), QEvent::MetaCall);
  held.release();
  ASSERT_TRUE(test::wait_for([&] { return !headers.isEmpty(); }, "the breakdown's answer"));
  EXPECT_TRUE(headers.first().contains("The block index has not indexed any block yet"))
      << headers.first().toStdString();

  ASSERT_TRUE(test::wait_for([&] { return source->blocks().status().queued_events == 0; },
                             "the index catching up"));
  window.state()->setCursor(window.state()->sessionEnd() - 1);
  ASSERT_TRUE(
      test::wait_for([&] { return !headers.isEmpty() && headers.last().contains("KiB in 10"); },
                     "the breakdown of the 100 blocks"))
      << headers.join('\n').toStdString();
  EXPECT_FALSE(headers.last().contains("block index")) << headers.last().toStdString();
  program->close_stdin();
  EXPECT_TRUE(program->wait(std::chrono::seconds(30)).exited);
  source->stop();
  ASSERT_TRUE(test::wait_for([&] { return source->status().loaded; }, "the recording"));
}

// A window that listens steps back for the programs while any runs, as memtap record does:
// seen here through its block index, which answers a query ahead of the events it has not
// indexed only then (BlockIndex::pace_by). Before, the listening window never set the limit,
// and its threads took what they liked beside the training runs.
TEST(LiveWindow, AListeningWindowPutsTheProgramsFirstWhileAnyRuns) {
  test::TempDir dir;
  viewdata::LiveOptions options = live_options(dir);
  std::string error;
  auto source = start_source(options, &error);
  ASSERT_NE(source, nullptr) << error;
  gui::MainWindow window(source.get());
  window.resize(1200, 800);
  window.show();
  auto program = start_streamer(options.listen, &error);
  ASSERT_NE(program, nullptr) << error;
  command(*program, "alloc 1 100");
  ASSERT_TRUE(test::wait_for([&] { return source->blocks().status().blocks >= 1; },
                             "the program's first block"));
  // Whether a query posted behind 100 new blocks' events is answered before them (they are
  // still queued when it runs). The limit is looked at every 100 ms, so the probe is tried
  // until it shows, or for 10 s.
  const auto query_went_first = [&] {
    test::HeldBlockIndex held(source->blocks());
    command(*program, "alloc 100 64");
    const size_t waiting = 100;
    if (!test::wait_for([&] { return source->blocks().status().queued_events >= waiting; },
                        "the blocks' events queued")) {
      return false;
    }
    std::promise<size_t> seen;
    auto answer = seen.get_future();
    source->blocks().post(
        [&](viewdata::BlockQueries&) { seen.set_value(source->blocks().status().queued_events); });
    held.release();
    return answer.get() >= waiting;
  };
  bool first = false;
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(10);
  while (!first && std::chrono::steady_clock::now() < deadline) first = query_went_first();
  EXPECT_TRUE(first) << "the window's block index never put a query ahead of its events";

  command(*program, "free");
  program->close_stdin();
  EXPECT_TRUE(program->wait(std::chrono::seconds(30)).exited);
  source->stop();
  ASSERT_TRUE(test::wait_for([&] { return source->status().loaded; }, "the recording"));
}

// A program whose agent holds its newer events (it leaves the cores to the program, or its
// sender gets none) sends nothing meanwhile: what has arrived is all analysed, and the view
// looked up to date while it was seconds behind the program (a storm on two cores: "view
// 253 ms behind" with the curves ending 0.8 s before the present). Here the agent is played
// by hand: its only batch says it has sent everything before 8 s ago, and no more.
TEST(LiveWindow, TheBarSaysHowFarBehindAProgramWhoseAgentHoldsItsEventsTheViewIs) {
  test::TempDir dir;
  viewdata::LiveOptions options = live_options(dir);
  std::string error;
  auto source = start_source(options, &error);
  ASSERT_NE(source, nullptr) << error;
  gui::MainWindow window(source.get());
  window.resize(1600, 1000);
  window.show();

  ForgedAgent agent(options.listen);
  auto send = [&](const std::string& message) { agent.send(message); };
  e2e::ForgedHeader header{.pid = 5001, .instance_id = 1, .instance_secret = 11};
  constexpr uint64_t kS = 1'000'000'000;
  const uint64_t now = monotonic_ns();
  // Another host's, so that the monitor does not look for pid 5001 here.
  send(e2e::forged_hello(header, "node", now - 10 * kS));
  header.sequence = 1;
  send(e2e::forged_batch_at(header, 1, {{0x1000, 64}, {0x2000, 64}}, now - 9 * kS, 1000,
                            now - 8 * kS));
  // The horizon stands 2 s behind the clock (a Hello 10 s after its start: its most), so the
  // view is about 6 s behind the program.
  ASSERT_TRUE(test::wait_for(
      [&] {
        const viewdata::SourceStatus s = source->status();
        return s.events == 3 && s.lagging_pid == 5001;  // START_TRACE and two mallocs
      },
      "the view behind pid 5001"))
      << source->status().events << " events, " << source->status().lag_ns << " ns behind pid "
      << source->status().lagging_pid;
  const viewdata::SourceStatus behind = source->status();
  EXPECT_GE(behind.lag_ns, int64_t(5 * kS));
  EXPECT_LT(behind.lag_ns, int64_t(60 * kS));
  QLabel* label = window.topBar()->statusLabel();
  ASSERT_TRUE(test::wait_for([&] { return label->text().contains(" behind pid 5001"); },
                             "the bar saying so"))
      << label->text().toStdString();
  EXPECT_TRUE(label->text().contains(QRegularExpression("view [0-9.]+ s behind pid 5001")))
      << label->text().toStdString();
  EXPECT_TRUE(label->toolTip().contains(
      "The view is behind pid 5001 @ node: its newer events have not come yet. Its agent "
      "sends them when the program leaves it a core"))
      << label->toolTip().toStdString();

  // It sends what it held, up to now: the view is up to date again.
  header.sequence = 2;
  send(e2e::forged_batch_at(header, 1, {{0x3000, 64}}, now - 2 * kS, 0, monotonic_ns()));
  ASSERT_TRUE(test::wait_for(
      [&] {
        const viewdata::SourceStatus s = source->status();
        return s.events == 4 && s.lagging_pid == 0 && s.lag_ns < 1'000'000;
      },
      "the view up to date"))
      << source->status().lag_ns << " ns behind pid " << source->status().lagging_pid;
  ASSERT_TRUE(test::wait_for([&] { return label->text().contains("view up to date"); },
                             "the bar saying so"))
      << label->text().toStdString();
  EXPECT_FALSE(label->toolTip().contains("The view is behind")) << label->toolTip().toStdString();

  header.sequence = 3;
  send(e2e::forged_bye(header, 3));
  source->stop();
  ASSERT_TRUE(test::wait_for([&] { return source->status().loaded; }, "the recording"));
}

// Where the newer events wait, the tooltip says: in a program's agent (the bar names that
// program), or in memtap's own queues (every program lags alike). A second or more behind
// shows however narrow the window: the curves' end is then not the present.
TEST(LiveWindow, TheBarSaysWhereTheEventsTheViewIsBehindWait) {
  NarrowBar narrow;  // the extras do not fit
  ASSERT_TRUE(narrow.bar);
  gui::TopBar* bar = narrow.bar;
  viewdata::SourceStatus& status = narrow.status;
  viewdata::ProcessEntry rank;
  rank.pid = 4242;
  rank.hostname = "node-3";
  rank.rank = 3;
  rank.world_size = 8;
  status.processes.push_back(rank);
  status.lag_ns = 2'500'000'000;
  for (const uint32_t pid : {4242u, 0u}) {
    status.lagging_pid = pid;
    bar->refresh(status);
    QApplication::processEvents();
    bar->refresh(status);
    const QString text = bar->statusLabel()->text();
    EXPECT_TRUE(text.endsWith(pid != 0 ? "view 2.500 s behind pid 4242" : "view 2.500 s behind"))
        << text.toStdString() << " in " << bar->statusLabel()->width() << " px";
    const QString tip = bar->statusLabel()->toolTip();
    EXPECT_TRUE(tip.contains(pid != 0 ? "The view is behind rank 3/8 · pid 4242 @ node-3: its "
                                        "newer events have not come yet"
                                      : "The view is behind the programs: memtap is still taking "
                                        "in their newer events"))
        << tip.toStdString();
  }
  // Under a second it is one of the extras, which a narrow bar leaves out.
  status.lag_ns = 500'000'000;
  status.lagging_pid = 4242;
  bar->refresh(status);
  EXPECT_FALSE(bar->statusLabel()->text().contains("behind"))
      << bar->statusLabel()->text().toStdString();
  EXPECT_TRUE(bar->statusLabel()->toolTip().contains("view 500.0 ms behind pid 4242"))
      << bar->statusLabel()->toolTip().toStdString();
}

// Once a run's program has ended nothing more arrives, but SQLite can be seconds behind a
// flood: the status line says what is left to write instead of the last second's rate,
// and its start (the state, the counts) stays in view when the line is too long for the bar.
TEST(LiveWindow, TheStatusSaysTheRecordingIsBeingWrittenOnceNothingArrives) {
  // The narrowest the window goes (its views' minimum), with a large desktop font: the line,
  // on its own row below the selectors, is still too long for the bar.
  NarrowBar narrow;
  ASSERT_TRUE(narrow.bar);
  test::OpenWindow& w = narrow.w;
  gui::TopBar* bar = narrow.bar;
  viewdata::SourceStatus& status = narrow.status;
  status.writing = true;
  status.rows_to_write = 4374516;
  status.recording_bytes = 331ull << 20;
  bar->refresh(status);
  QApplication::processEvents();
  bar->refresh(status);
  const QString text = bar->statusLabel()->text();
  EXPECT_TRUE(text.startsWith(QLocale().toString(qulonglong(4374516)).prepend("writing: ")))
      << text.toStdString();
  EXPECT_FALSE(text.contains("events/s")) << "a stale rate: " << text.toStdString();
  // What does not fit is left out whole, not cut in the middle, and the tooltip has it.
  EXPECT_TRUE(text.endsWith("0 dropped"))
      << text.toStdString() << " in " << bar->statusLabel()->width() << " px";
  EXPECT_TRUE(bar->statusLabel()->toolTip().contains("view up to date  ·  recording 331.0 MiB"))
      << bar->statusLabel()->toolTip().toStdString();
  EXPECT_TRUE(bar->statusLabel()->alignment() & Qt::AlignLeft) << "its start in view";
  // With room for it, it is there.
  w.window->resize(2400, 500);
  QApplication::processEvents();
  bar->refresh(status);
  EXPECT_TRUE(bar->statusLabel()->text().endsWith("recording 331.0 MiB"))
      << bar->statusLabel()->text().toStdString();

  status.rows_to_write = 0;
  bar->refresh(status);
  EXPECT_TRUE(bar->statusLabel()->text().startsWith("completing the recording"));
}

}  // namespace
}  // namespace memtap
