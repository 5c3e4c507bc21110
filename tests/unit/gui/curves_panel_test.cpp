// The curves and the overview, driven as a user drives them: selecting Group By changes the
// series, the overview's selection moves the range, hovering tells the exact values.
#include "monitor/gui/curves_panel.h"

#include <gtest/gtest.h>

#include <QComboBox>
#include <QGraphicsScene>
#include <QGraphicsTextItem>
#include <QImage>
#include <QToolButton>
#include <QtCharts/QLineSeries>
#include <algorithm>
#include <cstdlib>
#include <utility>
#include <vector>

#include "monitor/gui/chart_style.h"
#include "monitor/gui/lifetime_view.h"
#include "monitor/gui/pool_view.h"
#include "monitor/gui/top_bar.h"
#include "tests/unit/gui/gui_support.h"
#include "tests/unit/store/store_test_support.h"
#include "tests/unit/viewdata/recording_builder.h"

namespace memtap {
namespace {

std::string owners_recording(const test::TempDir& dir, test::RecordingBuilder* b) {
  b->malloc(1, 0x1000, 1000, "weights");
  b->malloc(2, 0x2000, 3000, "activations");
  b->rss(3, 8000);
  b->free(5, 0x2000);
  const std::string path = dir.file("owners.db");
  b->write(path);
  return path;
}

// Chooses a Group By in the top bar as a user does, and waits for the curves.
void choose_group_by(const test::OpenWindow& w, timeline::GroupBy group_by) {
  QComboBox* box = w.window->topBar()->groupByBox();
  box->setCurrentIndex(box->findData(int(group_by)));
  emit box->activated(box->currentIndex());
  test::settle(*w.window);
}

TEST(CurvesPanel, GroupByChangesTheSeries) {
  test::TempDir dir;
  test::RecordingBuilder b;
  auto w = test::open_window(owners_recording(dir, &b));
  ASSERT_TRUE(w.window);
  gui::CurvesChart* chart = w.window->curves()->chart();
  EXPECT_EQ(chart->seriesNames(), QStringList({"Allocated", "Reserved", "Active", "App Reserved"}));

  choose_group_by(w, timeline::GroupBy::kOwner);
  EXPECT_EQ(chart->seriesNames(), QStringList({"activations", "weights"}));
}

// Nine owners with long names, at 1100 px: every name whole, in rows that wrap, clear of the
// Window menu and of the plot. (Qt Charts' legend elided them to "gradie..." in one row and
// ran under the menu.)
TEST(CurvesPanel, TheLegendShowsEveryNameWholeInRowsBesideTheWindowMenu) {
  test::TempDir dir;
  test::RecordingBuilder b;
  const std::vector<std::string> owners = {"model.encoder.layer0.attention",
                                           "model.encoder.layer1.mlp",
                                           "optimizer.state",
                                           "activations",
                                           "dataloader.batch",
                                           "gradients",
                                           "weights",
                                           "kv_cache",
                                           "loss"};
  uint64_t address = 0x1000;
  for (size_t i = 0; i < owners.size(); ++i) {
    b.malloc(int(1 + i), address, 1000 * (i + 1), owners[i]);
    address += 0x100000;
  }
  const std::string path = dir.file("nine_owners.db");
  b.write(path);
  auto w = test::open_window(path, 1100, 800);
  ASSERT_TRUE(w.window);
  choose_group_by(w, timeline::GroupBy::kOwner);

  gui::CurvesPanel* panel = w.window->curves();
  gui::CurvesLegend* legend = panel->legend();
  // Nine groups: all drawn, none summed as "(1 others)".
  ASSERT_EQ(legend->names().size(), 9);
  EXPECT_EQ(legend->names(), panel->chart()->seriesNames());
  const QRect legend_rect(legend->mapTo(panel, QPoint(0, 0)), legend->size());
  QComboBox* menu = panel->windowWidthBox();
  const QRect menu_rect(menu->mapTo(panel, QPoint(0, 0)), menu->size());
  EXPECT_FALSE(legend_rect.intersects(menu_rect));
  const int plot_top = panel->chart()->mapTo(panel, QPoint(0, 0)).y() +
                       int(panel->chart()->chart()->plotArea().top());
  std::vector<QRect> entries;
  for (const std::string& owner : owners) {
    QToolButton* entry = legend->entry(QString::fromStdString(owner));
    ASSERT_NE(entry, nullptr) << owner;
    EXPECT_EQ(entry->text().toStdString(), owner);
    EXPECT_GE(entry->width(), entry->sizeHint().width()) << owner;
    const QRect r(entry->mapTo(panel, QPoint(0, 0)), entry->size());
    EXPECT_TRUE(legend_rect.contains(r)) << owner;
    EXPECT_LT(r.bottom(), plot_top) << owner;
    for (const QRect& other : entries) EXPECT_FALSE(r.intersects(other)) << owner;
    entries.push_back(r);
  }
  EXPECT_GE(legend->height(), 2 * entries.front().height()) << "the names need more than a row";
}

// A click on an entry hides its line (the hover leaves it out, the entry stays, greyed);
// another shows it again.
TEST(CurvesPanel, ALegendEntryHidesAndShowsItsLine) {
  test::TempDir dir;
  test::RecordingBuilder b;
  auto w = test::open_window(owners_recording(dir, &b));
  ASSERT_TRUE(w.window);
  gui::CurvesChart* chart = w.window->curves()->chart();
  gui::CurvesLegend* legend = w.window->curves()->legend();
  QToolButton* reserved = legend->entry("Reserved");
  ASSERT_NE(reserved, nullptr);
  const QColor text_shown = reserved->palette().color(QPalette::ButtonText);

  reserved->click();
  EXPECT_EQ(chart->seriesNames(), QStringList({"Allocated", "Active", "App Reserved"}));
  EXPECT_FALSE(chart->hoverText(b.at(2.2)).contains("\nReserved: ")) << "the hidden line";
  EXPECT_EQ(legend->names(), QStringList({"Allocated", "Reserved", "Active", "App Reserved"}));
  EXPECT_NE(legend->entry("Reserved")->palette().color(QPalette::ButtonText), text_shown);

  legend->entry("Reserved")->click();
  EXPECT_EQ(chart->seriesNames(), QStringList({"Allocated", "Reserved", "Active", "App Reserved"}));
  EXPECT_TRUE(chart->hoverText(b.at(2.2)).contains("\nReserved: "));
  EXPECT_EQ(legend->entry("Reserved")->palette().color(QPalette::ButtonText), text_shown);
}

TEST(CurvesPanel, HoverTellsTheExactValuesAtThatTime) {
  test::TempDir dir;
  test::RecordingBuilder b;
  auto w = test::open_window(owners_recording(dir, &b));
  ASSERT_TRUE(w.window);
  const QString text = w.window->curves()->chart()->hoverText(b.at(2.2));
  EXPECT_TRUE(text.contains("+0.002 s")) << text.toStdString();
  EXPECT_TRUE(text.contains("Allocated: 3.9 KiB (4,000 B)")) << text.toStdString();
}

TEST(CurvesPanel, TheRangeSelectionSetsTheChartsAxis) {
  test::TempDir dir;
  test::RecordingBuilder b;
  auto w = test::open_window(owners_recording(dir, &b));
  ASSERT_TRUE(w.window);
  w.window->state()->setRange(b.at(1.5), b.at(2.5));
  test::settle(*w.window);
  const viewdata::CurvesData& d = w.window->curves()->chart()->data();
  EXPECT_EQ(d.t0_ns, b.at(1.5));
  EXPECT_EQ(d.t1_ns, b.at(2.5));
  EXPECT_FALSE(w.window->state()->following());
}

// The time axes' labels, as Qt Charts laid them out: (text, x) of those shown below the
// plot, and whether any shown anywhere in the chart is elided.
struct AxisLabels {
  std::vector<std::pair<QString, double>> time;
  bool elided = false;
};
AxisLabels axis_labels(QChart* chart) {
  AxisLabels out;
  const QRectF plot = chart->plotArea();
  for (QGraphicsItem* item : chart->scene()->items()) {
    auto* text = dynamic_cast<QGraphicsTextItem*>(item);
    if (text == nullptr || !text->isVisible() || text->toPlainText().isEmpty()) continue;
    const QString s = text->toPlainText();
    if (s.endsWith("...") || s.endsWith(QChar(0x2026))) out.elided = true;
    const QRectF r = text->sceneBoundingRect();
    bool number = false;
    s.toDouble(&number);
    if (number && r.top() >= plot.bottom() - 1) out.time.push_back({s, r.center().x()});
  }
  std::sort(out.time.begin(), out.time.end(),
            [](const auto& a, const auto& b) { return a.second < b.second; });
  return out;
}

// Every label of the time axes whole, and at least two of them, at any zoom and width:
// Qt Charts elides a label wider than the axis' width over its tick count, and zoomed to
// 25 ms at 0.14 s the axis read "0.14... 0.14... 0.14...", at 700 px even the whole second.
TEST(CurvesPanel, TheTimeAxesLabelsAreWholeAtAnyZoomAndWidth) {
  test::TempDir dir;
  test::RecordingBuilder b;
  b.malloc(0, 0x1000, 1000);
  b.malloc(500, 0x2000, 4000);
  b.free(1000, 0x1000);
  const std::string path = dir.file("second.db");
  b.write(path);
  for (int width : {700, 1100, 1800}) {
    auto w = test::open_window(path, width, 800);
    ASSERT_TRUE(w.window);
    for (const auto& [from, to] : std::vector<std::pair<double, double>>{
             {0, 1000}, {140, 165}, {500.2, 500.6}, {999.99, 1000}}) {
      SCOPED_TRACE(QStringLiteral("%1 px, %2 to %3 ms").arg(width).arg(from).arg(to).toStdString());
      w.window->state()->setRange(b.at(from), b.at(to));
      test::settle(*w.window);
      for (QChart* chart :
           {w.window->curves()->chart()->chart(), w.window->curves()->overview()->chart()}) {
        const AxisLabels labels = axis_labels(chart);
        EXPECT_FALSE(labels.elided);
        EXPECT_GE(labels.time.size(), 2u) << "a scale to read";
        // Each label different, in order: the decimals tell the ticks apart.
        for (size_t i = 1; i < labels.time.size(); ++i) {
          EXPECT_LT(labels.time[i - 1].first.toDouble(), labels.time[i].first.toDouble())
              << labels.time[i - 1].first.toStdString() << " then "
              << labels.time[i].first.toStdString();
        }
      }
    }
  }
}

// The Window menu in the curves' top-right corner: a fixed width that ends where the range
// ends, and All, the whole session.
TEST(CurvesPanel, TheWindowMenuSetsAFixedWidthAndAllTheWholeSession) {
  test::TempDir dir;
  test::RecordingBuilder b;
  b.malloc(1, 0x1000, 1000, "weights");
  b.malloc(3000, 0x2000, 1000, "weights");
  const std::string path = dir.file("three_seconds.db");
  b.write(path);
  auto w = test::open_window(path);
  ASSERT_TRUE(w.window);
  gui::ViewState* state = w.window->state();
  gui::CurvesChart* chart = w.window->curves()->chart();
  QComboBox* box = w.window->curves()->windowWidthBox();
  ASSERT_TRUE(box->isVisible());
  // Above the chart, at the right.
  gui::CurvesPanel* panel = w.window->curves();
  const QRect menu(box->mapTo(panel, QPoint(0, 0)), box->size());
  EXPECT_GT(menu.right(), panel->width() * 3 / 4);
  EXPECT_LE(menu.bottom(), chart->mapTo(panel, QPoint(0, 0)).y());

  auto choose = [&](const QString& text) {
    const int index = box->findText(text);
    ASSERT_GE(index, 0) << text.toStdString();
    box->setCurrentIndex(index);
    emit box->activated(index);
    test::settle(*w.window);
  };
  choose(QStringLiteral("1 s"));
  EXPECT_EQ(state->t1(), state->sessionEnd());
  EXPECT_EQ(state->t1() - state->t0(), 1000000000);
  EXPECT_EQ(chart->data().t0_ns, state->t0());
  choose(QStringLiteral("All"));
  EXPECT_EQ(state->t0(), state->origin());
  EXPECT_EQ(state->t1(), state->sessionEnd());
  EXPECT_EQ(chart->data().t0_ns, state->origin());
}

// Whether a pixel is within a small distance of `color`.
bool near(const QColor& c, const QColor& color) {
  return std::abs(c.red() - color.red()) + std::abs(c.green() - color.green()) +
             std::abs(c.blue() - color.blue()) <
         40;
}

// On the host Active equals Allocated all along, and Active is drawn over it: its dashes
// must leave room for Allocated to be seen along a good part of the line (Qt's DashLine,
// 3:1 with square caps, left it a sixth, and the line read as Active alone). Counted in
// columns of the chart's pixels: of those the two lines pass through, those of Allocated
// alone, the gaps between Active's dashes. Not in pixels: a 1.5 px dash covers one row or
// two of the 2 px line depending on where the line falls between two rows, so pixel counts
// moved with the chart's height (703 Allocated against 411 Active pixels, then 557 against
// 501 with the legend above the chart, for the same dashes).
TEST(CurvesPanel, AllocatedShowsThroughActiveWhereTheyCoincide) {
  test::TempDir dir;
  test::RecordingBuilder b;
  b.malloc(1, 0x1000, 3000);
  b.malloc(2, 0x7f0000000000, 8000, "", "", /*mmap=*/true);  // Reserved above them
  b.malloc(3, 0x2000, 2000);
  b.free(4, 0x1000);
  const std::string path = dir.file("heap_and_mapping.db");
  b.write(path);
  auto w = test::open_window(path);
  ASSERT_TRUE(w.window);
  gui::CurvesChart* chart = w.window->curves()->chart();
  const QImage image = chart->grab().toImage();
  const QColor allocated = gui::curve_color("Allocated", 0), active = gui::curve_color("Active", 2);
  int line_columns = 0, gap_columns = 0;
  for (int x = 0; x < image.width(); ++x) {
    bool has_allocated = false, has_active = false;
    for (int y = 0; y < image.height(); ++y) {
      has_allocated = has_allocated || near(image.pixelColor(x, y), allocated);
      has_active = has_active || near(image.pixelColor(x, y), active);
    }
    line_columns += has_allocated || has_active;
    gap_columns += has_allocated && !has_active;
  }
  ASSERT_GT(line_columns, 100);
  // Even dashes: 168 of 449 columns (37 %; their ends take some of the gaps); Qt's
  // DashLine: 75 (17 %).
  EXPECT_GT(gap_columns * 100, line_columns * 27)
      << "Allocated alone in " << gap_columns << " of " << line_columns << " columns";
}

// A chart's plot area, left and right, in its window's coordinates.
std::pair<int, int> plot_in_window(QChartView* view) {
  const QRect r = view->mapFromScene(view->chart()->plotArea()).boundingRect();
  return {view->viewport()->mapTo(view->window(), r.topLeft()).x(),
          view->viewport()->mapTo(view->window(), r.topRight()).x()};
}

// The window over owners_recording() with the lifetime graph in front, drawn.
test::OpenWindow open_on_lifetime(const test::TempDir& dir, test::RecordingBuilder* b) {
  test::OpenWindow w = test::open_window(owners_recording(dir, b));
  if (!w.window) return w;
  w.window->showView("lifetime");
  test::settle(*w.window);
  return w;
}

// The id of the block of `owner` in the graph's answer (-1: none).
int64_t block_of(const viewdata::LifetimeData& d, const std::string& owner) {
  for (const auto& block : d.blocks)
    if (block.owner == owner) return block.id;
  return -1;
}

// One instant lies at one x in the curves, the overview under them and the lifetime graph:
// the curves' plot area starts where the graph's addresses leave room, not at its own labels.
TEST(CurvesPanel, TheCurvesTheOverviewAndTheLifetimeGraphShareOneTimeAxis) {
  test::TempDir dir;
  test::RecordingBuilder b;
  auto w = open_on_lifetime(dir, &b);
  ASSERT_TRUE(w.window);
  gui::ViewState* state = w.window->state();
  const int left = state->timeAxisLeft();
  const int right = state->timeAxisRight();
  ASSERT_GT(right, left + 100);
  ASSERT_GT(state->timeAxisMinLeft(), 0);
  EXPECT_GE(left, state->timeAxisMinLeft() - 1);

  const auto [chart_left, chart_right] = plot_in_window(w.window->curves()->chart());
  EXPECT_EQ(chart_left, left);
  EXPECT_EQ(chart_right, right);
  const auto [overview_left, overview_right] = plot_in_window(w.window->curves()->overview());
  EXPECT_NEAR(overview_left, left, 1);
  EXPECT_NEAR(overview_right, right, 1);

  // "weights", allocated at 1 ms and live to the end, in the graph: from the x of 1 ms on
  // the curves' axis to its right edge.
  gui::LifetimeGraph* graph = w.window->lifetime()->graph();
  const viewdata::LifetimeData& d = graph->data();
  const int64_t weights = block_of(d, "weights");
  ASSERT_GE(weights, 0);
  const QRect r = graph->blockRect(weights);
  ASSERT_FALSE(r.isEmpty());
  const double x_of_1ms =
      left + double(b.at(1) - d.t0_ns) / double(d.t1_ns - d.t0_ns) * (right - left);
  EXPECT_NEAR(graph->mapTo(w.window.get(), r.topLeft()).x(), x_of_1ms, 1.5);
  EXPECT_NEAR(graph->mapTo(w.window.get(), r.topRight()).x(), right, 1.5);
}

// A window opened on another view (memtap monitor --view pool) has its time axis where the
// lifetime graph needs it from the start: bringing the graph forward later moves nothing.
TEST(CurvesPanel, AWindowOpenedOnAnotherViewDoesNotMoveItsTimeAxisLater) {
  test::TempDir dir;
  test::RecordingBuilder b;
  std::string error;
  auto source = viewdata::open_recording(owners_recording(dir, &b), &error);
  ASSERT_TRUE(source) << error;
  gui::MainWindow window(source.get());
  window.resize(1400, 900);
  window.showView("pool");  // before show(), as memtap-gui's main does
  window.show();
  ASSERT_TRUE(test::wait_for([&] { return window.settled(); }, "the window to settle"));
  EXPECT_EQ(window.tabs()->currentWidget(), window.pool());
  gui::ViewState* state = window.state();
  ASSERT_GT(state->timeAxisMinLeft(), 0);
  const int left = state->timeAxisLeft();
  EXPECT_GE(left, state->timeAxisMinLeft() - 1);
  window.showView("lifetime");
  test::settle(window);
  EXPECT_EQ(state->timeAxisLeft(), left);
}

// An answer of the lifetime graph that covers less than the curves show (live, the curves
// move on while the blocks are read; after a zoom, before the next answer) is drawn at the
// curves' scale, not stretched over the width, and what it does not cover is hatched.
TEST(CurvesPanel, TheLifetimeGraphDrawsAnOlderAnswerOnTheCurvesAxis) {
  test::TempDir dir;
  test::RecordingBuilder b;
  auto w = open_on_lifetime(dir, &b);
  ASSERT_TRUE(w.window);
  gui::ViewState* state = w.window->state();
  gui::LifetimeGraph* graph = w.window->lifetime()->graph();
  viewdata::LifetimeData older = graph->data();
  ASSERT_EQ(older.t1_ns, state->timeAxisT1());
  const int64_t t0 = state->timeAxisT0(), t1 = state->timeAxisT1();
  older.t1_ns = t0 + (t1 - t0) / 2;  // as if read when the session was half as long
  const int64_t weights = block_of(older, "weights");
  ASSERT_GE(weights, 0);
  graph->show(older);

  const int left = state->timeAxisLeft(), right = state->timeAxisRight();
  auto x_of = [&](int64_t t) { return left + double(t - t0) / double(t1 - t0) * (right - left); };
  const QRect r = graph->blockRect(weights);
  ASSERT_FALSE(r.isEmpty());
  EXPECT_NEAR(graph->mapTo(w.window.get(), r.topLeft()).x(), x_of(b.at(1)), 1.5);
  // Live to the end of what the answer covers: half way, not the right edge.
  EXPECT_NEAR(graph->mapTo(w.window.get(), r.topRight()).x(), x_of(older.t1_ns), 1.5);

  // Hatched beyond it: grey pixels in the uncovered half, none in the covered one's empty
  // part above the blocks.
  const QImage image = graph->grab().toImage();
  const int covered_x = graph->mapFrom(w.window.get(), QPoint(int(x_of(older.t1_ns)), 0)).x();
  const int axis_left = graph->mapFrom(w.window.get(), QPoint(left, 0)).x();
  const int axis_right = graph->mapFrom(w.window.get(), QPoint(right, 0)).x();
  const int y = r.top() - 6;  // above the block, inside the plot
  ASSERT_GT(y, 0);
  auto greys = [&](int from, int to) {
    int n = 0;
    for (int x = from; x < to; ++x) n += qGray(image.pixel(x, y)) < 235;
    return n;
  };
  EXPECT_GT(greys(covered_x + 4, axis_right - 4), 0);
  EXPECT_EQ(greys(axis_left + 4, covered_x - 4), 0);
}

}  // namespace
}  // namespace memtap

namespace memtap {
namespace {

TEST(CurvesPanel, ZoomedIntoThePastTheChartShowsEveryPoint) {
  test::TempDir dir;
  test::RecordingBuilder b;
  for (int i = 0; i < 300000; ++i) b.malloc(i * 0.01, 0x10000 + uint64_t(i) * 64, 16);
  const std::string path = dir.file("long.db");
  b.write(path);
  auto w = test::open_window(path);
  ASSERT_TRUE(w.window);
  w.window->state()->setRange(b.at(100), b.at(110));  // older than the engine's window
  gui::CurvesChart* chart = w.window->curves()->chart();
  ASSERT_TRUE(test::wait_for(
      [&] {
        const viewdata::CurvesData& d = chart->data();
        return d.t0_ns == b.at(100) && !d.lines.empty() && d.lines[0].from_store;
      },
      "the points from the recording"));
  EXPECT_FALSE(viewdata::needs_detail(chart->data()));
  EXPECT_TRUE(chart->hoverText(b.at(105.001)).contains("168,016 B"))  // 10,501 blocks of 16 B
      << chart->hoverText(b.at(105.001)).toStdString();

  // Zoomed out again: the min/max bands come back, and the legend still names only lines.
  gui::ViewState* state = w.window->state();
  state->setRange(state->origin(), state->sessionEnd());
  ASSERT_TRUE(test::wait_for(
      [&] {
        const viewdata::CurvesData& d = chart->data();
        return d.t0_ns == state->origin() && !d.lines.empty() &&
               d.lines[0].resolution == timeline::Resolution::kEnvelope;
      },
      "the whole session as an envelope"));
  EXPECT_EQ(w.window->curves()->legend()->names(), chart->seriesNames());
}

}  // namespace
}  // namespace memtap

namespace memtap {
namespace {

TEST(CurvesPanel, SelectingAProcessShowsItsCurves) {
  test::TempDir dir;
  test::RecordingBuilder b(100);
  b.malloc(1, 0x1000, 1000);
  b.use_pid(200);
  b.malloc(2, 0x9000, 7000);
  const std::string path = dir.file("ranks.db");
  b.write(path);
  auto w = test::open_window(path);
  ASSERT_TRUE(w.window);
  QComboBox* process = w.window->topBar()->processBox();
  ASSERT_EQ(process->count(), 2);
  EXPECT_EQ(process->itemText(0), "rank 0/2 · pid 100 @ testhost");
  EXPECT_EQ(process->itemText(1), "rank 1/2 · pid 200 @ testhost");
  EXPECT_EQ(w.window->state()->pid(), 100u);
  EXPECT_EQ(w.window->curves()->chart()->data().lines[0].peak_bytes, 1000);

  process->setCurrentIndex(1);
  emit process->activated(1);
  test::settle(*w.window);
  EXPECT_EQ(w.window->state()->pid(), 200u);
  EXPECT_EQ(w.window->curves()->chart()->data().lines[0].peak_bytes, 7000);
  EXPECT_EQ(w.window->topBar()->deviceBox()->currentText(), "host");
}

// A distributed run's launcher (torchrun, or a script that starts the ranks) comes first
// and holds a few MiB of interpreter: the window opens on rank 0, until someone picks.
TEST(CurvesPanel, ADistributedRunOpensOnRankZeroNotItsLauncher) {
  test::TempDir dir;
  test::RecordingBuilder b(100);
  b.malloc(1, 0x1000, 1000);
  b.use_pid(200);
  b.malloc(2, 0x9000, 7000);
  b.use_pid(300);
  b.malloc(3, 0x5000, 5000);
  b.set_rank(100, -1);
  b.set_rank(200, 1);
  b.set_rank(300, 0);
  const std::string path = dir.file("launched.db");
  b.write(path);
  auto w = test::open_window(path);
  ASSERT_TRUE(w.window);
  QComboBox* process = w.window->topBar()->processBox();
  ASSERT_EQ(process->count(), 3);
  EXPECT_EQ(w.window->state()->pid(), 300u);
  EXPECT_EQ(process->currentText(), "rank 0/3 · pid 300 @ testhost");
  test::settle(*w.window);
  EXPECT_EQ(w.window->curves()->chart()->data().lines[0].peak_bytes, 5000);

  // A choice stands: the launcher, picked, stays picked.
  process->setCurrentIndex(0);
  emit process->activated(0);
  w.window->refresh();
  test::settle(*w.window);
  EXPECT_EQ(w.window->state()->pid(), 100u);
  EXPECT_EQ(w.window->curves()->chart()->data().lines[0].peak_bytes, 1000);
}

TEST(CurvesPanel, APreferredDeviceSelectsTheProcessThatHasIt) {
  test::TempDir dir;
  test::RecordingBuilder b(100);
  b.malloc(1, 0x1000, 1000);
  b.use_pid(200);
  b.malloc(2, 0x9000, 7000);
  b.device_malloc(3, 0x7f0000000000, 5 << 20, 1);
  const std::string path = dir.file("gpu.db");
  b.write(path);
  auto w = test::open_window(path);
  ASSERT_TRUE(w.window);
  EXPECT_EQ(w.window->state()->pid(), 100u);
  EXPECT_EQ(w.window->topBar()->deviceBox()->currentText(), "host");

  w.window->preferDevice(1);  // --device 1
  test::settle(*w.window);
  EXPECT_EQ(w.window->state()->pid(), 200u);
  EXPECT_EQ(w.window->state()->device(), 1);
  EXPECT_EQ(w.window->topBar()->deviceBox()->currentText(), "device 1");
  EXPECT_EQ(w.window->curves()->chart()->data().lines[0].peak_bytes, 5 << 20);
}

// A GPU training run opens on its GPU, not on the interpreter's heap beside it; once
// someone picks the host in the Device box, the window leaves it there.
TEST(CurvesPanel, AProcessWithAGpuOpensOnItUntilSomeoneChoosesADevice) {
  test::TempDir dir;
  test::RecordingBuilder b(100);
  b.malloc(1, 0x1000, 1000);
  b.device_malloc(2, 0x7f0000000000, 5 << 20, 1);
  b.device_malloc(3, 0x7f1000000000, 3 << 20, 2);
  const std::string path = dir.file("gpu.db");
  b.write(path);
  auto w = test::open_window(path);
  ASSERT_TRUE(w.window);
  QComboBox* device = w.window->topBar()->deviceBox();
  EXPECT_EQ(device->currentText(), "device 1");  // its first GPU
  EXPECT_EQ(w.window->state()->device(), 1);
  EXPECT_EQ(w.window->curves()->chart()->data().lines[0].peak_bytes, 5 << 20);

  const int host = device->findText("host");
  ASSERT_GE(host, 0);
  device->setCurrentIndex(host);
  emit device->activated(host);
  test::settle(*w.window);
  EXPECT_EQ(w.window->state()->device(), kHostDevice);
  EXPECT_EQ(w.window->curves()->chart()->data().lines[0].peak_bytes, 1000);
  // The devices listed again (a process picked, new scopes): the choice stands.
  QComboBox* process = w.window->topBar()->processBox();
  emit process->activated(process->currentIndex());
  test::settle(*w.window);
  EXPECT_EQ(device->currentText(), "host");
  EXPECT_EQ(w.window->state()->device(), kHostDevice);
}

// --device 1 --at peak on a recording small enough to be loaded before the window is made:
// the cursor goes to GPU 1's Allocated peak. main.cpp connected --at to sourceDone after
// the window's first refresh had already emitted it, so nothing moved; and asked before
// the top bar chose the device, it would have found the host's peak.
TEST(CurvesPanel, AtPeakOnAPreferredDeviceGoesToThatDevicesPeak) {
  test::TempDir dir;
  test::RecordingBuilder b;
  b.malloc(1, 0x1000, 1000);
  b.device_malloc(3, 0x7f0000000000, 5 << 20, 1);
  b.device_free(4, 0x7f0000000000, 1);
  b.malloc(5, 0x2000, 100);  // the host's peak comes later
  const std::string path = dir.file("gpu.db");
  b.write(path);
  std::string error;
  auto source = viewdata::open_recording(path, &error);
  ASSERT_NE(source, nullptr) << error;
  ASSERT_TRUE(test::wait_for([&] { return source->status().loaded; }, "the load"));
  gui::MainWindow window(source.get());
  window.resize(1400, 900);
  window.preferDevice(1);            // --device 1
  window.cursorOnceLoaded(true, 0);  // --at peak
  window.show();
  ASSERT_TRUE(test::wait_for([&] { return window.state()->cursor() == b.at(3); },
                             "the cursor at GPU 1's peak"));
  EXPECT_EQ(window.state()->device(), 1);
}

// --device 5 of a recording that has the host and GPU 0, and --at past its end: the window
// showed GPU 0 and the last instant without a word. It names what is missing and what the
// recording has (main.cpp says it on stderr, and a --screenshot run exits with 2).
TEST(CurvesPanel, ADeviceOrInstantTheRecordingLacksIsSaidWithWhatItHas) {
  test::TempDir dir;
  test::RecordingBuilder b;
  b.malloc(1, 0x1000, 1000);
  b.device_malloc(3, 0x7f0000000000, 5 << 20, 0);
  b.malloc(10, 0x2000, 100);
  const std::string path = dir.file("gpu.db");
  b.write(path);
  auto w = test::open_window(path);
  ASSERT_TRUE(w.window);
  EXPECT_TRUE(w.window->missingRequests("gpu.db").isEmpty());

  w.window->preferDevice(0);                                   // --device 0
  w.window->cursorOnceLoaded(false, b.at(10) - b.start_ns());  // --at 10ms: the end
  test::settle(*w.window);
  EXPECT_TRUE(w.window->missingRequests("gpu.db").isEmpty())
      << w.window->missingRequests("gpu.db").join('\n').toStdString();

  w.window->preferDevice(5);                         // --device 5
  w.window->cursorOnceLoaded(false, 2'000'000'000);  // --at 2s
  test::settle(*w.window);
  EXPECT_EQ(w.window->missingRequests("gpu.db").join('\n').toStdString(),
            "gpu.db: no device 5 in the recording (its devices: cpu, 0)\n"
            "gpu.db: --at 2.000 s is past the recording's end (10.0 ms after its start)");
}

// --range: once loaded, the span every view shows; one that begins past the end is said.
TEST(CurvesPanel, ARangeAskedOnTheCommandLineIsTheRangeShown) {
  test::TempDir dir;
  test::RecordingBuilder b;
  for (int i = 0; i < 10; ++i) b.malloc(i * 10, 0x1000 + uint64_t(i) * 0x100, 1000);
  const std::string path = dir.file("r.db");
  b.write(path);
  auto w = test::open_window(path);
  ASSERT_TRUE(w.window);
  w.window->rangeOnceLoaded(20'000'000, 50'000'000);  // --range 20ms..50ms
  test::settle(*w.window);
  EXPECT_EQ(w.window->state()->t0(), b.at(20));
  EXPECT_EQ(w.window->state()->t1(), b.at(50));
  EXPECT_TRUE(w.window->missingRequests("r.db").isEmpty());
  w.window->rangeOnceLoaded(60'000'000, 500'000'000);  // to past the end: cut there
  test::settle(*w.window);
  EXPECT_EQ(w.window->state()->t0(), b.at(60));
  EXPECT_EQ(w.window->state()->t1(), b.at(90));
  w.window->rangeOnceLoaded(2'000'000'000, 3'000'000'000);  // --range 2s..3s
  test::settle(*w.window);
  EXPECT_EQ(w.window->missingRequests("r.db").join('\n').toStdString(),
            "r.db: --range begins at 2.000 s, past the recording's end (90.0 ms after its "
            "start)");
}

// A GPU without a framework pool draws its four curves as one line: the note says so, and
// says nothing on the host, whose curves differ.
TEST(CurvesPanel, TheNoteNamesTheCurvesThatAreOneLine) {
  test::TempDir dir;
  test::RecordingBuilder b;
  test::host_and_hal_only_gpu(b);
  const std::string path = dir.file("gpu.db");
  b.write(path);
  auto w = test::open_window(path);
  ASSERT_TRUE(w.window);
  w.window->preferDevice(kHostDevice);  // --device cpu
  test::settle(*w.window);
  EXPECT_EQ(w.window->state()->device(), kHostDevice);
  EXPECT_FALSE(w.window->curves()->chart()->noteText().contains(" = "))
      << w.window->curves()->chart()->noteText().toStdString();

  w.window->preferDevice(0);
  test::settle(*w.window);
  ASSERT_EQ(w.window->state()->device(), 0);
  EXPECT_TRUE(w.window->curves()->chart()->noteText().startsWith(
      "Allocated = Reserved = Active = App Reserved on this device: no framework pool is "
      "recorded"))
      << w.window->curves()->chart()->noteText().toStdString();
}

// The note hides none of the lines: a device whose pool is full from the start (a snapshot
// taken at an OOM) runs its line through the plot's top-left corner, where the note was,
// under it; the note goes to a corner the lines leave free.
TEST(CurvesPanel, TheNoteHidesNoLine) {
  test::TempDir dir;
  test::RecordingBuilder b;
  b.device_malloc(0, 0x7f0000000000, 11 << 20, 0);
  b.device_malloc(50, 0x7f0001000000, 1 << 10, 0);
  const std::string path = dir.file("full.db");
  b.write(path);
  auto w = test::open_window(path);
  ASSERT_TRUE(w.window);
  w.window->preferDevice(0);
  test::settle(*w.window);
  gui::CurvesChart* chart = w.window->curves()->chart();
  ASSERT_TRUE(chart->noteText().startsWith("Allocated = Reserved"))
      << chart->noteText().toStdString();
  const QRectF note = chart->noteRect();
  size_t segments = 0;
  for (QAbstractSeries* series : chart->chart()->series()) {
    auto* line = qobject_cast<QLineSeries*>(series);
    if (line == nullptr || !line->isVisible()) continue;
    const QList<QPointF> points = line->points();
    const auto at = [&](const QPointF& p) {
      return QPointF(
          chart->mapFromScene(chart->chart()->mapToScene(chart->chart()->mapToPosition(p, line))));
    };
    for (qsizetype i = 1; i < points.size(); ++i) {
      const QRectF box =
          QRectF(at(points[i - 1]), at(points[i])).normalized().adjusted(-1, -1, 1, 1);
      EXPECT_FALSE(box.intersects(note)) << "a segment at " << box.top() << " px under the note at "
                                         << note.top() << "-" << note.bottom();
      ++segments;
    }
  }
  EXPECT_GT(segments, 0u);
}

}  // namespace
}  // namespace memtap
