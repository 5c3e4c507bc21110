// A one-line label for a text that may be longer than the room it gets: when it does not
// fit, it ends in "…" where a word ends, rather than being cut mid-word at the widget's
// edge, and its tooltip has the whole text. It never widens its window.
#pragma once

#include <QLabel>
#include <QString>

namespace memtap::gui {

class ElidedLabel : public QLabel {
  Q_OBJECT

 public:
  explicit ElidedLabel(QWidget* parent = nullptr);
  void setFullText(const QString& text);
  const QString& fullText() const { return full_; }

 protected:
  void resizeEvent(QResizeEvent* event) override;

 private:
  void elide();
  QString full_;
};

}  // namespace memtap::gui
