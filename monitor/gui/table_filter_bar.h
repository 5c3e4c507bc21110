// The filter row above the block and event tables: a text filter, a size range, "only the
// selected range" (the range the overview selects, ViewState t0/t1) and, on the right, the
// table's status line; where the window is too narrow for all of it in one row, the check
// box and the status line take a second row. It only collects what the user typed; the
// table turns it into its query. changed() comes at once for the check box and the size
// fields (on Enter or when they lose focus), and a moment after the last key typed in the
// text field.
#pragma once

#include <QBoxLayout>
#include <QCheckBox>
#include <QHBoxLayout>
#include <QLabel>
#include <QLineEdit>
#include <QTimer>
#include <QWidget>
#include <cstdint>
#include <optional>

namespace memtap::gui {

// "4096", "4 KiB", "1.5 MiB", "2M", "1 GB" (1024-based, as bytes_text writes them); nullopt
// for text that is no size. "" is no bound: nullopt with *empty set.
std::optional<uint64_t> parse_bytes(const QString& text, bool* empty = nullptr);

class TableFilterBar : public QWidget {
  Q_OBJECT

 public:
  explicit TableFilterBar(const QString& text_hint, QWidget* parent = nullptr);

  QString text() const { return text_->text().trimmed(); }
  // Sets the text field without waiting (a finding set the filter).
  void setText(const QString& text);
  uint64_t minSize() const;
  uint64_t maxSize() const;  // UINT64_MAX: no bound
  bool onlyRange() const { return only_range_->isChecked(); }

  QLineEdit* textField() { return text_; }
  QLineEdit* minField() { return min_; }
  QLineEdit* maxField() { return max_; }
  QCheckBox* onlyRangeBox() { return only_range_; }
  QLabel* status() { return status_; }
  // Where a table adds a control of its own (the event table's kinds), in the first row.
  QHBoxLayout* row() { return row_; }
  // The check box and the status line on a row of their own.
  bool twoRows() const;
  QSize minimumSizeHint() const override;

 signals:
  void changed();

 protected:
  void resizeEvent(QResizeEvent* event) override;
  bool event(QEvent* event) override;

 private:
  // One row or two, by the room there is.
  void arrange();

  QBoxLayout* rows_;   // the two halves side by side, or one above the other
  QHBoxLayout* row_;   // the text filter, the table's own controls, the size range
  QHBoxLayout* tail_;  // "only the selected range" and the status line
  QLineEdit* text_;
  QLineEdit* min_;
  QLineEdit* max_;
  QCheckBox* only_range_;
  QLabel* status_;
  QTimer typing_;
};

}  // namespace memtap::gui
