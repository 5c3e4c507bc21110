// The ranges (memtap.range()) drawn as bars along the bottom of the curves' plot area: a row
// per lane, the outermost at the bottom and what is nested in it above, each bar tinted by
// its name and labelled where the name fits. Under the curves' lines, so that the lines stay
// whole where they cross a bar. What is laid out comes from viewdata (range_bars_data.h):
// ranges too narrow to tell apart are one grey bar that says how many it stands for.
#pragma once

#include <QChart>
#include <QFontMetricsF>
#include <QGraphicsRectItem>
#include <QGraphicsSimpleTextItem>
#include <QRectF>
#include <QStringList>
#include <functional>
#include <vector>

#include "monitor/viewdata/range_bars_data.h"

namespace memtap::gui {

class RangeBarsOverlay {
 public:
  explicit RangeBarsOverlay(QChart* chart);

  // Lays `data` out over the plot area; x_of gives a time's x in the chart's coordinates.
  // Not `shown` (ViewState::stepMarks()): nothing shows.
  void place(const viewdata::RangeBarsData& data, const std::function<double(int64_t)>& x_of,
             bool shown);

  // The index in data.bars of the bar at `p` (the chart's coordinates), or -1.
  int barAt(const QPointF& p) const;

  // What a bar says: its name, "forward ×12" for several of one name, "12 ranges".
  static QString barText(const viewdata::RangeBar& bar);
  // What the bar says in `room` pixels: barText, else its count kept where the name is cut
  // ("forw… ×12", "×12"; "44" for 44 ranges of several names), else the name cut; "" when
  // no more than a letter would fit.
  static QString barLabel(const viewdata::RangeBar& bar, double room, const QFontMetricsF& metrics);
  // What is not drawn: "+2 nested lanes not drawn", "+5 ranges nested past 8 levels not
  // kept", both, or "" when everything is drawn. Drawn above the top lane at the
  // plot's right, and said in the hover over a bar.
  static QString hiddenText(const viewdata::RangeBarsData& data);
  // The same where the plot is too narrow for it: "+5 lanes, +12 ranges not drawn".
  static QString shortHiddenText(const viewdata::RangeBarsData& data);

  // For tests: the bars drawn (in data.bars' order) and their labels.
  std::vector<QRectF> barRects() const;
  QStringList labels() const;
  QString hiddenLabel() const;  // "" when not shown
  QRectF hiddenRect() const;    // in the chart's coordinates, as plotArea()

 private:
  struct Placed {
    QRectF rect;
    int index;
  };
  QChart* chart_;
  std::vector<QGraphicsRectItem*> bars_;
  std::vector<QGraphicsSimpleTextItem*> labels_;
  QGraphicsSimpleTextItem* hidden_;
  QGraphicsRectItem* hidden_back_;
  std::vector<Placed> placed_;
};

}  // namespace memtap::gui
