// The block and event tables, driven as a user drives them: the overview's range sets
// their length, a header click sorts, the filter text narrows, scrolling to the end shows
// the last rows, Ctrl+C copies the selection as TSV with a header, a selected row is the
// window's selected block (and back), and the top bar's device chooses the events.
#include <gtest/gtest.h>

#include <QClipboard>
#include <QGuiApplication>
#include <QHeaderView>

#include "monitor/gui/block_table_view.h"
#include "monitor/gui/event_table_view.h"
#include "monitor/gui/paged_table_model.h"
#include "monitor/gui/table_filter_bar.h"
#include "monitor/gui/top_bar.h"
#include "monitor/viewdata/event_pages.h"
#include "tests/unit/gui/gui_support.h"
#include "tests/unit/store/store_test_support.h"
#include "tests/unit/viewdata/recording_builder.h"

namespace memtap {
namespace {

constexpr int kBlocks = 500;  // more than a page (PagedTableModel::kPageRows)

// Block i: allocated at i ms, 16 * (i + 1) bytes, owner "weights" for every third, else
// "activations"; even blocks freed at i + 0.5 ms. 752 events: START_TRACE, 500 MALLOCs,
// 250 FREEs, STOP_TRACE.
std::string blocks_recording(const test::TempDir& dir, test::RecordingBuilder* b) {
  for (int i = 0; i < kBlocks; ++i) {
    const uint64_t addr = 0x100000 + uint64_t(i) * 0x1000;
    b->malloc(i, addr, 16 * uint64_t(i + 1), i % 3 == 0 ? "weights" : "activations");
    if (i % 2 == 0) b->free(i + 0.5, addr);
  }
  const std::string path = dir.file("blocks.db");
  b->write(path);
  return path;
}

// The window with `view` ("blocks", "events") in front, its first page shown.
test::OpenWindow open_table(const std::string& path, const char* view) {
  test::OpenWindow w = test::open_window(path);
  if (!w.window) return w;
  w.window->showView(view);
  test::settle(*w.window);
  return w;
}

void click_header(QTableView* table, int column) {
  QHeaderView* header = table->horizontalHeader();
  const QPoint at(header->sectionViewportPosition(column) + header->sectionSize(column) / 2,
                  header->height() / 2);
  QTest::mouseClick(header->viewport(), Qt::LeftButton, {}, at);
}

QString cell(gui::PagedTableModel* model, int row, int column) {
  const gui::TableRow* r = model->rowAt(row);
  return r != nullptr ? r->copy[column] : QStringLiteral("<not loaded>");
}

TEST(Tables, TheSelectedRangeSetsBothTablesLengths) {
  test::TempDir dir;
  test::RecordingBuilder b;
  auto w = open_table(blocks_recording(dir, &b), "blocks");
  ASSERT_TRUE(w.window);
  gui::BlockTableView* blocks = w.window->blockTable();
  EXPECT_EQ(blocks->model()->totalRows(), uint64_t(kBlocks));

  // Live at some moment of [100, 199.9] ms: the 50 odd blocks before 100 (never freed) and
  // blocks 100..199.
  w.window->state()->setRange(b.at(100), b.at(199.9));
  test::settle(*w.window);
  EXPECT_EQ(blocks->model()->totalRows(), 150u);
  EXPECT_TRUE(blocks->filterBar()->status()->text().startsWith("150 blocks live in"))
      << blocks->filterBar()->status()->text().toStdString();

  w.window->showView("events");
  test::settle(*w.window);
  gui::EventTableView* events = w.window->eventTable();
  EXPECT_EQ(events->model()->totalRows(), 150u);  // 100 MALLOCs, 50 FREEs
  EXPECT_EQ(events->filterBar()->status()->text(), "150 events in range");

  // Not tied to the range: every row.
  events->filterBar()->onlyRangeBox()->click();
  test::settle(*w.window);
  EXPECT_EQ(events->model()->totalRows(), 752u);
}

// The event table follows the top bar's device: GPU 0's blocks and kernels with the steps
// (rows of no device), not the host's heap rows, and the host's again on `cpu`.
// In the narrowest window the filter bar takes two rows rather than widen the window: the
// Events tab opens at the width the curves had, with its size fields and status line whole
// (before, the tab widened the window by 240 px and squeezed the size fields to "..."); in
// a wide window it is one row.
TEST(Tables, TheFilterBarTakesTwoRowsRatherThanWidenTheWindow) {
  test::TempDir dir;
  test::RecordingBuilder b;
  const std::string path = blocks_recording(dir, &b);
  auto w = test::open_window(path, 300, 600);  // below the minimum: the minimum
  ASSERT_TRUE(w.window);
  const int width = w.window->width();
  w.window->showView("events");
  test::settle(*w.window);
  EXPECT_EQ(w.window->width(), width);
  gui::TableFilterBar* bar = w.window->eventTable()->filterBar();
  EXPECT_TRUE(bar->twoRows());
  for (QWidget* field : std::initializer_list<QWidget*>{bar->minField(), bar->maxField(),
                                                        bar->textField(), bar->onlyRangeBox()}) {
    EXPECT_GE(field->width(), field->minimumSizeHint().width());
  }
  QLabel* status = bar->status();
  EXPECT_EQ(status->text(), "752 events in range");
  EXPECT_LE(status->fontMetrics().horizontalAdvance(status->text()),
            status->contentsRect().width());
  const int right = bar->mapTo(w.window.get(), QPoint(bar->width(), 0)).x();
  EXPECT_LE(right, w.window->width()) << "the bar within the window";

  w.window->resize(1800, 900);
  test::settle(*w.window);
  EXPECT_FALSE(bar->twoRows());
  // A status line grown past the room beside the fields takes the second row too (one
  // nearly as wide as the bar: it fits there, beside the check box).
  QString longer = status->text();
  while (status->fontMetrics().horizontalAdvance(longer + " more") < bar->width() - 260) {
    longer += " more";
  }
  status->setText(longer);
  test::settle(*w.window);
  EXPECT_TRUE(bar->twoRows());
  EXPECT_LE(status->fontMetrics().horizontalAdvance(status->text()), status->contentsRect().width())
      << status->contentsRect().width() << " px";
}

TEST(Tables, TheTopBarsDeviceChoosesTheEventsRows) {
  test::TempDir dir;
  test::RecordingBuilder b;
  for (int i = 0; i < 300; ++i) {
    b.malloc(i, 0x100000 + uint64_t(i) * 0x1000, 64);
    if (i % 10 == 0) b.device_malloc(i + 0.1, 0x7f0000000000 + uint64_t(i) * 0x100000, 4096, 0);
    if (i % 20 == 0) b.device_free(i + 0.2, 0x7f0000000000 + uint64_t(i) * 0x100000, 0);
    if (i % 30 == 0) b.kernel_launch(i + 0.3, "gemm_kernel", 0);
    if (i % 100 == 0) b.step(i + 0.4, uint64_t(i / 100 + 1));
  }
  const std::string path = dir.file("gpu.db");
  b.write(path);
  auto w = open_table(path, "events");
  ASSERT_TRUE(w.window);
  gui::EventTableView* events = w.window->eventTable();
  QComboBox* device = w.window->topBar()->deviceBox();
  EXPECT_EQ(device->currentText(), "device 0");  // the process's GPU, until someone chooses
  const int host = device->findText("host");
  device->setCurrentIndex(host);
  emit device->activated(host);
  test::settle(*w.window);
  EXPECT_EQ(events->model()->totalRows(), 300u + 5u);  // heap, steps, START/STOP_TRACE

  const int gpu = device->findText("device 0");
  ASSERT_GE(gpu, 0);
  device->setCurrentIndex(gpu);
  emit device->activated(gpu);
  test::settle(*w.window);
  EXPECT_EQ(w.window->state()->device(), 0);
  // 30 MALLOCs, 15 FREEs, 10 kernels; 3 steps, START_TRACE, STOP_TRACE.
  ASSERT_EQ(events->model()->totalRows(), 55u + 5u);
  EXPECT_EQ(events->filterBar()->status()->text(), "60 events in range");
  for (int row = 0; row < 60; ++row) {
    const QString id = cell(events->model(), row, int(viewdata::EventColumn::kDeviceId));
    EXPECT_TRUE(id == "0" || id == "N/A") << row << ": " << id.toStdString();
  }
  EXPECT_EQ(cell(events->model(), 1, int(viewdata::EventColumn::kEventType)), "HAL");
  // What someone looking at a GPU picks: its kernel launches.
  QComboBox* kind = events->kindBox();
  const int kernels = kind->findText("KERNEL_LAUNCH");
  ASSERT_GE(kernels, 0);
  EXPECT_GE(kind->findText("OOM_DETAIL"), 0);
  kind->setCurrentIndex(kernels);
  emit kind->activated(kernels);
  test::settle(*w.window);
  EXPECT_EQ(events->model()->totalRows(), 10u);
  kind->setCurrentIndex(0);
  emit kind->activated(0);

  device->setCurrentIndex(host);
  emit device->activated(host);
  test::settle(*w.window);
  EXPECT_EQ(events->model()->totalRows(), 305u);
}

TEST(Tables, AHeaderClickSorts) {
  test::TempDir dir;
  test::RecordingBuilder b;
  auto w = open_table(blocks_recording(dir, &b), "blocks");
  ASSERT_TRUE(w.window);
  gui::BlockTableView* blocks = w.window->blockTable();
  EXPECT_EQ(cell(blocks->model(), 0, 2), "16");
  click_header(blocks->table(), 2);  // Size, ascending
  click_header(blocks->table(), 2);  // descending
  test::settle(*w.window);
  EXPECT_EQ(blocks->model()->sortOrder(), Qt::DescendingOrder);
  EXPECT_EQ(cell(blocks->model(), 0, 2), "8000");
  EXPECT_EQ(cell(blocks->model(), 1, 2), "7984");

  w.window->showView("events");
  test::settle(*w.window);
  gui::EventTableView* events = w.window->eventTable();
  click_header(events->table(), int(viewdata::EventColumn::kSize));
  click_header(events->table(), int(viewdata::EventColumn::kSize));
  test::settle(*w.window);
  EXPECT_EQ(cell(events->model(), 0, int(viewdata::EventColumn::kSize)), "8000");
  EXPECT_EQ(cell(events->model(), 1, int(viewdata::EventColumn::kEvent)), "FREE");  // 7984 B
}

TEST(Tables, FilterTextNarrows) {
  test::TempDir dir;
  test::RecordingBuilder b;
  auto w = open_table(blocks_recording(dir, &b), "blocks");
  ASSERT_TRUE(w.window);
  gui::BlockTableView* blocks = w.window->blockTable();
  QTest::keyClicks(blocks->filterBar()->textField(), "WEIGHTS");
  QTest::keyClick(blocks->filterBar()->textField(), Qt::Key_Return);
  test::settle(*w.window);
  EXPECT_EQ(blocks->model()->totalRows(), 167u);
  EXPECT_EQ(w.window->state()->blockFilter(), "WEIGHTS");  // the shared filter follows

  // A finding sets the shared filter: the table follows.
  w.window->state()->setBlockFilter("activations");
  test::settle(*w.window);
  EXPECT_EQ(blocks->filterBar()->text(), "activations");
  EXPECT_EQ(blocks->model()->totalRows(), 333u);

  // Sizes narrow too: 1000..2000 B are blocks 62..124.
  QTest::keyClicks(blocks->filterBar()->minField(), "1000");
  QTest::keyClicks(blocks->filterBar()->maxField(), "2000");
  QTest::keyClick(blocks->filterBar()->maxField(), Qt::Key_Return);
  w.window->state()->setBlockFilter("");
  test::settle(*w.window);
  EXPECT_EQ(blocks->model()->totalRows(), 63u);

  w.window->showView("events");
  test::settle(*w.window);
  gui::EventTableView* events = w.window->eventTable();
  QTest::keyClicks(events->filterBar()->textField(), "weights");
  QTest::keyClick(events->filterBar()->textField(), Qt::Key_Return);
  test::settle(*w.window);
  EXPECT_EQ(events->model()->totalRows(), 167u + 84u);  // MALLOCs, and FREEs of even ones
}

TEST(Tables, ScrollingToTheEndShowsTheLastRows) {
  test::TempDir dir;
  test::RecordingBuilder b;
  auto w = open_table(blocks_recording(dir, &b), "events");
  ASSERT_TRUE(w.window);
  gui::EventTableView* events = w.window->eventTable();
  ASSERT_EQ(events->model()->totalRows(), 752u);
  EXPECT_EQ(events->model()->rowAt(751), nullptr);  // beyond the first page
  events->table()->scrollToBottom();
  test::wait_for([&] { return events->model()->rowAt(751) != nullptr; }, "the last page");
  EXPECT_EQ(cell(events->model(), 751, int(viewdata::EventColumn::kEventType)), "STOP_TRACE");
  EXPECT_EQ(cell(events->model(), 750, int(viewdata::EventColumn::kEvent)), "MALLOC");
  EXPECT_EQ(cell(events->model(), 750, int(viewdata::EventColumn::kSize)), "8000");

  // Sorted by size, the block table's end holds the smallest.
  w.window->showView("blocks");
  test::settle(*w.window);
  gui::BlockTableView* blocks = w.window->blockTable();
  click_header(blocks->table(), 2);
  click_header(blocks->table(), 2);
  test::settle(*w.window);
  blocks->table()->scrollToBottom();
  test::wait_for([&] { return blocks->model()->rowAt(kBlocks - 1) != nullptr; }, "the last page");
  EXPECT_EQ(cell(blocks->model(), kBlocks - 1, 2), "16");
  EXPECT_EQ(cell(blocks->model(), kBlocks - 2, 2), "32");
}

TEST(Tables, CtrlCCopiesTheSelectedRowsAsTsvWithAHeader) {
  test::TempDir dir;
  test::RecordingBuilder b;
  auto w = open_table(blocks_recording(dir, &b), "blocks");
  ASSERT_TRUE(w.window);
  QTableView* table = w.window->blockTable()->table();
  table->setFocus();
  QTest::mouseClick(table->viewport(), Qt::LeftButton, {},
                    table->visualRect(table->model()->index(0, 1)).center());
  QTest::mouseClick(table->viewport(), Qt::LeftButton, Qt::ShiftModifier,
                    table->visualRect(table->model()->index(2, 1)).center());
  QGuiApplication::clipboard()->clear();
  QTest::keyClick(table, Qt::Key_C, Qt::ControlModifier);
  const QStringList lines = QGuiApplication::clipboard()->text().split('\n', Qt::SkipEmptyParts);
  ASSERT_EQ(lines.size(), 4) << QGuiApplication::clipboard()->text().toStdString();
  EXPECT_EQ(lines[0],
            "id\tAddress\tSize\tLayer\towner\tName\tAllocated\tFreed\tLifetime\tThread\t"
            "allocation_id");
  EXPECT_EQ(lines[1],
            "1\t0x0000000000100000\t16\tHOST\tweights\t\t0.000000\t0.000500\t0.000500\t100\t1");
  EXPECT_TRUE(lines[3].startsWith("3\t0x0000000000102000\t48\tHOST\tactivations"))
      << lines[3].toStdString();

  w.window->showView("events");
  test::settle(*w.window);
  QTableView* events = w.window->eventTable()->table();
  events->setFocus();
  events->selectRow(1);
  QTest::keyClick(events, Qt::Key_C, Qt::ControlModifier);
  const QStringList event_lines =
      QGuiApplication::clipboard()->text().split('\n', Qt::SkipEmptyParts);
  ASSERT_EQ(event_lines.size(), 2);
  EXPECT_TRUE(event_lines[0].startsWith("ID\tEvent\tEvent Type\tName\tTimestamp\tProcess Id"));
  EXPECT_TRUE(event_lines[1].startsWith("1\tMALLOC\tHOST\t")) << event_lines[1].toStdString();
}

// A GPU's rows have the longest Event and Event Type spellings: each column is wide enough
// for every one of them, not "KERNEL_L…".
TEST(Tables, TheEventColumnsFitEveryKindsName) {
  test::TempDir dir;
  test::RecordingBuilder b;
  auto w = open_table(blocks_recording(dir, &b), "events");
  ASSERT_TRUE(w.window);
  QTableView* table = w.window->eventTable()->table();
  const QFontMetrics metrics = table->fontMetrics();
  const auto fits = [&](viewdata::EventColumn column, const char* text) {
    return table->columnWidth(int(column)) >= metrics.horizontalAdvance(QString(text)) + 8;
  };
  for (const char* event :
       {"MALLOC", "FREE_COMPLETED", "KERNEL_LAUNCH", "OOM_DETAIL", "START_TRACE", "SNAPSHOT"})
    EXPECT_TRUE(fits(viewdata::EventColumn::kEvent, event)) << event;
  for (const char* type : {"KERNEL_LAUNCH", "OOM_TOP_ALLOC", "OOM_TRIGGER", "PTA_WORKSPACE",
                           "HOST_PINNED", "START_TRACE", "MINDSPORE"})
    EXPECT_TRUE(fits(viewdata::EventColumn::kEventType, type)) << type;
}

TEST(Tables, ASelectedRowIsTheSelectedBlockAndBack) {
  test::TempDir dir;
  test::RecordingBuilder b;
  auto w = open_table(blocks_recording(dir, &b), "blocks");
  ASSERT_TRUE(w.window);
  gui::BlockTableView* blocks = w.window->blockTable();
  QTableView* table = blocks->table();
  QTest::mouseClick(table->viewport(), Qt::LeftButton, {},
                    table->visualRect(table->model()->index(3, 0)).center());
  ASSERT_NE(blocks->model()->rowAt(3), nullptr);
  EXPECT_EQ(w.window->state()->selectedBlock(), blocks->model()->rowAt(3)->key);

  w.window->state()->selectBlock(blocks->model()->rowAt(150)->key);
  QApplication::processEvents();
  EXPECT_EQ(table->currentIndex().row(), 150);
  EXPECT_TRUE(table->selectionModel()->isRowSelected(150, {}));
}

TEST(Tables, ARefreshAfterAnEmptyAnswerAsksAgain) {
  // The block table answers "no rows" while a replay loads; the refresh when it is loaded
  // must ask again, not keep the empty page it has (the table stayed empty, saying
  // "Reading the recording (6%)", after a 2.2 M-event recording had loaded).
  gui::PagedTableModel model({QStringLiteral("id")});
  uint64_t rows_now = 0;
  int fetches = 0;
  model.setFetch([&](size_t offset, size_t, uint64_t generation, bool) {
    ++fetches;
    gui::TablePage page;
    page.offset = offset;
    page.total_rows = rows_now;
    for (uint64_t i = offset; i < rows_now; ++i)
      page.rows.push_back({int64_t(i), {QString::number(i)}, {QString::number(i)}});
    model.deliver(generation, std::move(page));
  });
  model.reset();
  ASSERT_EQ(fetches, 1);
  EXPECT_EQ(model.rowCount(), 0);
  rows_now = 3;
  model.refresh();
  QApplication::processEvents();
  EXPECT_EQ(fetches, 2);
  EXPECT_EQ(model.rowCount(), 3);
}

}  // namespace
}  // namespace memtap
