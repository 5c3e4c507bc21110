// The memory breakdown at an instant: what holds memory at the cursor (or, one click away,
// at the Allocated peak), by layer, then owner, then stack, as a squarified treemap. Every
// box big enough shows its name, bytes and share; the others tell them as a tooltip. A
// click on an owner or a stack filters the block table by it and brings the table up.
// The tree comes from the block index (viewdata/breakdown_data.h), asked again when the
// cursor, the scope or the data move, one question at a time.
#pragma once

#include <QLabel>
#include <QPushButton>
#include <QWidget>
#include <vector>

#include "monitor/gui/ask_pacer.h"
#include "monitor/gui/engine_client.h"
#include "monitor/gui/view_state.h"
#include "monitor/viewdata/breakdown_data.h"

namespace memtap::gui {

// The treemap itself: draws a BreakdownData, reports clicks.
class BreakdownMap : public QWidget {
  Q_OBJECT

 public:
  explicit BreakdownMap(QWidget* parent = nullptr);

  struct Box {
    QRectF rect;
    viewdata::BreakdownNode::Level level;
    QString label;
    QString numbers;  // "1.2 GiB · 45.0%"
    QString tip;
    QString filter;  // what a click filters the block table by ("": nothing)
    QColor color;
    QString shown;                // the label as drawn (elided to fit)
    bool labelled = false;        // the label is drawn in it (else only the tooltip tells)
    bool numbers_inline = false;  // a parent's numbers fit after its name
    bool leaf = false;
  };

  void setData(viewdata::BreakdownData data, const QString& empty_text);
  const viewdata::BreakdownData& data() const { return data_; }
  const std::vector<Box>& boxes() const { return boxes_; }
  const QString& emptyText() const { return empty_; }
  // The innermost box at `pos`, nullptr if none.
  const Box* boxAt(const QPointF& pos) const;

 signals:
  void boxClicked(const QString& filter);

 protected:
  void paintEvent(QPaintEvent* event) override;
  void resizeEvent(QResizeEvent* event) override;
  void mousePressEvent(QMouseEvent* event) override;
  bool event(QEvent* event) override;

 private:
  void layoutBoxes();
  void place(const std::vector<viewdata::BreakdownNode>& nodes, const QRectF& area,
             const QColor& parent_color, const QString& path);

  viewdata::BreakdownData data_;
  QString empty_;
  std::vector<Box> boxes_;  // parents before their children
};

class BreakdownView : public QWidget {
  Q_OBJECT

 public:
  BreakdownView(ViewState* state, EngineClient* client, QWidget* parent = nullptr);

  BreakdownMap* map() const { return map_; }
  QLabel* header() const { return header_; }
  QPushButton* atPeakButton() const { return at_peak_; }

 signals:
  void drawn(int boxes);

 protected:
  void showEvent(QShowEvent* event) override;

 private:
  void request();
  void ask();

  ViewState* state_;
  EngineClient* client_;
  QLabel* header_;
  QPushButton* at_peak_;
  BreakdownMap* map_;
  bool scheduled_ = false;
  AskPacer pacer_;
  bool stale_ = true;  // something changed while hidden: ask when shown
};

}  // namespace memtap::gui
