// The block lifetime graph and the pool at an instant, driven as a user drives them: a
// click on a block in the pool selects it and the lifetime graph shows it; a click in the
// lifetime graph highlights the block's segment in the pool; a segment's header selects the
// segment; the detail panel tells the block's story; empty views say why.
#include <gtest/gtest.h>

#include <QTest>
#include <fstream>
#include <optional>

#include "monitor/gui/curves_panel.h"
#include "monitor/gui/findings_view.h"
#include "monitor/gui/lifetime_view.h"
#include "monitor/gui/pool_view.h"
#include "tests/unit/gui/gui_support.h"
#include "tests/unit/store/store_test_support.h"
#include "tests/unit/viewdata/device_rows.h"
#include "tests/unit/viewdata/recording_builder.h"

namespace memtap {
namespace {

constexpr uint64_t kMiB = 1 << 20;
constexpr uint64_t kSeg0 = 0x12c000000000;
constexpr uint64_t kSeg1 = 0x12c000400000;

// Device 0: two 2 MiB HAL segments, PTA blocks inside them, one freed at 6 ms.
std::string device_recording(const test::TempDir& dir, test::RecordingBuilder* b) {
  test::DeviceRows d(*b);
  b->malloc(0.5, 0x1000, 100);
  d.malloc(1, "HAL", kSeg0, 2 * kMiB);
  d.malloc(1, "HAL", kSeg1, 2 * kMiB);
  d.malloc(2, "PTA", kSeg0, 512 * 1024, "weights", "aten::empty", "train.py(12): build");
  d.malloc(3, "PTA", kSeg0 + 512 * 1024, 512 * 1024, "activations");
  d.malloc(5, "PTA", kSeg1, kMiB, "optimizer", "aten::zeros", "train.py(40): step");
  d.free(6, "PTA", kSeg0 + 512 * 1024);
  b->step(8, 1);
  const std::string path = dir.file("device.db");
  b->write(path);
  d.append_to(path);
  return path;
}

// The id of the block of `owner` in the pool's segments (-1: none).
int64_t pool_block(const viewdata::PoolData& d, const std::string& owner) {
  for (const auto& s : d.segments)
    for (const auto& b : s.blocks)
      if (b.owner == owner) return b.id;
  return -1;
}

bool drawn_in_graph(gui::LifetimeGraph* g, int64_t id) {
  for (const auto& b : g->data().blocks)
    if (b.id == id) return true;
  return false;
}

struct DeviceWindow {
  test::TempDir dir;
  test::RecordingBuilder b;
  test::OpenWindow w;
  DeviceWindow(const char* view) {
    w = test::open_window(device_recording(dir, &b));
    if (!w.window) return;
    w.window->showView(view);
    w.window->state()->setScope(b.pid(), 0);
    w.window->state()->setCursor(b.at(5.5));
    test::settle(*w.window);
  }
};

TEST(PoolView, AClickOnABlockSelectsItAndTheLifetimeGraphShowsIt) {
  DeviceWindow dw("pool");
  ASSERT_TRUE(dw.w.window);
  gui::MainWindow& window = *dw.w.window;
  gui::PoolCanvas* canvas = window.pool()->canvas();
  ASSERT_EQ(canvas->data().segments.size(), 2u);
  EXPECT_TRUE(window.pool()->summaryText().contains("2 segments"))
      << window.pool()->summaryText().toStdString();
  const int64_t optimizer = pool_block(canvas->data(), "optimizer");
  ASSERT_GE(optimizer, 0);
  const QRect r = canvas->blockRect(optimizer);
  ASSERT_FALSE(r.isEmpty());
  QTest::mouseClick(canvas, Qt::LeftButton, {}, r.center());
  EXPECT_EQ(window.state()->selectedBlock(), optimizer);
  EXPECT_EQ(canvas->highlightedSegment(), 1);  // the block leads to its segment
  test::settle(window);
  gui::LifetimeView* lifetime = window.lifetime();
  EXPECT_TRUE(drawn_in_graph(lifetime->graph(), optimizer));
  EXPECT_FALSE(lifetime->graph()->blockRect(optimizer).isEmpty());
  const QString detail = lifetime->detailText();
  EXPECT_TRUE(detail.contains("optimizer")) << detail.toStdString();
  EXPECT_TRUE(detail.contains("aten::zeros")) << detail.toStdString();
  EXPECT_TRUE(detail.contains("train.py(40): step")) << detail.toStdString();
}

// A segment that holds one block says "1 block", not "1 blocks"; the other "2 blocks".
TEST(PoolView, ASegmentsHeaderCountsItsBlocksInWords) {
  DeviceWindow dw("pool");
  ASSERT_TRUE(dw.w.window);
  const viewdata::PoolData& d = dw.w.window->pool()->canvas()->data();
  ASSERT_EQ(d.segments.size(), 2u);
  ASSERT_EQ(d.segments[0].blocks.size(), 2u);
  ASSERT_EQ(d.segments[1].blocks.size(), 1u);
  EXPECT_TRUE(gui::poolSegmentHeader(d.segments[0]).contains(" · 2 blocks · "))
      << gui::poolSegmentHeader(d.segments[0]).toStdString();
  EXPECT_TRUE(gui::poolSegmentHeader(d.segments[1]).contains(" · 1 block · "))
      << gui::poolSegmentHeader(d.segments[1]).toStdString();
}

// A segment whose free bytes are split by a few hundred bytes has its largest gap hatched:
// its header must not say "fragmentation 0%" beside it.
TEST(PoolView, ALittleFragmentationIsNotZeroPercent) {
  viewdata::PoolSegmentData s;
  s.segment.size_bytes = 2 << 20;
  const auto fragmentation = [&](double f) {
    s.fragmentation = f;
    const QString header = gui::poolSegmentHeader(s);
    return header.mid(header.indexOf("fragmentation ")).toStdString();
  };
  EXPECT_EQ(fragmentation(0), "fragmentation 0%");
  EXPECT_EQ(fragmentation(0.0003), "fragmentation <1%");
  EXPECT_EQ(fragmentation(0.006), "fragmentation 1%");
  EXPECT_EQ(fragmentation(0.33), "fragmentation 33%");
  EXPECT_EQ(fragmentation(0.999), "fragmentation >99%");
  EXPECT_EQ(fragmentation(1), "fragmentation 100%");
}

TEST(PoolView, ASegmentsHeaderSelectsTheSegment) {
  DeviceWindow dw("pool");
  ASSERT_TRUE(dw.w.window);
  gui::PoolCanvas* canvas = dw.w.window->pool()->canvas();
  ASSERT_EQ(canvas->data().segments.size(), 2u);
  QTest::mouseClick(canvas, Qt::LeftButton, {}, canvas->headerRect(1).center());
  EXPECT_EQ(dw.w.window->state()->selectedBlock(), canvas->data().segments[1].segment.id);
  EXPECT_EQ(canvas->highlightedSegment(), 1);
}

TEST(LifetimeView, AClickOnABlockShowsItsDetailAndHighlightsItsSegmentInThePool) {
  DeviceWindow dw("lifetime");
  ASSERT_TRUE(dw.w.window);
  gui::MainWindow& window = *dw.w.window;
  gui::LifetimeGraph* graph = window.lifetime()->graph();
  int64_t weights = -1;
  for (const auto& b : graph->data().blocks)
    if (b.owner == "weights") weights = b.id;
  ASSERT_GE(weights, 0);
  EXPECT_EQ(graph->data().blocks.size(), 5u);  // 2 HAL + 3 PTA on device 0
  // Their sizes added up, said as such: not what was held at once.
  EXPECT_TRUE(window.lifetime()->countText().startsWith("5 blocks live at some time in "))
      << window.lifetime()->countText().toStdString();
  EXPECT_TRUE(window.lifetime()->countText().endsWith(" between them"))
      << window.lifetime()->countText().toStdString();
  const QRect r = graph->blockRect(weights);
  ASSERT_FALSE(r.isEmpty());
  QTest::mouseClick(graph, Qt::LeftButton, {}, r.center());
  EXPECT_EQ(window.state()->selectedBlock(), weights);
  test::settle(window);
  EXPECT_EQ(window.pool()->canvas()->highlightedSegment(), 0);
  const QString detail = window.lifetime()->detailText();
  for (const char* part : {"512.0 KiB", "owner", "weights", "Name", "aten::empty", "Allocated",
                           "+0.002 s", "still live", "allocation_id", "Call Stack(Python)",
                           "train.py(12): build", "Call Stack(C)"}) {
    EXPECT_TRUE(detail.contains(QString::fromUtf8(part))) << part << " in\n"
                                                          << detail.toStdString();
  }
}

// An empty detail panel took a third of the view's height from the graph: it shows only
// while a block is selected, and the graph says where the details are meanwhile.
TEST(LifetimeView, TheDetailPanelShowsOnlyWhileABlockIsSelected) {
  DeviceWindow dw("lifetime");
  ASSERT_TRUE(dw.w.window);
  gui::MainWindow& window = *dw.w.window;
  gui::LifetimeView* view = window.lifetime();
  gui::LifetimeGraph* graph = view->graph();
  EXPECT_FALSE(view->detailShown());
  EXPECT_FALSE(graph->hintText().isEmpty());
  const int graph_alone = graph->height();

  int64_t weights = -1;
  for (const auto& b : graph->data().blocks)
    if (b.owner == "weights") weights = b.id;
  ASSERT_GE(weights, 0);
  QTest::mouseClick(graph, Qt::LeftButton, {}, graph->blockRect(weights).center());
  test::settle(window);
  EXPECT_TRUE(view->detailShown());
  EXPECT_TRUE(view->detailText().contains("weights")) << view->detailText().toStdString();
  EXPECT_TRUE(graph->hintText().isEmpty());
  // A third of what the graph had alone: room for the block's fields.
  EXPECT_NEAR(view->detailHeight(), graph_alone / 3, 12) << graph_alone;
  EXPECT_NEAR(graph->height(), graph_alone * 2 / 3, 12) << graph_alone;

  // A click in the plot beside every block puts the selection and the panel away.
  const QRectF plot = graph->plotRect();
  std::optional<QPoint> beside;
  for (int y = int(plot.top()) + 1; y < plot.bottom() && !beside; y += 2) {
    for (int x = int(plot.left()) + 1; x < plot.right() && !beside; x += 2) {
      bool on_block = false;
      for (const auto& b : graph->data().blocks)
        on_block = on_block || graph->blockRect(b.id).adjusted(-3, -3, 3, 3).contains(x, y);
      if (!on_block) beside = QPoint(x, y);
    }
  }
  ASSERT_TRUE(beside) << "no room beside the blocks in the plot";
  QTest::mouseClick(graph, Qt::LeftButton, {}, *beside);
  test::settle(window);
  EXPECT_EQ(window.state()->selectedBlock(), -1);
  EXPECT_FALSE(view->detailShown());
  EXPECT_EQ(graph->height(), graph_alone);

  // Another device puts the selection down too, and with it the panel and its old text.
  QTest::mouseClick(graph, Qt::LeftButton, {}, graph->blockRect(weights).center());
  test::settle(window);
  ASSERT_TRUE(view->detailShown());
  window.state()->setScope(dw.b.pid(), -1);
  test::settle(window);
  EXPECT_FALSE(view->detailShown());
  EXPECT_TRUE(view->detailText().isEmpty()) << view->detailText().toStdString();
}

TEST(LifetimeView, ABlockSelectedOutsideTheRangeIsBroughtIntoView) {
  DeviceWindow dw("lifetime");
  ASSERT_TRUE(dw.w.window);
  gui::MainWindow& window = *dw.w.window;
  // The range before the 'activations' block was allocated; the pool (at 5.5 ms: after it
  // was freed) has not got it either, so select it by the id the full range showed.
  int64_t activations = -1;
  for (const auto& b : window.lifetime()->graph()->data().blocks)
    if (b.owner == "activations") activations = b.id;
  ASSERT_GE(activations, 0);
  window.state()->setRange(dw.b.at(0), dw.b.at(1.5));
  test::settle(window);
  EXPECT_FALSE(drawn_in_graph(window.lifetime()->graph(), activations));
  window.state()->selectBlock(activations);
  test::settle(window);
  EXPECT_LE(window.state()->t0(), dw.b.at(3));
  EXPECT_GE(window.state()->t1(), dw.b.at(6));
  EXPECT_TRUE(drawn_in_graph(window.lifetime()->graph(), activations));
}

// A block freed while another stream still used it is drawn in its own state, in Active's
// colour, and the legend names that state (a device's pool only).
TEST(PoolView, APendingBlockIsDrawnAndNamedAsActiveFreePending) {
  viewdata::PoolData d;
  d.pid = 1;
  d.device = 0;
  d.source = blocks::PoolSource::kDeviceSegments;
  auto item = [](int64_t id, uint64_t addr, uint64_t size, Layer layer) {
    viewdata::PoolItem i;
    i.id = id;
    i.addr = addr;
    i.size_bytes = size;
    i.layer = layer;
    return i;
  };
  viewdata::PoolSegmentData s;
  s.segment = item(100, kSeg0, 2 * kMiB, Layer::kHal);
  viewdata::PoolItem allocated = item(101, kSeg0, kMiB / 2, Layer::kPta);
  viewdata::PoolItem pending = item(102, kSeg0 + kMiB, kMiB / 2, Layer::kPta);
  pending.pending = true;
  s.blocks = {allocated, pending};
  s.allocated_bytes = s.pending_bytes = kMiB / 2;
  d.segments = {s};
  gui::ViewState state;
  gui::PoolCanvas canvas(&state);
  canvas.resize(800, 100);
  canvas.show(d);
  const QImage image = canvas.grab().toImage();
  const QColor at_allocated = image.pixelColor(canvas.blockRect(101).center());
  const QColor at_pending = image.pixelColor(canvas.blockRect(102).center());
  EXPECT_EQ(at_allocated, gui::state_color(viewdata::PoolBlockState::kAllocated));
  EXPECT_EQ(at_pending, gui::state_color(viewdata::PoolBlockState::kPendingFree));
  EXPECT_NE(at_pending, at_allocated);

  const QString legend = gui::poolLegend(d);
  EXPECT_TRUE(legend.contains("Active, free pending")) << legend.toStdString();
  EXPECT_TRUE(legend.contains(gui::state_color(viewdata::PoolBlockState::kPendingFree).name()));
  d.source = blocks::PoolSource::kHostMappings;
  EXPECT_FALSE(gui::poolLegend(d).contains("pending"));
}

TEST(PoolView, AHostHeapSaysItHasNoSegmentsAndListsItsBlocks) {
  test::TempDir dir;
  test::RecordingBuilder b;
  b.malloc(1, 0x1000, 100, "small");
  b.malloc(2, 0x2000, 3000, "big");
  const std::string path = dir.file("heap.db");
  b.write(path);
  auto w = test::open_window(path);
  ASSERT_TRUE(w.window);
  w.window->showView("pool");
  w.window->state()->setCursor(b.at(2.4));
  test::settle(*w.window);
  const QString text = w.window->pool()->summaryText();
  EXPECT_TRUE(
      text.contains("This process has no pool segments at +0.002 s: host heap blocks "
                    "are not pooled. 2 blocks, 3.0 KiB live."))
      << text.toStdString();
  QTreeWidget* list = w.window->pool()->blockList();
  ASSERT_EQ(list->topLevelItemCount(), 2);
  EXPECT_EQ(list->topLevelItem(0)->text(2), "big");
  // A listed block is selectable too.
  QTest::mouseClick(list->viewport(), Qt::LeftButton, {},
                    list->visualItemRect(list->topLevelItem(0)).center());
  EXPECT_GE(w.window->state()->selectedBlock(), 0);

  w.window->state()->setCursor(b.at(0.5));  // before any block
  test::settle(*w.window);
  EXPECT_TRUE(w.window->pool()->summaryText().startsWith("No blocks live"))
      << w.window->pool()->summaryText().toStdString();
}

TEST(LifetimeView, ARangeWithoutBlocksSaysSo) {
  test::TempDir dir;
  test::RecordingBuilder b;
  b.malloc(5, 0x1000, 100);
  b.step(10, 1);
  const std::string path = dir.file("late.db");
  b.write(path);
  auto w = test::open_window(path);
  ASSERT_TRUE(w.window);
  w.window->state()->setRange(b.at(0), b.at(2));
  test::settle(*w.window);
  gui::LifetimeGraph* graph = w.window->lifetime()->graph();
  EXPECT_TRUE(graph->data().blocks.empty());
  EXPECT_TRUE(graph->message().startsWith("No blocks live")) << graph->message().toStdString();
}

// A finished recording without events (a PyTorch snapshot of an empty pool: pickle
// protocol 2 of {'segments': [], 'device_traces': []}) says so for good: "yet" had the user
// wait for events that never come.
TEST(LifetimeView, AFinishedRecordingWithoutEventsSaysSoWithoutYet) {
  test::TempDir dir;
  const std::string path = dir.file("empty.pickle");
  {
    static const char kEmpty[] =
        "\x80\x02}q\x00(X\x08\x00\x00\x00segmentsq\x01]q\x02X\r\x00\x00\x00device_tracesq"
        "\x03]q\x04u.";
    std::ofstream(path, std::ios::binary).write(kEmpty, sizeof kEmpty - 1);
  }
  auto w = test::open_window(path);
  ASSERT_TRUE(w.window);
  ASSERT_TRUE(test::wait_for([&] { return w.window->client()->status().loaded; }, "loaded"));
  test::settle(*w.window);
  EXPECT_EQ(w.window->lifetime()->graph()->message(),
            QStringLiteral("No blocks: the recording has no events."));
  EXPECT_EQ(w.window->curves()->chart()->noteText(),
            QStringLiteral("No memory events for this process and device in this recording"));
  EXPECT_EQ(w.window->findings()->emptyText(),
            QStringLiteral("The recording has no memory events: nothing to find"));
  w.window->showView("pool");
  test::settle(*w.window);
  EXPECT_EQ(w.window->pool()->summaryText(),
            QStringLiteral("No pool to show: the recording has no events."));
}

}  // namespace
}  // namespace memtap
