// The curves' legend: one entry per line, drawn in the line's pen (Active's dashes too) with
// its whole name, in as many rows as the width it is given needs; a click on an entry hides
// or shows its line.
//
// Qt Charts' own legend keeps to one row: a Group By's long owner names were elided there
// ("gradie...", "model....") and ran under the Window menu beside it. This one sits in a row
// of its own above the chart, beside that menu, and wraps instead.
#pragma once

#include <QPen>
#include <QString>
#include <QStringList>
#include <QToolButton>
#include <QWidget>
#include <vector>

namespace memtap::gui {

struct LegendEntry {
  QString name;
  QPen pen;
  bool hidden = false;  // its line is not drawn (the entry is greyed)
};

class CurvesLegend : public QWidget {
  Q_OBJECT

 public:
  explicit CurvesLegend(QWidget* parent = nullptr);
  // Replaces the entries (the same names keep their buttons, so a redraw does not flicker).
  void setEntries(const std::vector<LegendEntry>& entries);
  // For tests: the entries' names in order, and the button that shows one (nullptr if none).
  QStringList names() const;
  QToolButton* entry(const QString& name) const;

  bool hasHeightForWidth() const override { return true; }
  int heightForWidth(int width) const override;
  QSize sizeHint() const override;
  QSize minimumSizeHint() const override;

 signals:
  void toggled(const QString& name);

 protected:
  void resizeEvent(QResizeEvent* event) override;

 private:
  int rowHeight() const;  // the tallest entry's
  // Lays the entries out left to right in rows at most `width` wide, each row centred, and
  // returns the height they take; moves the buttons there only when `place`.
  int arrange(int width, bool place) const;

  std::vector<LegendEntry> entries_;
  std::vector<QToolButton*> buttons_;
};

}  // namespace memtap::gui
