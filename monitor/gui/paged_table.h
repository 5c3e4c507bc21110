// What the block and event tables share: the filter row, a QTableView over a
// PagedTableModel, copying the selection (Ctrl+C, the context menu's Copy) as tab-separated
// text with a header row, and when to ask again. A table that is not shown asks nothing: a
// change of filter or range while it is hidden is asked for when it is shown. While data
// arrives (live, or a replay loading) it refreshes at most once a second.
#pragma once

#include <QTableView>
#include <QWidget>

#include "monitor/gui/paged_table_model.h"
#include "monitor/gui/table_filter_bar.h"
#include "monitor/gui/view_state.h"

namespace memtap::gui {

// A time since the start in a table cell, to the microsecond (rows are often closer in
// time than ViewState::timeText's milliseconds tell apart): "+12.345678 s".
inline QString table_time_text(int64_t since_start_ns) {
  return QStringLiteral("%1%2 s")
      .arg(since_start_ns < 0 ? "" : "+")
      .arg(double(since_start_ns) / 1e9, 0, 'f', 6);
}
// The same as a number, for copied text: "12.345678".
inline QString table_seconds_text(int64_t ns) {
  return QString::number(double(ns) / 1e9, 'f', 6);
}

class PagedTable : public QWidget {
  Q_OBJECT

 public:
  PagedTable(QStringList headers, const QString& text_hint, QWidget* parent = nullptr);

  PagedTableModel* model() { return model_; }
  QTableView* table() { return table_; }
  TableFilterBar* bar() { return bar_; }

  // Column widths that fit `samples` (a typical cell of each column) and the headers.
  void setColumnSamples(const QStringList& samples);
  // The query changed: the first page again (now, or when the table is next shown).
  void requery();
  // New data: the rows shown are read again (now, or when the table is next shown).
  void dataGrew();
  // What both tables ask again on: a click on a header, another process or device, a chosen
  // range once it rests (when "Only the selected range" is on), and new data (once a second).
  void followState(ViewState* state);
  // The selected rows as tab-separated text with a header row, onto the clipboard.
  void copySelection();

 protected:
  void showEvent(QShowEvent* event) override;
  bool eventFilter(QObject* watched, QEvent* event) override;

 private:
  void doRequery();

  TableFilterBar* bar_;
  QTableView* table_;
  PagedTableModel* model_;
  bool requery_scheduled_ = false;
  bool requery_when_shown_ = false;
  bool refresh_when_shown_ = false;
};

}  // namespace memtap::gui
