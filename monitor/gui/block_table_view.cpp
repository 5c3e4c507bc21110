// See block_table_view.h.
#include "monitor/gui/block_table_view.h"

#include <QItemSelectionModel>
#include <QLocale>
#include <QVBoxLayout>

#include "monitor/gui/count_text.h"
#include "monitor/report/units.h"
#include "monitor/viewdata/labels.h"

namespace memtap::gui {

namespace {

using viewdata::BlockColumn;

// The columns, in order, with what each sorts by.
struct Column {
  const char* header;
  BlockColumn sort;
  const char* sample;  // a typical cell, for the column's width
};
constexpr Column kColumns[] = {
    {"id", BlockColumn::kId, "1234567"},
    {"Address", BlockColumn::kAddr, "0x00007f12345678a0"},
    {"Size", BlockColumn::kSize, "1023.9 MiB"},
    {"Layer", BlockColumn::kLayer, "HOST mmap"},
    {"owner", BlockColumn::kOwner, "activations@model"},
    {"Name", BlockColumn::kName, "aten::convolution"},
    {"Allocated", BlockColumn::kAllocTime, "+1234.123456 s"},
    {"Freed", BlockColumn::kFreeTime, "+1234.123456 s"},
    {"Lifetime", BlockColumn::kLifetime, "3 min 20 s"},
    {"Thread", BlockColumn::kThread, "1234567"},
    {"allocation_id", BlockColumn::kAllocationId, "1234567"},
};

QStringList headers() {
  QStringList h;
  for (const Column& c : kColumns) h << QString::fromLatin1(c.header);
  return h;
}

// A block as the table shows it, and as it is copied: sizes in bytes, times in seconds
// since the start.
TableRow block_cells(const viewdata::BlockRow& b, int64_t origin, int64_t end) {
  const QLocale locale;
  const bool live = b.free_ns == viewdata::kStillLive;
  const int64_t lifetime = (live ? std::max(end, b.alloc_ns) : b.free_ns) - b.alloc_ns;
  const QString addr = QStringLiteral("0x%1").arg(qulonglong(b.addr), 16, 16, QChar('0'));
  const QString owner = QString::fromStdString(b.owner);
  const QString name = QString::fromStdString(b.name);
  const QString layer = QString::fromLatin1(viewdata::layer_label(b.layer, b.is_mmap));
  const QString alloc = table_time_text(b.alloc_ns - origin);
  const QString freed = live ? QStringLiteral("live") : table_time_text(b.free_ns - origin);
  TableRow row;
  row.key = b.id;
  row.cells = {locale.toString(qlonglong(b.id)),
               addr,
               QString::fromStdString(bytes_text(double(b.size_bytes))),
               layer,
               owner,
               name,
               alloc,
               freed,
               QString::fromStdString((live ? "≥ " : "") + duration_text(lifetime)),
               QString::number(b.tid),
               QString::number(b.allocation_id)};
  row.copy = {QString::number(b.id),
              addr,
              QString::number(b.size_bytes),
              layer,
              owner,
              name,
              table_seconds_text(b.alloc_ns - origin),
              live ? QStringLiteral("live") : table_seconds_text(b.free_ns - origin),
              table_seconds_text(lifetime),
              QString::number(b.tid),
              QString::number(b.allocation_id)};
  return row;
}

}  // namespace

BlockTableView::BlockTableView(ViewState* state, EngineClient* client, QWidget* parent)
    : QWidget(parent), state_(state), client_(client) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  table_ = new PagedTable(headers(), tr("Filter: owner, Name or stack"), this);
  layout->addWidget(table_);
  QStringList samples;
  for (const Column& c : kColumns) samples << QString::fromUtf8(c.sample);
  table_->setColumnSamples(samples);
  model()->setNumeric({0, 2, 6, 7, 8, 9, 10});
  model()->setSort(0, Qt::AscendingOrder);
  filterBar()->setText(state_->blockFilter());

  model()->setFetch([this](size_t offset, size_t count, uint64_t generation, bool) {
    fetch(offset, count, generation);
  });
  table_->followState(state_);
  connect(model(), &PagedTableModel::pageLoaded, this, [this] {
    showStatus();
    showSelected();
  });
  // The user's text is the shared block filter (the lifetime graph may show it too).
  connect(filterBar(), &TableFilterBar::changed, this,
          [this] { state_->setBlockFilter(filterBar()->text()); });
  connect(state_, &ViewState::blockFilterChanged, this,
          [this](const QString& text) { filterBar()->setText(text); });
  connect(state_, &ViewState::blockSelected, this, &BlockTableView::showSelected);
  connect(table()->selectionModel(), &QItemSelectionModel::currentRowChanged, this,
          [this](const QModelIndex& current) {
            if (selecting_ || !current.isValid()) return;
            if (const TableRow* row = model()->rowAt(current.row())) state_->selectBlock(row->key);
          });
}

void BlockTableView::fetch(size_t offset, size_t count, uint64_t generation) {
  viewdata::BlockFilter f;
  f.pid = state_->pid();
  f.device = state_->device();
  if (filterBar()->onlyRange() && state_->t1() > state_->t0()) {
    f.t0_ns = state_->t0();
    f.t1_ns = state_->t1();
  }
  f.min_size = filterBar()->minSize();
  f.max_size = filterBar()->maxSize();
  f.text = filterBar()->text().toStdString();
  const BlockColumn column = kColumns[model()->sortColumn()].sort;
  const bool descending = model()->sortOrder() == Qt::DescendingOrder;
  const int64_t origin = state_->origin();
  const int64_t end = state_->sessionEnd();
  if (state_->loading()) {
    // Asked when the recording is loaded (dataAdvancedSlowly); meanwhile the status says so.
    TablePage empty;
    empty.offset = offset;
    model()->deliver(generation, std::move(empty));
    return;
  }
  client_->askBlocks(
      this,
      [=](viewdata::BlockQueries& q) {
        const viewdata::BlockPage p = q.page(f, column, descending, offset, count);
        TablePage page;
        page.offset = offset;
        page.total_rows = p.total_rows;
        page.rows.reserve(p.rows.size());
        for (const viewdata::BlockRow& b : p.rows) page.rows.push_back(block_cells(b, origin, end));
        return page;
      },
      [this, generation](TablePage page) { model()->deliver(generation, std::move(page)); });
}

void BlockTableView::showStatus() {
  QString text;
  if (!model()->error().isEmpty()) {
    text = model()->error();
  } else if (state_->loading()) {
    text = state_->loadingText();
  } else if (model()->totalRows() == 0) {
    text = filterBar()->onlyRange() && state_->t1() > state_->t0()
               ? tr("No blocks live in %1 … %2 match the filter")
                     .arg(state_->timeText(state_->t0()), state_->timeText(state_->t1()))
               : tr("No blocks match the filter");
  } else {
    text = filterBar()->onlyRange() && state_->t1() > state_->t0()
               ? tr("%1 live in %2 … %3")
                     .arg(count_text(model()->totalRows(), "block", "blocks"),
                          state_->timeText(state_->t0()), state_->timeText(state_->t1()))
               : count_text(model()->totalRows(), "block", "blocks");
  }
  filterBar()->status()->setText(text);
}

void BlockTableView::showSelected() {
  const int64_t id = state_->selectedBlock();
  if (id < 0) return;
  const int row = model()->rowOf(id);
  const QModelIndex current = table()->currentIndex();
  if (row >= 0) {
    if (current.isValid() && current.row() == row) return;
    selecting_ = true;
    table()->selectRow(row);
    table()->scrollTo(model()->index(row, 0));
    selecting_ = false;
    return;
  }
  showStatus();
  filterBar()->status()->setText(filterBar()->status()->text() +
                                 tr(" · selected: block %1 (not on the pages shown)").arg(id));
}

}  // namespace memtap::gui
