// See frame_stats.h.
#include "monitor/gui/frame_stats.h"

#include <QWidget>
#include <algorithm>
#include <cmath>

namespace memtap::gui {

void FrameStats::add_frame(double ms, int64_t now_ms) {
  ++frames_;
  if (ms > 50) ++over_50_;
  max_ms_ = std::max(max_ms_, ms);
  size_t b = 0;
  while (b < kBucketMs.size() && ms > kBucketMs[b]) ++b;
  ++buckets_[b];
  samples_.push_back(float(ms));
  ++per_second_[slot(now_ms)];
}

void FrameStats::note_data(int64_t now_ms) {
  data_second_[slot(now_ms)] = true;
}

size_t FrameStats::slot(int64_t now_ms) {
  const int64_t second = now_ms / 1000;
  if (first_second_ < 0) first_second_ = second;
  const size_t index = size_t(std::max<int64_t>(second - first_second_, 0));
  if (per_second_.size() <= index) {
    per_second_.resize(index + 1, 0);
    data_second_.resize(index + 1, false);
  }
  return index;
}

double FrameStats::percentile_ms(double p) const {
  if (samples_.empty()) return 0;
  std::vector<float> sorted = samples_;
  const size_t k = std::min(sorted.size() - 1,
                            size_t(std::ceil(p / 100.0 * double(sorted.size())) - (p > 0 ? 1 : 0)));
  std::nth_element(sorted.begin(), sorted.begin() + long(k), sorted.end());
  return sorted[k];
}

void FrameStats::print(FILE* out) const {
  fprintf(
      out,
      "memtap-gui: %llu frames, paint p50 %.1f ms, p95 %.1f ms, max %.1f ms, over 50 ms: %llu\n",
      (unsigned long long)frames_, percentile_ms(50), percentile_ms(95), max_ms_,
      (unsigned long long)over_50_);
  // Whole seconds only: the first and last are partial.
  if (per_second_.size() > 2) {
    uint32_t lo = ~0u, hi = 0;
    uint64_t sum = 0;
    for (size_t i = 1; i + 1 < per_second_.size(); ++i) {
      lo = std::min(lo, per_second_[i]);
      hi = std::max(hi, per_second_[i]);
      sum += per_second_[i];
    }
    fprintf(out,
            "memtap-gui: redraws per second: min %u, mean %.1f, max %u (over %zu whole seconds)\n",
            lo, double(sum) / double(per_second_.size() - 2), hi, per_second_.size() - 2);
    fprintf(out, "memtap-gui: redraws in each second:");
    for (uint32_t n : per_second_) fprintf(out, " %u", n);
    fprintf(out, "\n");
  }
  // The same over the whole seconds in which data arrived (not the first or last such).
  size_t first = per_second_.size(), last = 0;
  for (size_t i = 0; i < data_second_.size(); ++i) {
    if (!data_second_[i]) continue;
    first = std::min(first, i);
    last = i;
  }
  if (first < per_second_.size() && last > first + 1) {
    uint32_t lo = ~0u;
    for (size_t i = first + 1; i < last; ++i) lo = std::min(lo, per_second_[i]);
    fprintf(out, "memtap-gui: redraws per second while data arrived: min %u (over %zu seconds)\n",
            lo, last - first - 1);
  }
  fprintf(out, "memtap-gui: frame-time histogram (ms):");
  for (size_t b = 0; b < buckets_.size(); ++b) {
    if (b < kBucketMs.size()) {
      fprintf(out, " <=%g:%llu", kBucketMs[b], (unsigned long long)buckets_[b]);
    } else {
      fprintf(out, " >%g:%llu", kBucketMs.back(), (unsigned long long)buckets_[b]);
    }
  }
  fprintf(out, "\n");
}

MemtapApplication::MemtapApplication(int& argc, char** argv) : QApplication(argc, argv) {
  clock_.start();
}

bool MemtapApplication::notify(QObject* receiver, QEvent* event) {
  if (event->type() == QEvent::Paint) painted_ = true;
  // A window's UpdateRequest paints every widget of it that needs it: one frame, when
  // anything was painted (Qt Charts asks for updates that then paint nothing).
  if (event->type() != QEvent::UpdateRequest || !receiver->isWidgetType() ||
      !static_cast<QWidget*>(receiver)->isWindow()) {
    return QApplication::notify(receiver, event);
  }
  painted_ = false;
  const qint64 start = clock_.nsecsElapsed();
  const bool result = QApplication::notify(receiver, event);
  const qint64 end = clock_.nsecsElapsed();
  if (painted_) stats_.add_frame(double(end - start) / 1e6, end / 1000000);
  return result;
}

}  // namespace memtap::gui
