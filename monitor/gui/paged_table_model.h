// A table model over rows that stay where they are (the recording, the block index) and
// come in pages: the block and event tables. It holds a few pages of rows already turned
// into text; a row on no loaded page shows "…" and asks for its page, so only the rows
// near the viewport are ever fetched. The view that owns it does the fetching (askStore,
// askBlocks) and hands the answer back with deliver(); one page is asked at a time, and
// the newest row shown decides which page comes next.
//
// Header clicks sort through sortRequested(): the owner changes its query and calls
// reset(). copyText() gives the selected rows as tab-separated text with a header row,
// what a spreadsheet pastes.
#pragma once

#include <QAbstractTableModel>
#include <QModelIndexList>
#include <QString>
#include <QStringList>
#include <cstdint>
#include <functional>
#include <map>
#include <vector>

namespace memtap::gui {

// One row as the table shows it and as it is copied (numbers without units, full text).
struct TableRow {
  int64_t key = 0;  // the row's identity: block id, event ID
  QStringList cells;
  QStringList copy;
};

struct TablePage {
  size_t offset = 0;
  uint64_t total_rows = 0;
  std::vector<TableRow> rows;
  QString error;  // the data could not be read: shown instead of the rows
};

class PagedTableModel : public QAbstractTableModel {
  Q_OBJECT

 public:
  static constexpr size_t kPageRows = 200;
  static constexpr size_t kCachedPages = 8;

  // fetch(offset, count, generation, again): asks for a page, answered with deliver().
  // `again`: the data may have grown since the last answer (count again).
  using Fetch = std::function<void(size_t offset, size_t count, uint64_t generation, bool again)>;

  PagedTableModel(QStringList headers, QObject* parent = nullptr);
  void setFetch(Fetch fetch) { fetch_ = std::move(fetch); }
  // Right-aligned columns (numbers).
  void setNumeric(std::vector<int> columns) { numeric_ = std::move(columns); }

  // The query changed (filter, sort): forgets every row and asks for the first page.
  void reset();
  // The data grew (live): asks again for the first loaded page; the rows stay shown until
  // the answer replaces them.
  void refresh();
  // An answer to fetch(); answers for an older generation are dropped.
  void deliver(uint64_t generation, TablePage page);

  uint64_t totalRows() const { return total_; }
  bool loading() const { return in_flight_; }
  bool loadedOnce() const { return loaded_once_; }
  const QString& error() const { return error_; }
  // The row at `row` when its page is loaded, else nullptr.
  const TableRow* rowAt(int row) const;
  // The row holding `key` on a loaded page; -1 when none does.
  int rowOf(int64_t key) const;
  int sortColumn() const { return sort_column_; }
  Qt::SortOrder sortOrder() const { return sort_order_; }
  void setSort(int column, Qt::SortOrder order) {
    sort_column_ = column;
    sort_order_ = order;
  }

  // Header row and the rows of `rows` (loaded ones), tab-separated; cells holding a tab,
  // a newline or a quote are quoted ("" for a quote), as spreadsheets read them. *skipped:
  // the rows left out because their page was not loaded.
  QString copyText(std::vector<int> rows, int* skipped = nullptr) const;

  int rowCount(const QModelIndex& parent = {}) const override;
  int columnCount(const QModelIndex& parent = {}) const override;
  QVariant data(const QModelIndex& index, int role) const override;
  QVariant headerData(int section, Qt::Orientation orientation, int role) const override;
  void sort(int column, Qt::SortOrder order) override;

 signals:
  // The user clicked a header: sort by `column` (the owner re-queries and calls reset()).
  void sortRequested(int column, Qt::SortOrder order);
  // A page came in (or an error).
  void pageLoaded();

 private:
  struct Page {
    std::vector<TableRow> rows;
    bool stale = false;         // from before refresh(): shown, and asked for again
    mutable uint64_t used = 0;  // for dropping the least recently used (data() touches it)
  };
  void want(size_t page) const;
  void fetchNext();

  QStringList headers_;
  std::vector<int> numeric_;
  Fetch fetch_;
  uint64_t total_ = 0;
  uint64_t generation_ = 0;
  std::map<size_t, Page> pages_;  // by page number
  mutable uint64_t clock_ = 0;
  mutable size_t wanted_ = SIZE_MAX;  // the page to fetch next (the newest asked)
  bool in_flight_ = false;
  bool again_ = false;            // the next fetch counts again (refresh)
  bool refresh_pending_ = false;  // refresh() came while a page was on its way
  bool loaded_once_ = false;
  QString error_;
  int sort_column_ = 0;
  Qt::SortOrder sort_order_ = Qt::AscendingOrder;
};

}  // namespace memtap::gui
