// See view_state.h.
#include "monitor/gui/view_state.h"

#include <algorithm>

namespace memtap::gui {

ViewState::ViewState(QObject* parent) : QObject(parent) {
  range_rest_.setSingleShot(true);
  range_rest_.setInterval(200);
  connect(&range_rest_, &QTimer::timeout, this, &ViewState::rangeSettled);
}

QString ViewState::timeText(int64_t ns) const {
  return QStringLiteral("+%1 s").arg(seconds(ns), 0, 'f', 3);
}

void ViewState::setScope(uint32_t pid, int32_t device) {
  if (has_scope_ && pid == pid_ && device == device_) return;
  has_scope_ = true;
  pid_ = pid;
  device_ = device;
  selected_block_ = -1;
  emit scopeChanged();
}

void ViewState::setTimeAxis(int left, int right, int64_t t0_ns, int64_t t1_ns) {
  if (left == time_axis_left_ && right == time_axis_right_ && t0_ns == time_axis_t0_ns_ &&
      t1_ns == time_axis_t1_ns_) {
    return;
  }
  time_axis_left_ = left;
  time_axis_right_ = right;
  time_axis_t0_ns_ = t0_ns;
  time_axis_t1_ns_ = t1_ns;
  emit timeAxisChanged();
}

void ViewState::setTimeAxisMinLeft(int left) {
  if (left == time_axis_min_left_) return;
  time_axis_min_left_ = left;
  emit timeAxisMinLeftChanged();
}

void ViewState::setGroupBy(timeline::GroupBy by) {
  if (by == group_by_) return;
  group_by_ = by;
  emit groupByChanged();
}

void ViewState::setFragmentation(bool on) {
  if (on == fragmentation_) return;
  fragmentation_ = on;
  emit groupByChanged();
}

void ViewState::setStepMarks(bool on) {
  if (on == step_marks_) return;
  step_marks_ = on;
  emit stepMarksChanged();
}

void ViewState::setRange(int64_t t0, int64_t t1, bool follow) {
  if (t1 < t0) std::swap(t0, t1);
  if (session_end_ > origin_) {
    t0 = std::clamp(t0, origin_, session_end_);
    t1 = std::clamp(t1, origin_, session_end_);
  }
  if (!follow && following_) {
    following_ = false;
    emit followingChanged(false);
  }
  if (follow) follow_width_ = (t0 <= origin_) ? 0 : t1 - t0;
  if (t0 == t0_ && t1 == t1_) return;
  t0_ = t0;
  t1_ = t1;
  emit rangeChanged();
  if (!following_data_) {
    emit rangeChosen();
    range_rest_.start();
  }
}

void ViewState::setCursor(int64_t t) {
  if (t == cursor_) return;
  cursor_ = t;
  emit cursorChanged();
}

void ViewState::selectBlock(int64_t id) {
  if (id == selected_block_) return;
  selected_block_ = id;
  emit blockSelected(id);
}

void ViewState::setBlockFilter(const QString& text) {
  if (text == block_filter_) return;
  block_filter_ = text;
  emit blockFilterChanged(text);
}

void ViewState::setFollowing(bool on) {
  if (on == following_) return;
  following_ = on;
  emit followingChanged(on);
  if (on && session_end_ > origin_) {
    const int64_t t0 =
        follow_width_ > 0 ? std::max(origin_, session_end_ - follow_width_) : origin_;
    setRange(t0, session_end_, true);
  }
}

void ViewState::setSession(int64_t origin, int64_t end) {
  if (origin == origin_ && end == session_end_) return;
  const bool first = origin_ == 0;
  origin_ = origin;
  session_end_ = std::max(end, origin);
  if (following_ || first) {
    const int64_t t0 =
        follow_width_ > 0 ? std::max(origin_, session_end_ - follow_width_) : origin_;
    const bool was_following = following_;
    following_ = true;  // setRange(.., true) keeps it
    following_data_ = !first;
    setRange(t0, session_end_, true);
    following_data_ = false;
    following_ = was_following;
  }
  emit dataAdvanced();
  if (!slow_clock_.isValid() || slow_clock_.elapsed() >= 1000) {
    slow_clock_.restart();
    emit dataAdvancedSlowly();
  }
}

QString ViewState::loadingText() const {
  return tr("Reading the recording (%1%): this view fills in once it is loaded.")
      .arg(int(load_fraction_ * 100));
}

void ViewState::setLoading(double fraction) {
  loading_ = true;
  load_fraction_ = fraction;
}

void ViewState::finishData() {
  loading_ = false;
  emit dataAdvanced();
  slow_clock_.restart();
  emit dataAdvancedSlowly();
}

QString blocks_behind_note(const ViewState& state, int64_t covered_until_ns, int64_t t_ns) {
  if (t_ns <= covered_until_ns) return QString();
  if (covered_until_ns < state.origin()) {
    return ViewState::tr(
        "The block index has not indexed any block yet (a flood's events wait to be "
        "indexed): blocks are not shown until it catches up.");
  }
  return ViewState::tr(
             "The block index has reached %1 only (a flood's events wait to be indexed): "
             "blocks allocated after it are not shown until it catches up.")
      .arg(state.timeText(covered_until_ns));
}

}  // namespace memtap::gui
