// See paged_table_model.h.
#include "monitor/gui/paged_table_model.h"

#include <QMetaObject>
#include <algorithm>

namespace memtap::gui {

namespace {

// A cell as a spreadsheet reads it from tab-separated text.
QString tsv_cell(const QString& text) {
  if (!text.contains('\t') && !text.contains('\n') && !text.contains('"')) return text;
  QString quoted = text;
  quoted.replace('"', QStringLiteral("\"\""));
  return '"' + quoted + '"';
}

QString tsv_line(const QStringList& cells) {
  QStringList out;
  out.reserve(cells.size());
  for (const QString& cell : cells) out.append(tsv_cell(cell));
  return out.join('\t');
}

}  // namespace

PagedTableModel::PagedTableModel(QStringList headers, QObject* parent)
    : QAbstractTableModel(parent), headers_(std::move(headers)) {}

void PagedTableModel::reset() {
  beginResetModel();
  ++generation_;
  pages_.clear();
  total_ = 0;
  error_.clear();
  loaded_once_ = false;
  again_ = false;
  refresh_pending_ = false;
  // An answer still coming is for the old generation: dropped when it comes, and the first
  // page asked then (one question at a time, however fast the filter changes).
  endResetModel();
  wanted_ = 0;
  fetchNext();
}

void PagedTableModel::refresh() {
  if (in_flight_) {
    refresh_pending_ = true;  // the answer on its way may be older than the data
    return;
  }
  refresh_pending_ = false;
  again_ = true;
  // Every cached page may be older than the data, an empty one too (fetchNext keeps a page
  // that is not stale).
  for (auto& [number, page] : pages_) page.stale = true;
  if (rowCount() == 0) {
    wanted_ = 0;
    fetchNext();
    return;
  }
  // The rows on screen ask for their pages again as they are drawn (data()).
  emit dataChanged(index(0, 0), index(rowCount() - 1, columnCount() - 1));
}

void PagedTableModel::want(size_t page) const {
  if (wanted_ == page) return;
  wanted_ = page;
  if (in_flight_) return;  // fetched when the answer comes
  QMetaObject::invokeMethod(const_cast<PagedTableModel*>(this), &PagedTableModel::fetchNext,
                            Qt::QueuedConnection);
}

void PagedTableModel::fetchNext() {
  if (in_flight_ || wanted_ == SIZE_MAX || !fetch_) return;
  const size_t page = wanted_;
  wanted_ = SIZE_MAX;
  const auto it = pages_.find(page);
  if (it != pages_.end() && !it->second.stale) return;
  in_flight_ = true;
  const bool again = again_;
  again_ = false;
  fetch_(page * kPageRows, kPageRows, generation_, again);
}

void PagedTableModel::deliver(uint64_t generation, TablePage page) {
  in_flight_ = false;
  if (generation != generation_) {
    fetchNext();
    return;
  }

  loaded_once_ = true;
  error_ = page.error;
  // The length first, so that the rows' indexes exist when they are announced.
  const uint64_t total = page.error.isEmpty() ? page.total_rows : 0;
  if (total != total_) {
    const int old_rows = rowCount();
    const uint64_t old_total = total_;
    total_ = total;
    const int new_rows = rowCount();
    total_ = old_total;
    if (new_rows > old_rows) {
      beginInsertRows({}, old_rows, new_rows - 1);
      total_ = total;
      endInsertRows();
    } else if (new_rows < old_rows) {
      beginRemoveRows({}, new_rows, old_rows - 1);
      total_ = total;
      endRemoveRows();
    }
    total_ = total;
    // Pages past the new end (or from before a count change) cannot be trusted.
    for (auto& [number, cached] : pages_) cached.stale = true;
  }
  const size_t number = page.offset / kPageRows;
  Page& slot = pages_[number];
  slot.rows = std::move(page.rows);
  slot.stale = false;
  slot.used = ++clock_;
  while (pages_.size() > kCachedPages) {
    auto oldest = std::min_element(pages_.begin(), pages_.end(), [](const auto& a, const auto& b) {
      return a.second.used < b.second.used;
    });
    pages_.erase(oldest);
  }
  const int first = int(page.offset);
  const int last = std::min(rowCount(), first + int(kPageRows)) - 1;
  if (last >= first) emit dataChanged(index(first, 0), index(last, columnCount() - 1));
  emit pageLoaded();
  if (refresh_pending_) {
    refresh();  // the rows shown may be older than the data: ask for them again
  } else {
    fetchNext();
  }
}

const TableRow* PagedTableModel::rowAt(int row) const {
  if (row < 0) return nullptr;
  const auto it = pages_.find(size_t(row) / kPageRows);
  if (it == pages_.end()) return nullptr;
  const size_t at = size_t(row) % kPageRows;
  return at < it->second.rows.size() ? &it->second.rows[at] : nullptr;
}

int PagedTableModel::rowOf(int64_t key) const {
  for (const auto& [number, page] : pages_) {
    for (size_t i = 0; i < page.rows.size(); ++i) {
      if (page.rows[i].key == key) return int(number * kPageRows + i);
    }
  }
  return -1;
}

QString PagedTableModel::copyText(std::vector<int> rows, int* skipped) const {
  std::sort(rows.begin(), rows.end());
  rows.erase(std::unique(rows.begin(), rows.end()), rows.end());
  QString text = tsv_line(headers_) + '\n';
  int left_out = 0;
  for (int row : rows) {
    const TableRow* r = rowAt(row);
    if (r == nullptr) {
      ++left_out;
      continue;
    }
    text += tsv_line(r->copy) + '\n';
  }
  if (skipped != nullptr) *skipped = left_out;
  return text;
}

int PagedTableModel::rowCount(const QModelIndex& parent) const {
  if (parent.isValid()) return 0;
  // A view's rows are ints; more than that many rows are not reachable by scrolling.
  return int(std::min<uint64_t>(total_, uint64_t(INT32_MAX)));
}

int PagedTableModel::columnCount(const QModelIndex& parent) const {
  return parent.isValid() ? 0 : int(headers_.size());
}

QVariant PagedTableModel::data(const QModelIndex& index, int role) const {
  if (!index.isValid()) return {};
  if (role == Qt::TextAlignmentRole) {
    const bool numeric =
        std::find(numeric_.begin(), numeric_.end(), index.column()) != numeric_.end();
    return QVariant::fromValue(Qt::AlignVCenter | (numeric ? Qt::AlignRight : Qt::AlignLeft));
  }
  if (role != Qt::DisplayRole && role != Qt::ToolTipRole) return {};
  const size_t number = size_t(index.row()) / kPageRows;
  const auto it = pages_.find(number);
  if (it == pages_.end() || it->second.stale) want(number);
  if (it == pages_.end()) return role == Qt::DisplayRole ? QStringLiteral("…") : QVariant();
  it->second.used = ++clock_;
  const size_t at = size_t(index.row()) % kPageRows;
  if (at >= it->second.rows.size()) return {};
  const QStringList& cells =
      role == Qt::DisplayRole ? it->second.rows[at].cells : it->second.rows[at].copy;
  return index.column() < cells.size() ? cells[index.column()] : QString();
}

QVariant PagedTableModel::headerData(int section, Qt::Orientation orientation, int role) const {
  if (role != Qt::DisplayRole) return {};
  if (orientation == Qt::Vertical) return section + 1;
  return section < headers_.size() ? headers_[section] : QVariant();
}

void PagedTableModel::sort(int column, Qt::SortOrder order) {
  if (column < 0 || (column == sort_column_ && order == sort_order_)) return;
  sort_column_ = column;
  sort_order_ = order;
  emit sortRequested(column, order);
}

}  // namespace memtap::gui
