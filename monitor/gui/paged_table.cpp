// See paged_table.h.
#include "monitor/gui/paged_table.h"

#include <QAction>
#include <QClipboard>
#include <QGuiApplication>
#include <QHeaderView>
#include <QKeyEvent>
#include <QVBoxLayout>
#include <algorithm>

#include "monitor/gui/count_text.h"

namespace memtap::gui {

PagedTable::PagedTable(QStringList headers, const QString& text_hint, QWidget* parent)
    : QWidget(parent) {
  auto* layout = new QVBoxLayout(this);
  layout->setContentsMargins(4, 4, 4, 4);
  bar_ = new TableFilterBar(text_hint, this);
  layout->addWidget(bar_);
  table_ = new QTableView(this);
  model_ = new PagedTableModel(std::move(headers), this);
  table_->setModel(model_);
  table_->setSortingEnabled(true);
  table_->setSelectionBehavior(QAbstractItemView::SelectRows);
  table_->setSelectionMode(QAbstractItemView::ExtendedSelection);
  table_->setWordWrap(false);
  table_->setTextElideMode(Qt::ElideRight);
  table_->setAlternatingRowColors(true);
  table_->verticalHeader()->hide();  // rows have their own id column
  table_->verticalHeader()->setDefaultSectionSize(table_->fontMetrics().height() + 6);
  table_->verticalHeader()->setSectionResizeMode(QHeaderView::Fixed);
  table_->horizontalHeader()->setStretchLastSection(true);
  table_->horizontalHeader()->setSortIndicator(0, Qt::AscendingOrder);
  table_->horizontalHeader()->setDefaultAlignment(Qt::AlignLeft | Qt::AlignVCenter);
  table_->installEventFilter(this);
  auto* copy = new QAction(tr("Copy"), table_);
  copy->setShortcut(QKeySequence::Copy);
  copy->setShortcutContext(Qt::WidgetShortcut);  // the key itself goes through eventFilter
  copy->setShortcutVisibleInContextMenu(true);
  connect(copy, &QAction::triggered, this, &PagedTable::copySelection);
  table_->addAction(copy);
  table_->setContextMenuPolicy(Qt::ActionsContextMenu);
  layout->addWidget(table_, 1);
  connect(bar_, &TableFilterBar::changed, this, &PagedTable::requery);
}

void PagedTable::setColumnSamples(const QStringList& samples) {
  const QFontMetrics body = table_->fontMetrics();
  const QFontMetrics head = table_->horizontalHeader()->fontMetrics();
  for (int c = 0; c < model_->columnCount() && c < samples.size(); ++c) {
    const QString header = model_->headerData(c, Qt::Horizontal, Qt::DisplayRole).toString();
    // Room for the header's sort arrow.
    const int width =
        std::max(body.horizontalAdvance(samples[c]) + 16, head.horizontalAdvance(header) + 28);
    table_->setColumnWidth(c, width);
  }
}

void PagedTable::requery() {
  if (!isVisible()) {
    requery_when_shown_ = true;
    return;
  }
  // A drag of the range is many changes in one turn of the event loop: one query.
  if (requery_scheduled_) return;
  requery_scheduled_ = true;
  QMetaObject::invokeMethod(this, &PagedTable::doRequery, Qt::QueuedConnection);
}

void PagedTable::doRequery() {
  requery_scheduled_ = false;
  requery_when_shown_ = false;
  refresh_when_shown_ = false;
  model_->reset();
}

void PagedTable::followState(ViewState* state) {
  connect(model_, &PagedTableModel::sortRequested, this, &PagedTable::requery);
  connect(state, &ViewState::scopeChanged, this, &PagedTable::requery);
  connect(state, &ViewState::rangeSettled, this, [this] {
    if (bar_->onlyRange()) requery();
  });
  connect(state, &ViewState::dataAdvancedSlowly, this, &PagedTable::dataGrew);
}

void PagedTable::dataGrew() {
  if (!isVisible()) {
    refresh_when_shown_ = true;
    return;
  }
  model_->refresh();
}

void PagedTable::showEvent(QShowEvent* event) {
  QWidget::showEvent(event);
  if (requery_when_shown_ || !model_->loadedOnce()) {
    requery();
  } else if (refresh_when_shown_) {
    refresh_when_shown_ = false;
    model_->refresh();
  }
}

bool PagedTable::eventFilter(QObject* watched, QEvent* event) {
  if (watched == table_ &&
      (event->type() == QEvent::KeyPress || event->type() == QEvent::ShortcutOverride)) {
    auto* key = static_cast<QKeyEvent*>(event);
    if (key->matches(QKeySequence::Copy)) {
      // The view's own Copy takes one cell: the whole selected rows instead.
      if (event->type() == QEvent::KeyPress) copySelection();
      event->accept();
      return true;
    }
  }
  return QWidget::eventFilter(watched, event);
}

void PagedTable::copySelection() {
  std::vector<int> rows;
  for (const QModelIndex& index : table_->selectionModel()->selectedRows()) {
    rows.push_back(index.row());
  }
  if (rows.empty() && table_->currentIndex().isValid())
    rows.push_back(table_->currentIndex().row());
  int skipped = 0;
  QGuiApplication::clipboard()->setText(model_->copyText(rows, &skipped));
  const int copied = int(rows.size()) - skipped;
  QString note = tr("Copied %1").arg(count_text(uint64_t(copied), "row", "rows"));
  if (skipped > 0) note += tr(" (%L1 not loaded: scroll through them first)").arg(skipped);
  bar_->status()->setToolTip(note);
}

}  // namespace memtap::gui
