// See analysis_thread.h.
#include "monitor/engine/analysis_thread.h"

#include <pthread.h>

#include <algorithm>
#include <utility>

#include "common/clock.h"
#include "common/cpu_share.h"

namespace memtap {

AnalysisThread::AnalysisThread(AnalyzerOptions options, size_t max_queued_rows, EventTap tap,
                               std::shared_ptr<const CpuShare> cpu_share)
    : analyzer_(&strings_, options),
      max_queued_rows_(max_queued_rows == 0 ? 1 : max_queued_rows),
      tap_(std::move(tap)),
      cpu_share_(std::move(cpu_share)),
      thread_([this] { run(); }) {}

AnalysisThread::~AnalysisThread() {
  {
    std::lock_guard lock(mutex_);
    stop_ = true;
  }
  work_.notify_one();
  thread_.join();
}

void AnalysisThread::add_rows(const DumpRow* rows, size_t count) {
  if (count == 0) return;
  std::unique_lock lock(mutex_);
  // A batch larger than the bound still goes in once the queue is empty.
  auto room = [&] { return queued_rows_ == 0 || queued_rows_ + count <= max_queued_rows_; };
  if (!room()) {
    // The receiving stops until the engine takes more: it must not pace itself meanwhile.
    producer_waiting_.store(true, std::memory_order_relaxed);
    progress_.wait(lock, room);
    producer_waiting_.store(false, std::memory_order_relaxed);
    last_wait_end_ns_.store(int64_t(realtime_ns()), std::memory_order_relaxed);
  }
  const bool was_empty = queue_.empty();
  queued_rows_ += count;
  while (count > 0) {
    // The last item is never the one the thread is analysing: it takes items off the queue.
    if (queue_.empty() || queue_.back().rows.empty() || queue_.back().rows.size() == kChunkRows) {
      Item& item = queue_.emplace_back();
      if (!spare_.empty()) {
        item.rows.swap(spare_.back());
        spare_.pop_back();
      } else {
        item.rows.reserve(kChunkRows);
      }
    }
    std::vector<DumpRow>& into = queue_.back().rows;
    const size_t n = std::min(count, kChunkRows - into.size());
    into.insert(into.end(), rows, rows + n);
    rows += n;
    count -= n;
  }
  lock.unlock();
  if (was_empty) work_.notify_one();
}

void AnalysisThread::define_string(uint32_t id, std::string_view text) {
  std::unique_lock lock(mutex_);
  const bool was_empty = queue_.empty();
  Item& item = queue_.emplace_back();
  item.string_id = id;
  item.text.assign(text);
  lock.unlock();
  if (was_empty) work_.notify_one();
}

const Analyzer& AnalysisThread::drained() {
  std::unique_lock lock(mutex_);
  progress_.wait(lock, [&] { return queue_.empty() && !busy_; });
  return analyzer_;
}

void AnalysisThread::post(AnalysisQuery query) {
  {
    std::lock_guard lock(mutex_);
    queries_.push_back(std::move(query));
  }
  work_.notify_one();
}

void AnalysisThread::serve_queries(std::unique_lock<std::mutex>& lock) {
  while (!queries_.empty()) {
    AnalysisQuery query = std::move(queries_.front());
    queries_.pop_front();
    lock.unlock();
    query(analyzer_, strings_);
    lock.lock();
  }
}

uint64_t AnalysisThread::rows_analysed() const {
  std::lock_guard lock(mutex_);
  return rows_analysed_;
}

int64_t AnalysisThread::lag_ns(int64_t newest_received_ns, int64_t now_ns,
                               bool more_to_come) const {
  const int64_t analysed = analysed_until_ns();
  if (analysed == 0) return 0;
  int64_t lag = std::max<int64_t>(0, newest_received_ns - analysed);
  const bool held_back =
      more_to_come &&
      (producer_waiting() ||
       now_ns - last_wait_end_ns_.load(std::memory_order_relaxed) < kHeldBackMemoryNs);
  if (held_back) lag = std::max(lag, now_ns - analysed);
  return lag;
}

size_t AnalysisThread::rows_waiting() const {
  std::lock_guard lock(mutex_);
  return queued_rows_;
}

void AnalysisThread::run() {
  pthread_setname_np(pthread_self(), "memtap-analyze");
  CpuPacer pacer(cpu_share_.get());
  std::vector<MemEvent> events;
  std::unique_lock lock(mutex_);
  for (;;) {
    work_.wait(lock, [&] { return !queue_.empty() || !queries_.empty() || stop_; });
    serve_queries(lock);
    if (queue_.empty()) {
      if (stop_) return;  // and nothing left
      continue;
    }
    Item item = std::move(queue_.front());
    queue_.pop_front();
    busy_ = true;
    lock.unlock();
    const size_t rows = item.rows.size();
    if (rows == 0) {
      row_strings_.add(item.string_id, item.text);
    } else {
      events.clear();
      append_events(item.rows.data(), rows, row_strings_, &events);
      analyzer_.add(events.data(), events.size());
      if (!events.empty()) {
        analysed_until_ns_.store(events.back().ts_ns, std::memory_order_relaxed);
        if (tap_) tap_(events.data(), events.size(), strings_);
      }
    }
    pacer.pace(&producer_waiting_);
    paced_waits_.store(pacer.waits(), std::memory_order_relaxed);
    lock.lock();
    busy_ = false;
    if (rows != 0) {
      queued_rows_ -= rows;
      rows_analysed_ += rows;
      item.rows.clear();
      // Enough spares for a full queue; beyond that a chunk is freed.
      if (spare_.size() * kChunkRows < max_queued_rows_ + kChunkRows) {
        spare_.push_back(std::move(item.rows));
      }
    }
    progress_.notify_all();
  }
}

}  // namespace memtap
