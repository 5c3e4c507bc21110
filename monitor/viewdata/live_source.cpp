// See live_source.h.
#include "monitor/viewdata/live_source.h"

#include <pthread.h>
#include <sys/stat.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <mutex>
#include <thread>

#include "common/clock.h"
#include "monitor/live/live_support.h"
#include "monitor/report/report_render.h"
#include "monitor/store/reader/recording_feed.h"
#include "monitor/viewdata/block_index.h"

namespace memtap::viewdata {

namespace {

uint64_t file_bytes(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 ? uint64_t(st.st_size) : 0;
}

class LiveSource final : public DataSource {
 public:
  LiveSource(const LiveOptions& options, std::unique_ptr<BlockIndex> blocks)
      : options_(options), blocks_(std::move(blocks)), active_blocks_(blocks_.get()) {}

  // Starts the recording (and the program); false with *error and *exit_code.
  bool start(std::string* error, int* exit_code) {
    BlockIndex* index = blocks_.get();
    EventTap tap = [index](const MemEvent* events, size_t n, const StringTable& strings) {
      index->add(events, n, strings);
    };
    if (!options_.listen.empty()) {
      MemscopeWriterOptions store;
      if (!recording_options(options_.compact, &store, error)) return false;
      out_ = options_.out.empty() ? default_db_path() : options_.out;
      rec_ = LiveRecording::start(options_.listen, out_, store, error, tap, options_.security,
                                  options_.limits);
      if (!rec_) return false;
      title_ = "live: " + options_.listen;
    } else {
      run_ = ProgramRun::start(options_.run, error, exit_code, tap);
      if (!run_) return false;
      rec_ptr_ = &run_->recording();
      out_ = run_->output();
      std::string command;
      for (const std::string& a : options_.run.command) command += (command.empty() ? "" : " ") + a;
      title_ = "run: " + command;
    }
    if (rec_) rec_ptr_ = rec_.get();
    blocks_->pace_by(rec_ptr_->cpu_share());
    {
      std::lock_guard lock(mutex_);
      status_.title = title_;
      status_.live = true;
      status_.load_fraction = 1;
    }
    thread_ = std::thread([this] { receive(); });
    return true;
  }

  ~LiveSource() override {
    closing_.store(true);
    stop();
    if (thread_.joinable()) thread_.join();
  }

  void post(EngineQuery query) override {
    rec_ptr_->analysis().post([query = std::move(query)](const Analyzer& a, const StringTable& s) {
      query(EngineView{a, s});
    });
  }

  BlockIndex& blocks() override { return *active_blocks_.load(std::memory_order_acquire); }

  SourceStatus status() const override {
    std::lock_guard lock(mutex_);
    SourceStatus s = status_;
    // The analyses' progress moves between the receiving thread's updates.
    const int64_t analysed = rec_ptr_->analysis().analysed_until_ns();
    if (analysed != 0) s.last_ns = std::max(s.last_ns, analysed);
    const bool more_to_come = std::any_of(s.processes.begin(), s.processes.end(),
                                          [](const ProcessEntry& p) { return p.running; });
    const int64_t now = int64_t(realtime_ns());
    s.lag_ns = rec_ptr_->analysis().lag_ns(newest_received_ns_, now, more_to_come);
    if (more_to_come) {
      // Where the slowest program's word would reach if its agent kept up: the horizon. The
      // receiving thread's figures may be 100 ms old; the clock is read now, so a lag that
      // grows while that thread waits on the analyses grows here too.
      const int64_t behind = behind_ns(laggard_, now - horizon_lag_ns_);
      if (behind > s.lag_ns) {
        s.lag_ns = behind;
        // Behind memtap's own queues every program lags alike, and naming the one that
        // said least (a launcher idle behind its ranks' batches) would blame it.
        if (!monitor_behind_) s.lagging_pid = laggard_.pid;
      }
    }
    s.events = rec_ptr_->analysis().rows_analysed();
    if (s.writing && !finished_) s.rows_to_write = rec_ptr_->backlog();
    return s;
  }

  std::string database_path() const override {
    std::lock_guard lock(mutex_);
    return finished_ ? out_ : out_ + ".partial";
  }
  std::string event_table() const override { return "memscope_dump"; }
  // The finished file's name, also while `.partial` is written.
  std::string recording_path() const override {
    std::lock_guard lock(mutex_);
    return out_;
  }

  void stop() override { stop_.store(true); }

  std::shared_ptr<const CpuShare> cpu_share() const override {
    return rec_ptr_ != nullptr ? rec_ptr_->cpu_share() : nullptr;
  }

 private:
  void receive() {
    pthread_setname_np(pthread_self(), "memtap-receive");
    using namespace std::chrono;
    auto last_check = steady_clock::now();
    bool over = false;
    while (!over) {
      if (run_) {
        over = run_->step(20);
      } else {
        rec_->pump(20);
        const auto now = steady_clock::now();
        if (now - last_check >= milliseconds(100)) {
          rec_->check_liveness(milliseconds(500));
          // As memtap record does: the traced programs come first while any of them runs.
          rec_->set_program_running(rec_->any_running());
          last_check = now;
        }
        over = stop_.load() || interrupted();
      }
      update_status();
    }
    {
      // The receiving thread no longer updates the rate: nothing arrives any more.
      std::lock_guard lock(mutex_);
      status_.writing = true;
      status_.events_per_s = 0;
    }
    int code = -1;
    std::string error;
    if (run_) {
      code = run_->finish();
    } else {
      std::vector<std::pair<std::string, std::string>> meta = {{"memtap_version", MEMTAP_VERSION},
                                                               {"mode", "record"}};
      const bool written = rec_->finish(meta, &error);
      if (!written && rec_->writer().stopped().reason.empty()) {
        fprintf(stderr, "memtap monitor: %s\n", error.c_str());
      }
      rec_->print_summary(stderr, written);
    }
    {
      std::lock_guard lock(mutex_);
      finished_ = true;
    }
    update_status(true);
    const bool complete = error.empty() && rec_ptr_->writer().stopped().reason.empty();
    const bool reindex = complete && blocks_->status().events_dropped != 0 && !closing_.load();
    {
      std::lock_guard lock(mutex_);
      status_.live = false;
      status_.writing = false;
      status_.loaded = true;
      status_.exit_code = code;
      // A stop keeps its own words (update_status), which say more than finish()'s.
      if (!error.empty() && status_.recorded_until_ns == 0) status_.error = error;
      status_.blocks_reindexing = reindex;
    }
    if (reindex) reindex_blocks();
  }

  // The block index dropped events while the flood came (it must not hold the engine
  // back); the finished recording has them all: an index built again from it, as a replay
  // builds its own, takes the old one's place once complete, so that the block views end
  // with every block. The old index stays until the source goes: queries may still be on
  // its thread, and their answers are awaited.
  void reindex_blocks() {
    std::string error;
    BlockIndexOptions options;
    options.wait_for_room = true;
    std::unique_ptr<BlockIndex> index = BlockIndex::create(options, &error);
    bool ok = index != nullptr;
    if (ok) {
      Recording rec;
      size_t total = 0;
      // Streamed: memory bounded by a batch beside the window's own, and a window closed
      // meanwhile stops it at the next batch rather than after a whole read.
      FeedPlan plan;
      plan.stream = true;
      ok = feed_recording(
          out_, plan, kReindexBatchEvents, &rec, &total,
          [&](const MemEvent* events, size_t count) {
            index->add(events, count, rec.strings);
            return !closing_.load();
          },
          &error);
      ok = ok && !closing_.load();
      if (ok) index->finish_input();
    }
    if (!ok && !closing_.load()) {
      fprintf(stderr, "memtap: the block views keep the events they had: %s\n", error.c_str());
    }
    std::lock_guard lock(mutex_);
    if (ok) {
      reindexed_ = std::move(index);
      active_blocks_.store(reindexed_.get(), std::memory_order_release);
      ++status_.blocks_generation;
    }
    status_.blocks_reindexing = false;
  }

  // The receiving thread's figures for status(), every ~100 ms.
  void update_status(bool force = false) {
    using namespace std::chrono;
    const auto now = steady_clock::now();
    if (now - last_update_ < milliseconds(100) && !force) return;
    last_update_ = now;
    std::vector<ProcessEntry> processes;
    uint64_t received = 0, dropped = 0;
    int64_t first = 0, newest = 0;
    for (const ProcessInfo& p : rec_ptr_->session().processes()) {
      ProcessEntry e;
      e.pid = p.pid;
      e.hostname = p.hostname;
      for (const std::string& a : p.command_line)
        e.command_line += (e.command_line.empty() ? "" : " ") + a;
      e.rank = p.rank;
      e.world_size = p.world_size;
      e.running = !p.bye_received;
      e.events = p.events_received;
      e.events_dropped = p.events_dropped;
      processes.push_back(e);
      received += p.events_received;
      // Until Bye, a lost message stands for its unknown events; from Bye, events_lost
      // counts them (theirs among them) and what no gap showed.
      dropped += p.events_dropped + (p.bye_received ? p.events_lost : p.messages_lost);
      if (first == 0 || (p.start_ns != 0 && p.start_ns < first)) first = p.start_ns;
      newest = std::max(newest, p.end_ns);
    }
    dropped += rec_ptr_->session().rejected_messages();
    // The window goes on with its live analyses; the bar says where the file ends.
    const RecordingStop stop = rec_ptr_->writer().stopped();
    const std::string db = database_path();
    const uint64_t bytes = file_bytes(db) + file_bytes(db + "-wal") + file_bytes(db + ".spool");
    const double seconds = duration<double>(now - rate_since_).count();
    std::lock_guard lock(mutex_);
    if (seconds >= 1.0) {
      status_.events_per_s = double(received - rate_events_) / seconds;
      rate_events_ = received;
      rate_since_ = now;
    }
    status_.processes = std::move(processes);
    status_.events_dropped = dropped;
    status_.recording_bytes = bytes;
    status_.first_ns = first;
    if (!stop.reason.empty()) {
      status_.error = "recording stopped " + recording_stop_position(stop) + ": " + stop.reason;
      status_.recorded_until_ns = std::max<int64_t>(stop.recorded_until_ns, 1);
    }
    newest_received_ns_ = newest;
    laggard_ = rec_ptr_->session().laggard();
    horizon_lag_ns_ = rec_ptr_->horizon_lag_ns();
    monitor_behind_ = rec_ptr_->behind();
  }

  static constexpr size_t kReindexBatchEvents = 1 << 16;

  const LiveOptions options_;
  std::unique_ptr<BlockIndex> blocks_;      // the one the run's events went to
  std::unique_ptr<BlockIndex> reindexed_;   // built again from the recording, if it had to be
  std::atomic<BlockIndex*> active_blocks_;  // what blocks() gives: one of the two
  std::unique_ptr<LiveRecording> rec_;      // --listen
  std::unique_ptr<ProgramRun> run_;         // --run
  LiveRecording* rec_ptr_ = nullptr;        // whichever records
  std::string out_;
  std::string title_;
  std::atomic<bool> stop_{false};     // stop(): the session ends (--listen)
  std::atomic<bool> closing_{false};  // the source goes: no more work at all

  // The receiving thread's.
  std::chrono::steady_clock::time_point last_update_{};
  std::chrono::steady_clock::time_point rate_since_ = std::chrono::steady_clock::now();
  uint64_t rate_events_ = 0;

  mutable std::mutex mutex_;
  SourceStatus status_;             // guarded by mutex_
  int64_t newest_received_ns_ = 0;  // guarded by mutex_
  Laggard laggard_;                 // guarded by mutex_: the session's, as last looked at
  int64_t horizon_lag_ns_ = 0;      // guarded by mutex_
  bool monitor_behind_ = false;     // guarded by mutex_
  bool finished_ = false;           // guarded by mutex_: the recording is written under out_
  std::thread thread_;
};

}  // namespace

std::unique_ptr<DataSource> start_live(const LiveOptions& options, std::string* error,
                                       int* exit_code) {
  *exit_code = 2;
  BlockIndexOptions index_options;
  if (options.block_queue_events) index_options.max_queued_events = *options.block_queue_events;
  if (options.block_spool_bytes) index_options.max_spool_bytes = *options.block_spool_bytes;
  auto blocks = BlockIndex::create(index_options, error);
  if (!blocks) return nullptr;
  auto source = std::make_unique<LiveSource>(options, std::move(blocks));
  if (!source->start(error, exit_code)) return nullptr;
  return source;
}

}  // namespace memtap::viewdata
