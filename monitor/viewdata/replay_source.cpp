// open_recording (data_source.h): a recording loaded on a thread of its own.
//
// The loader thread is the engine's thread: it reads the file in batches (held in memory
// when that fits, else streamed: recording_feed.h, the same choice `memtap report` makes),
// gives each batch to the Analyzer and then to the block index, and runs the window's
// queries between batches, so the curves show as soon as the first batch is in. Once the
// file is read it stays, answering queries, until the source is destroyed.
#include <pthread.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>

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
      : path_(std::move(path)), blocks_(std::move(blocks)), analyzer_(&rec_.strings) {
    status_.title = file_name(path_);
    // A database pages from itself at once, while it loads.
    table_ = recording_table(path_);
    if (!table_.empty()) database_ = path_;
    struct stat st {};
    if (::stat(path_.c_str(), &st) == 0) status_.recording_bytes = uint64_t(st.st_size);
    thread_ = std::thread([this] { run(); });
  }

  ~ReplaySource() override {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    thread_.join();
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

 private:
  void serve_queries() {
    std::unique_lock lock(mutex_);
    while (!queries_.empty()) {
      EngineQuery query = std::move(queries_.front());
      queries_.pop_front();
      lock.unlock();
      query(EngineView{analyzer_, rec_.strings});
      lock.lock();
    }
  }

  bool stopping() {
    std::lock_guard lock(mutex_);
    return stop_;
  }

  void run() {
    pthread_setname_np(pthread_self(), "memtap-load");
    const FeedPlan plan = plan_feed(path_, false);
    size_t total = 0;
    uint64_t done = 0;
    std::string error;
    const bool ok = feed_recording(
        path_, plan, kBatchEvents, &rec_, &total,
        [&](const MemEvent* events, size_t count) {
          analyzer_.add(events, count);
          blocks_->add(events, count, rec_.strings);
          done += count;
          {
            std::lock_guard lock(mutex_);
            status_.events = done;
            if (status_.first_ns == 0) status_.first_ns = events[0].ts_ns;
            status_.last_ns = std::max(status_.last_ns, events[count - 1].ts_ns);
            status_.load_fraction =
                total != 0 ? double(done) / double(total) : estimated_fraction(done);
          }
          serve_queries();
          return !stopping();
        },
        &error);
    blocks_->finish_input();
    // A CSV recording has no database to page from: make one of its events (they are
    // held: the CSV formats are read whole).
    std::string made, db_error;
    if (ok && recording_table(path_).empty()) made = write_csv_database(rec_, path_, &db_error);
    {
      std::lock_guard lock(mutex_);
      status_.loaded = true;
      status_.load_fraction = 1;
      if (!made.empty()) {
        made_database_ = database_ = made;
        table_ = "memscope_dump";
      }
      if (!ok) status_.error = error;
      if (!db_error.empty()) status_.warning = db_error;
      if (!rec_.warning.empty()) status_.warning = rec_.warning;
      status_.events_dropped = rec_.rows_skipped;
      for (const RecordedProcess& p : rec_.processes) {
        ProcessEntry e;
        e.pid = p.pid;
        e.hostname = p.hostname;
        e.command_line = p.command_line;
        e.rank = p.rank;
        e.world_size = p.world_size;
        e.events_dropped = p.events_dropped;
        status_.events_dropped += p.events_dropped;
        status_.processes.push_back(e);
      }
    }
    std::unique_lock lock(mutex_);
    for (;;) {
      wake_.wait(lock, [&] { return stop_ || !queries_.empty(); });
      if (stop_) return;
      lock.unlock();
      serve_queries();
      lock.lock();
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
  Recording rec_;  // the loader thread's; its strings are the engine's
  Analyzer analyzer_;

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<EngineQuery> queries_;  // guarded by mutex_
  SourceStatus status_;              // guarded by mutex_
  std::string database_;             // guarded by mutex_; "" until loaded
  std::string table_;                // guarded by mutex_
  std::string made_database_;        // guarded by mutex_: made of a CSV, removed at the end
  bool stop_ = false;                // guarded by mutex_
  std::thread thread_;               // last: starts once everything above exists
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
