// The live analyses on a thread of their own: the Session's rows go in, the Analyzer's
// report comes out once drained.
//
// `memtap run` received, decoded, ordered, converted and analysed every event on one
// thread, so the engine took events no faster than all of those together. Here the
// receiving thread only queues the rows (and the strings they name, in the same order, so
// a row never comes before its text), and this thread converts them to MemEvents and feeds
// the Analyzer. The queue is bounded: when the analyses fall behind by max_queued_rows the
// producer waits, which leaves the backlog where it was before (ZeroMQ's queue and the
// agents' bounded buffers, whose drops are counted), not in this process's memory.
//
// Rows travel in chunks of kChunkRows that are reused once analysed: each chunk analysed
// makes room for the producer at once (taking the whole queue and accounting for it only
// at the end stalled the receiving thread for as long as a million rows took), and no
// chunk's pages are given back to the kernel and faulted in again.
//
// The window reads the engine through this thread: post() runs a query here, between two
// chunks, ahead of the rows still queued (a view shows what is analysed so far, and does
// not wait behind the backlog); and an EventTap sees every analysed batch of events, on
// this thread, right after the Analyzer (the window's block index is fed that way).
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstddef>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "common/cpu_share.h"
#include "monitor/engine/analyzer.h"
#include "monitor/engine/row_events.h"
#include "monitor/model/dump_row.h"

namespace memtap {

// Called on the analysis thread with each batch of events the Analyzer has just taken,
// and the table their string ids refer to.
using EventTap = std::function<void(const MemEvent* events, size_t count, const StringTable&)>;
// Run on the analysis thread with the Analyzer as it stands and its strings.
using AnalysisQuery = std::function<void(const Analyzer&, const StringTable&)>;

class AnalysisThread {
 public:
  // `cpu_share`: how the thread paces itself behind the program (common/cpu_share.h);
  // null: never.
  explicit AnalysisThread(AnalyzerOptions options = {}, size_t max_queued_rows = size_t{1} << 20,
                          EventTap tap = {}, std::shared_ptr<const CpuShare> cpu_share = {});
  // Analyses what is queued, then stops the thread.
  ~AnalysisThread();
  AnalysisThread(const AnalysisThread&) = delete;
  AnalysisThread& operator=(const AnalysisThread&) = delete;

  // Queues copies of the rows (trace slices are skipped when analysed, as append_events
  // does); waits while max_queued_rows are already queued.
  void add_rows(const DumpRow* rows, size_t count);
  // Session string `id` is `text` (the Session's StringSink), for rows queued after it.
  void define_string(uint32_t id, std::string_view text);

  // Waits until everything queued so far has been analysed, and returns the Analyzer. Use
  // it (and its StringTable) only while nothing is being queued, e.g. after the session
  // finished.
  const Analyzer& drained();

  // Runs `query` on the analysis thread before the next queued chunk (any thread).
  void post(AnalysisQuery query);

  // Rows analysed so far (any thread; for progress figures).
  uint64_t rows_analysed() const;
  // The time of the newest event analysed, epoch ns (0 before any; any thread): how far
  // behind the programs the analyses, and so the window, are.
  int64_t analysed_until_ns() const { return analysed_until_ns_.load(std::memory_order_relaxed); }
  // How far the analyses, and so the window, are behind the programs at `now_ns` (epoch;
  // any thread): behind the newest event received, and, while programs still send
  // (`more_to_come`: some have not said Bye) and the receiving waits on the analyses for
  // room (or did within the last 250 ms), behind the clock, since what the programs sent
  // meanwhile waits unreceived in ZeroMQ's queues and the agents' buffers. (On two cores
  // with two ranks training, the newest event received said 0.4 s while the view was 2 s
  // behind them.)
  int64_t lag_ns(int64_t newest_received_ns, int64_t now_ns, bool more_to_come) const;
  // Rows queued and not yet analysed (any thread).
  size_t rows_waiting() const;
  // Whether add_rows is waiting for room now, and how often the thread has slept to keep to
  // its CPU share (any thread; tests).
  bool producer_waiting() const { return producer_waiting_.load(std::memory_order_relaxed); }
  uint64_t paced_waits() const { return paced_waits_.load(std::memory_order_relaxed); }

 private:
  static constexpr size_t kChunkRows = 8192;
  // One queued thing: a chunk of rows, or a string definition (rows empty).
  struct Item {
    std::vector<DumpRow> rows;
    uint32_t string_id = 0;
    std::string text;
  };
  void run();
  // With mutex_ held (released while each query runs): runs the posted queries.
  void serve_queries(std::unique_lock<std::mutex>& lock);

  StringTable strings_;
  RowStrings row_strings_{&strings_};
  Analyzer analyzer_;
  const size_t max_queued_rows_;
  const EventTap tap_;
  const std::shared_ptr<const CpuShare> cpu_share_;
  std::atomic<int64_t> analysed_until_ns_{0};
  // add_rows waits for room: the thread does not pace itself meanwhile (CpuPacer::pace).
  std::atomic<bool> producer_waiting_{false};
  // When add_rows last stopped waiting (epoch ns), and how long that counts as now for lag_ns:
  // the receiving waits in turns, each for one chunk's analysis (milliseconds).
  std::atomic<int64_t> last_wait_end_ns_{0};
  static constexpr int64_t kHeldBackMemoryNs = 250'000'000;
  std::atomic<uint64_t> paced_waits_{0};

  mutable std::mutex mutex_;
  std::condition_variable work_;             // the thread: something queued, or stop
  std::condition_variable progress_;         // producers and drained(): room, or all done
  std::deque<Item> queue_;                   // guarded by mutex_
  std::deque<AnalysisQuery> queries_;        // guarded by mutex_
  std::vector<std::vector<DumpRow>> spare_;  // guarded by mutex_: analysed chunks, for reuse
  size_t queued_rows_ = 0;                   // guarded by mutex_: queued or being analysed
  bool busy_ = false;                        // guarded by mutex_: the thread holds a taken item
  bool stop_ = false;                        // guarded by mutex_
  uint64_t rows_analysed_ = 0;               // guarded by mutex_
  std::thread thread_;                       // last: starts once everything above exists
};

}  // namespace memtap
