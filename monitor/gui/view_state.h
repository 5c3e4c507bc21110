// What every view of the window shows, in one place: the process and device, Group By, the
// selected time range, the cursor (the instant the pool and breakdown show), the selected
// block, and whether the window follows the newest data. Views read it and change it
// through its setters; each change is one signal, so the views never talk to each other
// (the overview moves the range and the tables follow; the pool selects a block and the
// lifetime graph shows it).
//
// Times are epoch nanoseconds, as in the recording; views label them relative to origin(),
// the session's first event, as "time since start".
#pragma once

#include <QElapsedTimer>
#include <QObject>
#include <QString>
#include <QTimer>
#include <cstdint>

#include "monitor/engine/timeline/timeline.h"
#include "monitor/model/mem_event.h"

namespace memtap::gui {

class ViewState : public QObject {
  Q_OBJECT

 public:
  explicit ViewState(QObject* parent = nullptr);

  // Whether a process and device are chosen yet: pid 0 is a real one in files that have no
  // process id (CANN's operator_memory CSV), so it cannot mean "none".
  bool hasScope() const { return has_scope_; }
  uint32_t pid() const { return pid_; }
  int32_t device() const { return device_; }
  timeline::GroupBy groupBy() const { return group_by_; }
  bool fragmentation() const { return fragmentation_; }  // the Fragmentation curve is shown
  // The training steps, marks, ranges and OOMs are drawn over the curves (and all but the
  // ranges over the lifetime graph) (View > Steps, Marks and Ranges).
  bool stepMarks() const { return step_marks_; }

  // The selected range [t0, t1]; both 0 until there is data.
  int64_t t0() const { return t0_; }
  int64_t t1() const { return t1_; }
  // The instant the pool and breakdown views show; 0 until set (then: the range's end).
  int64_t cursor() const { return cursor_ != 0 ? cursor_ : t1_; }
  bool cursorSet() const { return cursor_ != 0; }
  int64_t selectedBlock() const { return selected_block_; }  // -1: none
  // Text the block table filters by (a finding sets it: an owner, a stack's frame).
  const QString& blockFilter() const { return block_filter_; }

  // The session's first event and its newest (what the overview spans).
  int64_t origin() const { return origin_; }
  int64_t sessionEnd() const { return session_end_; }
  // A recording is still being read (replay): the views whose questions go to the engine or
  // the block index (findings, lifetime, pool, breakdown, block table) wait for the end and
  // say so with loadingText(); asked while loading, they took the threads the loading needs
  // and a 10 M-event file took twice as long to open as `memtap report` takes. Live
  // sessions are never "loading": their views follow the data.
  bool loading() const { return loading_; }
  // A chosen range has not rested yet: rangeSettled() is still to come.
  bool rangeResting() const { return range_rest_.isActive(); }
  // "Reading the recording (43%): this view fills in once it is loaded."
  QString loadingText() const;

  // Following the newest data: the range ends at sessionEnd() and moves with it.
  bool following() const { return following_; }

  // Where the curves chart draws its time axis: its plot area's left and right edges in the
  // top-level window's coordinates, and the times at those edges (the range of the answer
  // it drew, which may trail range() while a new one is on its way). Views that draw over
  // time (the lifetime graph, the flame chart) draw on the same axis (shared_time_axis()),
  // whatever range their own last answer covers. 0 until the chart is laid out.
  int timeAxisLeft() const { return time_axis_left_; }
  int timeAxisRight() const { return time_axis_right_; }
  int64_t timeAxisT0() const { return time_axis_t0_ns_; }
  int64_t timeAxisT1() const { return time_axis_t1_ns_; }
  // The least left edge, in the window's coordinates, at which every view under the curves
  // that draws over time has room for its own labels (the lifetime graph's addresses): the
  // chart moves its plot area right to it, so that one instant lies at one x in all of
  // them. 0 until such a view is laid out.
  int timeAxisMinLeft() const { return time_axis_min_left_; }

  // "+12.345 s": a time relative to origin().
  QString timeText(int64_t ns) const;
  // Seconds since origin(), for axes.
  double seconds(int64_t ns) const { return double(ns - origin_) / 1e9; }
  int64_t fromSeconds(double s) const { return origin_ + int64_t(s * 1e9); }

 public slots:
  void setScope(uint32_t pid, int32_t device);
  void setGroupBy(timeline::GroupBy by);
  void setFragmentation(bool on);
  void setStepMarks(bool on);
  // Clamped to the session; t1 < t0 swaps them. Turns following off unless `follow`.
  void setRange(int64_t t0, int64_t t1, bool follow = false);
  void setCursor(int64_t t);
  void selectBlock(int64_t id);
  void setBlockFilter(const QString& text);
  void setFollowing(bool on);
  // The data grew (origin or end moved): the window calls this on every refresh; while
  // following, the range follows.
  void setSession(int64_t origin, int64_t end);
  // The source is done (loaded, or the live session ended): loading() is false, and both
  // signals go out now.
  void finishData();
  // A replay's progress (0..1 of the file read); the window calls it on every refresh.
  void setLoading(double fraction);
  // The curves chart's plot area moved (see timeAxisLeft()).
  void setTimeAxis(int left, int right, int64_t t0_ns, int64_t t1_ns);
  void setTimeAxisMinLeft(int left);

 signals:
  void scopeChanged();
  void groupByChanged();
  void stepMarksChanged();
  void rangeChanged();
  // The range changed by a choice (the user's, a finding's, another view's), not because it
  // follows new data: the views with costly questions ask on this and on
  // dataAdvancedSlowly(), not on every move of a following range (10 a second).
  void rangeChosen();
  // 200 ms after the last rangeChosen(): a drag or a wheel zoom moves the range tens of times
  // a second, and the views whose questions take the block index or the recording ask once
  // it rests, so that their work does not slow the curves' redraw on a 2-core machine.
  void rangeSettled();
  void cursorChanged();
  void blockSelected(qint64 id);
  void blockFilterChanged(const QString& text);
  void followingChanged(bool on);
  // New data (every refresh while live or loading): views that show "now" ask again.
  void dataAdvanced();
  // The same at most once a second, and once more when the source is done: for the views
  // whose questions cost the engine or the block index more than a curve (findings, the
  // lifetime graph, the pool, the breakdown, the flame chart). Asked every 100 ms while a
  // recording loads they took the threads the loading needs: loading a 10 M-event file took
  // twice as long as `memtap report`.
  void dataAdvancedSlowly();
  // A view asks the window to bring another to the front (window_options.h's names: a finding
  // opens the block table). The window owns the tabs; views only ask.
  void viewRequested(const QString& name);
  void timeAxisChanged();
  void timeAxisMinLeftChanged();

 private:
  bool has_scope_ = false;
  uint32_t pid_ = 0;
  int32_t device_ = kHostDevice;
  timeline::GroupBy group_by_ = timeline::GroupBy::kOverall;
  bool fragmentation_ = false;
  bool step_marks_ = true;
  int64_t t0_ = 0, t1_ = 0;
  int64_t cursor_ = 0;
  int64_t selected_block_ = -1;
  QString block_filter_;
  int64_t origin_ = 0, session_end_ = 0;
  bool following_ = true;
  // The width the range keeps while following once the user chose one (0: all of it).
  int64_t follow_width_ = 0;
  int time_axis_left_ = 0, time_axis_right_ = 0;
  int64_t time_axis_t0_ns_ = 0, time_axis_t1_ns_ = 0;
  int time_axis_min_left_ = 0;
  bool following_data_ = false;  // setSession() is moving the range
  bool loading_ = false;
  double load_fraction_ = 0;
  QElapsedTimer slow_clock_;
  QTimer
      range_rest_;  // rangeSettled() when it fires  // since dataAdvancedSlowly() was last emitted
};

// Said with a block view's answer for the instant `t_ns` when the block index had not
// reached it (behind a live flood, its events waiting on disk: `covered_until_ns`, as the
// answer's BlockQueries gave it); "" otherwise.
QString blocks_behind_note(const ViewState& state, int64_t covered_until_ns, int64_t t_ns);

}  // namespace memtap::gui
