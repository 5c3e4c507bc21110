// See event_table_view.h.
#include "monitor/gui/event_table_view.h"

#include <QLocale>
#include <QVBoxLayout>

#include "monitor/gui/count_text.h"
#include "monitor/report/units.h"
#include "monitor/store/memscope_format.h"
#include "monitor/viewdata/event_pages.h"

namespace memtap::gui {

namespace {

using viewdata::EventColumn;

// A typical cell of each column (EventColumn order), for the column's width.
// Event and Event Type as wide as their longest spellings (a GPU's and a pool's rows), so
// that KERNEL_LAUNCH and FREE_COMPLETED are not "KERNEL_L…".
const char* const kSamples[viewdata::kEventColumns] = {"12345678",
                                                       "FREE_COMPLETED",
                                                       "PTA_WORKSPACE",
                                                       "aten::convolution",
                                                       "+1234.123456 s",
                                                       "1234567",
                                                       "1234567",
                                                       "cpu",
                                                       "0x00007f12345678a0",
                                                       "1023.9 MiB",
                                                       "activations",
                                                       "1234567",
                                                       "train.py(123): forward ...",
                                                       "libc.so.6 ..."};

QStringList headers() {
  QStringList h;
  for (int c = 0; c < viewdata::kEventColumns; ++c) {
    h << QString::fromLatin1(viewdata::event_column_name(EventColumn(c)));
  }
  return h;
}

// A stack in a cell: its first line, " ..." when there are more.
QString stack_cell(const std::string& stack) {
  return stack.empty() ? QString() : QString::fromStdString(key_text(stack));
}

TableRow event_cells(const viewdata::EventRow& e, int64_t origin) {
  const QLocale locale;
  const QString size =
      e.has_size ? QString::fromStdString(bytes_text(double(e.size_bytes))) : QString();
  TableRow row;
  row.key = e.id;
  row.cells = {locale.toString(qlonglong(e.id)),
               QString::fromStdString(e.event),
               QString::fromStdString(e.event_type),
               QString::fromStdString(e.name),
               table_time_text(e.timestamp_ns - origin),
               QString::number(e.process_id),
               QString::number(e.thread_id),
               QString::fromStdString(e.device_id),
               QString::fromStdString(e.ptr),
               size,
               QString::fromStdString(e.owner),
               QString::fromStdString(e.allocation_id),
               stack_cell(e.stack_python),
               stack_cell(e.stack_c)};
  row.copy = row.cells;
  row.copy[0] = QString::number(e.id);
  row.copy[4] = table_seconds_text(e.timestamp_ns - origin);
  row.copy[9] = e.has_size ? QString::number(e.size_bytes) : QString();
  row.copy[12] = QString::fromStdString(e.stack_python);
  row.copy[13] = QString::fromStdString(e.stack_c);
  return row;
}

}  // namespace

EventTableView::EventTableView(ViewState* state, EngineClient* client, QWidget* parent)
    : QWidget(parent),
      state_(state),
      client_(client),
      pages_(std::make_shared<viewdata::EventPages>()) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(0, 0, 0, 0);
  table_ = new PagedTable(headers(), tr("Filter: owner, Name or stack"), this);
  layout->addWidget(table_);
  QStringList samples;
  for (const char* s : kSamples) samples << QString::fromUtf8(s);
  table_->setColumnSamples(samples);
  model()->setNumeric({int(EventColumn::kId), int(EventColumn::kTimestamp),
                       int(EventColumn::kProcessId), int(EventColumn::kThreadId),
                       int(EventColumn::kSize), int(EventColumn::kAllocationId)});
  model()->setSort(0, Qt::AscendingOrder);

  kinds_ = new QComboBox(filterBar());
  kinds_->addItem(tr("All events"), QString());
  kinds_->addItem(tr("MALLOC and FREE"), QStringLiteral("MALLOC,FREE,FREE_COMPLETED"));
  // Every Event a memscope_dump row can have, spelled as the recording spells it (a GPU's
  // KERNEL_LAUNCH and OOM_DETAIL rows, and a pool's FREE_COMPLETED, included).
  for (DumpEvent e : {DumpEvent::kMalloc, DumpEvent::kFree, DumpEvent::kFreeCompleted,
                      DumpEvent::kSystem, DumpEvent::kSnapshot, DumpEvent::kMstx,
                      DumpEvent::kOpLaunch, DumpEvent::kKernelLaunch, DumpEvent::kOomDetail}) {
    const std::string_view text = dump_event_text(e);
    const QString kind = QString::fromLatin1(text.data(), qsizetype(text.size()));
    kinds_->addItem(kind, kind);
  }
  kinds_->setToolTip(tr("Which rows: the Event column"));
  filterBar()->row()->insertWidget(1, kinds_);
  connect(kinds_, &QComboBox::activated, table_, &PagedTable::requery);

  model()->setFetch([this](size_t offset, size_t count, uint64_t generation, bool again) {
    fetch(offset, count, generation, again);
  });
  table_->followState(state_);
  connect(model(), &PagedTableModel::pageLoaded, this, &EventTableView::showStatus);
}

void EventTableView::fetch(size_t offset, size_t count, uint64_t generation, bool again) {
  viewdata::EventQuery q;
  q.path = client_->source().database_path();
  q.table = client_->source().event_table();
  if (filterBar()->onlyRange() && state_->t1() > state_->t0()) {
    q.filter.t0_ns = state_->t0();
    q.filter.t1_ns = state_->t1();
  }
  q.filter.pid = state_->pid();
  q.filter.device = state_->device();
  for (const QString& kind : kinds_->currentData().toString().split(',', Qt::SkipEmptyParts)) {
    q.filter.kinds.push_back(kind.toStdString());
  }
  q.filter.min_size = filterBar()->minSize();
  q.filter.max_size = filterBar()->maxSize();
  q.filter.text = filterBar()->text().toStdString();
  q.column = EventColumn(model()->sortColumn());
  q.descending = model()->sortOrder() == Qt::DescendingOrder;
  if (q.path.empty()) {
    TablePage none;
    none.error = tr("This source has no database to read events from yet");
    model()->deliver(generation, std::move(none));
    return;
  }
  const int64_t origin = state_->origin();
  client_->askStore(
      this,
      [pages = pages_, q, offset, count, again, origin] {
        if (again) pages->refresh();
        const viewdata::EventPage p = pages->page(q, offset, count);
        TablePage page;
        page.offset = offset;
        page.total_rows = p.total_rows;
        page.error = QString::fromStdString(p.error);
        page.rows.reserve(p.rows.size());
        for (const viewdata::EventRow& e : p.rows) page.rows.push_back(event_cells(e, origin));
        return page;
      },
      [this, generation](TablePage page) { model()->deliver(generation, std::move(page)); });
}

void EventTableView::showStatus() {
  const bool range = filterBar()->onlyRange() && state_->t1() > state_->t0();
  QString text;
  if (!model()->error().isEmpty()) {
    text = model()->error();
  } else if (model()->totalRows() == 0) {
    text = range ? tr("No events in %1 … %2 match the filter")
                       .arg(state_->timeText(state_->t0()), state_->timeText(state_->t1()))
                 : tr("No events match the filter");
  } else {
    const QString n = count_text(model()->totalRows(), "event", "events");
    text = range ? tr("%1 in range").arg(n) : n;
  }
  filterBar()->status()->setText(text);
}

}  // namespace memtap::gui
