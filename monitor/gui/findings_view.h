// The findings panel (the dock on the right): what the report finds about the shown process
// and device - the Allocated peak, leak suspects by step, the worst fragmentation,
// inefficient blocks, time to OOM - one card each (title, numbers, "+12.345 s"). A click
// takes the user there: the cursor to the finding's moment (the range around it when it is
// outside), its block selected or the block table filtered by its owner or stack, and the
// view that shows it brought to the front. The list is computed by the engine
// (viewdata/findings.h) and asked again as data arrives, one question at a time.
#pragma once

#include <QFrame>
#include <QLabel>
#include <QVBoxLayout>
#include <QWidget>
#include <vector>

#include "monitor/gui/ask_pacer.h"
#include "monitor/gui/engine_client.h"
#include "monitor/gui/view_state.h"
#include "monitor/viewdata/findings.h"

namespace memtap::gui {

// One finding; clicking anywhere on it opens it.
class FindingCard : public QFrame {
  Q_OBJECT

 public:
  FindingCard(const viewdata::Finding& finding, const QString& time, QWidget* parent);
  void setCurrent(bool on);

 signals:
  void clicked();

 protected:
  void mousePressEvent(QMouseEvent* event) override;
};

class FindingsView : public QWidget {
  Q_OBJECT

 public:
  FindingsView(ViewState* state, EngineClient* client, QWidget* parent = nullptr);

  // For tests: what is shown.
  const std::vector<viewdata::Finding>& findings() const { return findings_; }
  FindingCard* card(size_t i) const { return i < cards_.size() ? cards_[i] : nullptr; }
  QString emptyText() const;  // "" while there are findings

  // Takes the user to finding i (what a click on its card does).
  void open(size_t i);

 signals:
  void drawn(int findings);

 private:
  void request();
  void ask();
  void show(std::vector<viewdata::Finding> findings);

  ViewState* state_;
  EngineClient* client_;
  QLabel* empty_;
  QWidget* list_;
  QVBoxLayout* list_layout_;
  std::vector<viewdata::Finding> findings_;
  std::vector<FindingCard*> cards_;
  size_t current_ = size_t(-1);
  bool scheduled_ = false;
  AskPacer pacer_;
  bool answered_ = false;  // an answer for the current scope came
};

}  // namespace memtap::gui
