// See analysis_thread.h.
#include "monitor/engine/analysis_thread.h"

#include <pthread.h>

#include <utility>

namespace memtap {

AnalysisThread::AnalysisThread(AnalyzerOptions options, size_t max_queued_rows)
    : analyzer_(&strings_, options),
      max_queued_rows_(max_queued_rows == 0 ? 1 : max_queued_rows),
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
  progress_.wait(lock,
                 [&] { return queued_rows_ == 0 || queued_rows_ + count <= max_queued_rows_; });
  const bool was_empty = queue_.empty();
  // Consecutive batches share one item: the thread then converts and analyses them in one go.
  if (queue_.empty() || queue_.back().rows.empty()) queue_.emplace_back();
  std::vector<DumpRow>& into = queue_.back().rows;
  into.insert(into.end(), rows, rows + count);
  queued_rows_ += count;
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

uint64_t AnalysisThread::rows_analysed() const {
  std::lock_guard lock(mutex_);
  return rows_analysed_;
}

void AnalysisThread::run() {
  pthread_setname_np(pthread_self(), "memtap-analyze");
  std::vector<Item> taken;
  std::vector<MemEvent> events;
  std::unique_lock lock(mutex_);
  for (;;) {
    work_.wait(lock, [&] { return !queue_.empty() || stop_; });
    if (queue_.empty()) return;  // stop_, and nothing left
    taken.swap(queue_);
    busy_ = true;
    lock.unlock();
    size_t rows = 0;
    for (Item& item : taken) {
      if (item.rows.empty()) {
        row_strings_.add(item.string_id, item.text);
        continue;
      }
      events.clear();
      append_events(item.rows.data(), item.rows.size(), row_strings_, &events);
      analyzer_.add(events.data(), events.size());
      rows += item.rows.size();
    }
    taken.clear();
    lock.lock();
    busy_ = false;
    queued_rows_ -= rows;
    rows_analysed_ += rows;
    progress_.notify_all();
  }
}

}  // namespace memtap
