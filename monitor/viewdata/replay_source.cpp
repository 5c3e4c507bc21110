// open_recording (data_source.h): a recording loaded by two threads of its own.
//
// The reader reads the file in time order (recording_feed.h) and hands each batch, with the
// strings it brought, to the engine's thread through a short queue; the engine's thread
// gives each batch to the Analyzer and then to the block index, and runs the window's
// queries between batches, so the curves show as soon as the first batch is in.
//
// How it reads: a file of up to kHeldEvents (estimated) is read whole first, as `memtap
// report` reads it (every core decoding, then one sort): the fastest way through, but
// nothing shows until it is all read. A larger file is streamed: one thread walks it in
// time order while the engine analyses the batch before, and the first curves show after
// the first batch. The line is at 1 M events because the first curves must show within
// 1.5 s whatever the file: measured on 2 cores, a 2.2 M-event text recording held showed
// its first curves after 1.7 s (loaded in 1.45x `memtap report`'s time), streamed after
// 0.56 s (loaded in 1.8-2x); a 10 M-event one streamed, 0.6 s.
// Once the file is read, the engine's thread stays, answering queries, until the source is
// destroyed.
#include <malloc.h>
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

#include "monitor/report/report_render.h"
#include "monitor/report/units.h"
#include "monitor/store/reader/recording_feed.h"
#include "monitor/viewdata/block_index.h"
#include "monitor/viewdata/csv_database.h"
#include "monitor/viewdata/data_source.h"

namespace memtap::viewdata {

namespace {

// Events per Analyzer::add: what `memtap report` uses, so the load costs what a report
// costs; a query waits at most one batch (~30-60 ms).
constexpr size_t kBatchEvents = 262144;

std::string file_name(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

class ReplaySource final : public DataSource {
 public:
  ReplaySource(std::string path, std::unique_ptr<BlockIndex> blocks)
      : path_(std::move(path)), blocks_(std::move(blocks)), analyzer_(&strings_) {
    status_.title = file_name(path_);
    // A database pages from itself at once, while it loads.
    table_ = recording_table(path_);
    if (!table_.empty()) database_ = path_;
    struct stat st {};
    if (::stat(path_.c_str(), &st) == 0) status_.recording_bytes = uint64_t(st.st_size);
    engine_ = std::thread([this] { run_engine(); });
    reader_ = std::thread([this] { run_reader(); });
  }

  ~ReplaySource() override {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    reader_.join();
    engine_.join();
    if (!made_database_.empty()) unlink(made_database_.c_str());
  }

  void post(EngineQuery query) override {
    {
      std::lock_guard lock(mutex_);
      queries_.push_back(std::move(query));
    }
    wake_.notify_all();
  }

  BlockIndex& blocks() override { return *blocks_; }

  SourceStatus status() const override {
    std::lock_guard lock(mutex_);
    return status_;
  }

  std::string database_path() const override {
    std::lock_guard lock(mutex_);
    return database_;
  }
  std::string event_table() const override {
    std::lock_guard lock(mutex_);
    return table_;
  }
  std::string recording_path() const override { return path_; }  // set once, at the start

 private:
  // A batch on its way from the reader to the engine: its events, and the text of the
  // string ids that first appeared with it (ids are dense, so the engine's table gives
  // them the same ids).
  struct Batch {
    std::vector<MemEvent> events;
    std::vector<std::string> new_strings;
  };
  static constexpr size_t kQueuedBatches = 3;
  static constexpr double kHeldEvents = 1e6;

  void run_reader() {
    pthread_setname_np(pthread_self(), "memtap-read");
    size_t total = 0, strings_sent = 1;  // id 0 is "" in every table
    std::string error;
    FeedPlan plan = plan_feed(path_, false);
    if (estimated_events(path_) > kHeldEvents) plan.stream = true;
    const bool ok = feed_recording(
        path_, plan, kBatchEvents, &rec_, &total,
        [&](const MemEvent* events, size_t count) {
          if (total != 0) total_events_.store(total);
          Batch batch;
          {
            // A vector the engine has finished with: its pages are already there, where a
            // fresh one page-faulted its way through 16 MB per batch on the reader's thread
            // (the load's critical path).
            std::lock_guard lock(mutex_);
            if (!spare_.empty()) {
              batch.events = std::move(spare_.back());
              spare_.pop_back();
            }
          }
          batch.events.assign(events, events + count);
          for (; strings_sent < rec_.strings.size(); ++strings_sent) {
            batch.new_strings.push_back(rec_.strings.get(uint32_t(strings_sent)));
          }
          std::unique_lock lock(mutex_);
          room_.wait(lock, [&] { return stop_ || batches_.size() < kQueuedBatches; });
          if (stop_) return false;
          batches_.push_back(std::move(batch));
          wake_.notify_all();
          return true;
        },
        &error);
    std::lock_guard lock(mutex_);
    read_ok_ = ok;
    read_error_ = error;
    read_done_ = true;
    wake_.notify_all();
  }

  void run_engine() {
    pthread_setname_np(pthread_self(), "memtap-load");
    const bool keep_events = table_.empty();  // a CSV: its events make the event table
    std::vector<MemEvent> kept;
    uint64_t done = 0;
    std::unique_lock lock(mutex_);
    for (;;) {
      wake_.wait(lock, [&] {
        return stop_ || !queries_.empty() || !batches_.empty() || (read_done_ && !loaded_);
      });
      if (stop_) return;
      if (!queries_.empty()) {
        EngineQuery query = std::move(queries_.front());
        queries_.pop_front();
        lock.unlock();
        query(EngineView{analyzer_, strings_});
        lock.lock();
        continue;
      }
      if (!batches_.empty()) {
        Batch batch = std::move(batches_.front());
        batches_.pop_front();
        room_.notify_all();
        lock.unlock();
        for (const std::string& text : batch.new_strings) strings_.intern(text);
        const std::vector<MemEvent>& events = batch.events;
        analyzer_.add(events.data(), events.size());
        blocks_->add(events.data(), events.size(), strings_);
        if (keep_events) kept.insert(kept.end(), events.begin(), events.end());
        done += events.size();
        lock.lock();
        status_.events = done;
        if (!events.empty()) {
          if (status_.first_ns == 0) status_.first_ns = events.front().ts_ns;
          status_.last_ns = std::max(status_.last_ns, events.back().ts_ns);
        }
        status_.load_fraction =
            total_events_ != 0 ? double(done) / double(total_events_) : estimated_fraction(done);
        if (spare_.size() <= kQueuedBatches) spare_.push_back(std::move(batch.events));
        continue;
      }
      // Everything read and analysed.
      lock.unlock();
      finish_load(kept);
      kept = {};
      lock.lock();
    }
  }

  // On the engine's thread once the reader is done (it no longer touches rec_).
  void finish_load(const std::vector<MemEvent>& kept) {
    blocks_->finish_input();
    {
      std::lock_guard lock(mutex_);
      spare_.clear();
    }
    // The read's batches were freed in the reader threads' malloc arenas, which keep some
    // of the pages: after a 10 M-event load the window's RssAnon is 348 MB with this, 362
    // without (memtap_bench_gui FILE 2).
    malloc_trim(0);
    std::string made, db_error;
    bool ok;
    {
      std::lock_guard lock(mutex_);
      ok = read_ok_;
    }
    // A CSV recording has no database to page from: make one of its events.
    if (ok && table_.empty()) made = write_csv_database(kept, strings_, path_, &db_error);
    std::lock_guard lock(mutex_);
    loaded_ = true;
    status_.loaded = true;
    status_.load_fraction = 1;
    if (!made.empty()) {
      made_database_ = database_ = made;
      table_ = "memscope_dump";
    }
    if (!ok) status_.error = read_error_;
    if (!db_error.empty()) status_.warning = db_error;
    if (!rec_.warning.empty()) status_.warning = rec_.warning;
    status_.unfinished = rec_.unfinished;
    status_.stopped = rec_.stopped;
    if (!rec_.stopped.reason.empty() && status_.warning.empty()) {
      // The writer stops behind the events: the file's end, not the stop's time, is where its
      // curves end.
      const RecordingStop& stop = rec_.stopped;
      const std::string until =
          stop.first_ns != 0 && stop.recorded_until_ns >= stop.first_ns
              ? duration_text(stop.recorded_until_ns - stop.first_ns) + " into the session"
              : "there";
      status_.warning = path_ + ": the recording stopped " + recording_stop_position(stop) + ": " +
                        stop.reason + "; it holds the events up to " + until;
    } else if (rec_.unfinished && status_.warning.empty()) {
      status_.warning = path_ +
                        ": not finished (its monitor stopped before the end); this is what it "
                        "had committed. 'memtap recover' makes it a finished recording";
    }
    const TorchSnapshotFacts& snapshot = rec_.torch_snapshot;
    status_.synthetic_time = snapshot.known && snapshot.synthetic_time;
    if (snapshot.known && status_.warning.empty()) {
      status_.warning =
          path_ + ": a PyTorch snapshot" +
          (!snapshot.synthetic_time      ? std::string()
           : snapshot.trace_entries == 0 ? ", without a trace: its times are made up"
                                         : ", without time_us: its entries are 1 ms apart") +
          "; " + std::to_string(snapshot.blocks_before_trace) +
          (snapshot.blocks_before_trace == 1 ? " block was" : " blocks were") +
          " there before its trace began (owner '" + kBeforeTraceOwner + "')";
    }
    status_.events_dropped = rec_.rows_skipped;
    for (const RecordedProcess& p : rec_.processes) {
      ProcessEntry e;
      e.pid = p.pid;
      e.hostname = p.hostname;
      e.command_line = p.command_line;
      e.rank = p.rank;
      e.world_size = p.world_size;
      e.events_dropped = p.events_dropped;
      status_.events_dropped += p.events_dropped + p.events_lost;
      status_.processes.push_back(e);
    }
  }

  // Streamed files do not say how many events they hold: the file's size at ~100 bytes a
  // row (recording_feed.cpp's estimate), never reaching 1 before the end.
  double estimated_fraction(uint64_t done) const {
    const double estimate = std::max(1.0, double(status_.recording_bytes) / 100.0);
    return std::min(0.99, double(done) / estimate);
  }

  const std::string path_;
  std::unique_ptr<BlockIndex> blocks_;
  Recording rec_;        // the reader's, until read_done_
  StringTable strings_;  // the engine's: the same ids as rec_.strings
  Analyzer analyzer_;
  std::atomic<size_t> total_events_{0};  // known up front when the file is held

  mutable std::mutex mutex_;
  std::condition_variable wake_;              // the engine: a batch, a query, the end, or stop
  std::condition_variable room_;              // the reader: room in the queue, or stop
  std::deque<Batch> batches_;                 // guarded by mutex_
  std::vector<std::vector<MemEvent>> spare_;  // guarded by mutex_: batches' vectors to reuse
  std::deque<EngineQuery> queries_;           // guarded by mutex_
  bool read_done_ = false;                    // guarded by mutex_
  bool read_ok_ = false;                      // guarded by mutex_
  std::string read_error_;                    // guarded by mutex_
  bool loaded_ = false;                       // guarded by mutex_
  SourceStatus status_;                       // guarded by mutex_
  std::string database_;                      // guarded by mutex_; "" until there is one
  std::string table_;                         // guarded by mutex_
  std::string made_database_;  // guarded by mutex_: made of a CSV, removed at the end
  bool stop_ = false;          // guarded by mutex_
  std::thread engine_;         // last: they start once everything above exists
  std::thread reader_;
};

}  // namespace

std::unique_ptr<DataSource> open_recording(const std::string& path, std::string* error) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    *error = path + ": no such file";
    return nullptr;
  }
  if (!S_ISREG(st.st_mode)) {
    *error = path + ": not a file";
    return nullptr;
  }
  BlockIndexOptions options;
  options.wait_for_room = true;  // every block of the file, read no faster than indexed
  auto blocks = BlockIndex::create(options, error);
  if (!blocks) return nullptr;
  return std::make_unique<ReplaySource>(path, std::move(blocks));
}

}  // namespace memtap::viewdata
