// One live recording: a bound PULL socket feeding the engine's Session, whose rows go to
// the msMemScope writer and the run summary. Used by `memtap run` and `memtap record`.
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "common/cpu_share.h"
#include "monitor/engine/analysis_thread.h"
#include "monitor/engine/session.h"
#include "monitor/live/arrival_queue.h"
#include "monitor/live/horizon_lag.h"
#include "monitor/live/run_summary.h"
#include "monitor/store/memscope_writer.h"
#include "monitor/transport/pull_socket.h"

namespace memtap {

class LiveRecording {
 public:
  // Opens the output (written as `store` says) and binds the endpoint; nullptr with one
  // line in *error otherwise. Nothing is left on disk when it fails.
  // `tap` sees every batch the live analyses take, on their thread (the window's block
  // index). `security`: --keys and --insecure (PullSocket::bind). `limits`: what untrusted
  // senders can make the session hold (--max-processes).
  static std::unique_ptr<LiveRecording> start(const std::string& endpoint,
                                              const std::string& db_path,
                                              const MemscopeWriterOptions& store,
                                              std::string* error, EventTap tap = {},
                                              const ListenSecurity& security = {},
                                              const SessionLimits& limits = {});

  // Receives and ingests messages for up to timeout_ms, at most `max_messages` (0: only
  // reads ahead what has arrived, as a monitor busy elsewhere does; tests). Returns the
  // number handled. Says once, on stderr, when the recording stopped (a full disk:
  // MemscopeWriter::stopped); the session and its live analyses go on.
  size_t pump(int timeout_ms, size_t max_messages = SIZE_MAX);

  // Forgets processes on this host that are gone without Bye, once nothing has arrived
  // from anyone for `grace` after their death was seen.
  void check_liveness(std::chrono::milliseconds grace);
  // `pid` died at `epoch_ns` (waitpid returned): if it is forgotten, its ended_by says how
  // long after its last event.
  void process_died(uint32_t pid, int64_t epoch_ns) { died_ns_[pid] = epoch_ns; }

  bool any_running() const;
  // Whether a process not ended in the session still runs, as far as can be told: one on
  // this host that has not exited, or one on another (which cannot be looked at). False
  // while the session only has rows of exited processes still to take in.
  bool any_alive() const;
  // Whether the program being traced runs: while it does, memtap's threads keep to a small
  // share of a core when every core is busy, rising with how far behind they are
  // (common/cpu_share.h); once it has ended they take what they need.
  void set_program_running(bool running);
  // Tests: whether other work fills the cores, asked instead of cores_busy_without_me; and
  // the share every pacing thread keeps to (permille), instead of share_while_running's.
  void set_cores_busy_probe(bool (*probe)()) { cpu_share_->cores_busy = probe; }
  void pin_share(uint32_t permille) { pinned_permille_ = permille; }
  // What every memtap thread of this recording paces itself by while the program runs: for
  // the window's block index too (BlockIndex::pace_by).
  std::shared_ptr<const CpuShare> cpu_share() const { return cpu_share_; }
  // The receiving thread's sleeps behind the program so far (CpuPacer::waits).
  uint64_t receiving_waits() const { return pacer_.waits(); }
  // One line of how far each stage got, for MEMTAP_PROGRESS_MS: events received from the
  // agents, rows analysed by the engine, rows committed to the database and rows that
  // waited on disk, with the CLOCK_MONOTONIC time it was taken; whether memtap's threads
  // are pacing themselves behind the program (paced=1), at what share of a core; rows not
  // recorded since the recording stopped, and the monitor's resident memory; and the
  // messages refused so far, the Hellos dropped and those still pending (InputCounts); and
  // how far the slowest running process's word is behind the horizon (Session::laggard).
  std::string progress_line() const;
  // Whether the engine has analysed, and the writer taken into SQLite, every row so far (a
  // recording that stopped has nothing more to take).
  bool caught_up() const;
  // Rows the writer has been given but not yet committed to the database; 0 once the
  // recording stopped (those rows are not recorded, and nothing waits for them).
  uint64_t backlog() const;
  // A process on this host that is gone although it never said Bye (nor was forgotten).
  bool any_exited_without_bye() const;
  bool saw_pid(uint32_t pid) const;
  // Fork events the session holds back until every process has passed them
  // (Session::held_forks).
  size_t held_forks() const;
  std::chrono::steady_clock::time_point last_message() const { return last_message_; }
  // How far behind the wall clock the session's horizon stands now (horizon_lag.h): rows
  // newer than it wait, whatever the agents do, so a live view is behind the programs by
  // what their slowest agent lags behind it (Session::laggard), not behind the clock.
  int64_t horizon_lag_ns() const;
  // Whether the last pump() found memtap itself behind the programs: it ran out of time with
  // messages still coming, or the engine holds more than a few chunks it has not analysed.
  // Else what the programs have not said yet waits in their agents.
  bool behind() const { return live_behind_->load(std::memory_order_relaxed); }
  // Messages read from the socket that the engine has not taken yet (arrival_queue.h).
  size_t waiting_messages() const { return queue_.messages(); }

  // Ends the session, writes the database. False with *error if the recording failed
  // (writer().stopped() says whether it stopped early, and where).
  bool finish(const std::vector<std::pair<std::string, std::string>>& meta, std::string* error);
  // Where the recording went (`written`: finish() succeeded; else what the `.partial` file
  // holds), what arrived and what was lost, and the live report, which covers every event
  // whatever became of the file.
  void print_summary(FILE* out, bool written) const;

  const std::string& endpoint() const { return socket_->endpoint(); }
  const std::string& db_path() const { return db_path_; }

  // The live analyses, for the window's queries (AnalysisThread::post; any thread).
  AnalysisThread& analysis() { return *analysis_; }
  // The receiving thread's view of the session (not thread-safe: the thread that pumps).
  const Session& session() const { return *session_; }
  const MemscopeWriter& writer() const { return *writer_; }

 private:
  LiveRecording() = default;
  bool is_local(uint32_t pid) const;  // on this host, so kill(pid, 0) says whether it lives
  // The machine's runnable threads that are the traced processes' own (not the agent's) and
  // other processes' (neither theirs nor memtap's), looked at again when the last look is
  // old; zeros once the program has ended (cpu_share.h, share_while_running).
  struct RunnableNow {
    int program = 0;
    int others = 0;
  };
  RunnableNow runnable_now();
  RecentRunnable recent_;
  uint32_t pinned_permille_ = 0;  // pin_share(); 0: none
  std::chrono::steady_clock::time_point next_runnable_look_{};
  const int usable_cpus_ = usable_cpus();
  // Set by pump(), read by the writer's thread (MemscopeWriterOptions::live_behind): the
  // engine or the receiving loop is behind the live rate. Shared: the writer may ask after
  // this object began to go away.
  std::shared_ptr<std::atomic<bool>> live_behind_ = std::make_shared<std::atomic<bool>>(false);
  // Followed by the writer, its checkpointer, the analysis thread and pump(); shared, as
  // live_behind_. The minimum share is read once, from MEMTAP_CPU_SHARE.
  std::shared_ptr<CpuShare> cpu_share_ = std::make_shared<CpuShare>();
  CpuPacer pacer_{cpu_share_.get()};  // pump()'s
  uint32_t min_share_permille_ = CpuShare::kMinPermille;
  std::unique_ptr<PullSocket> socket_;
  // The socket's messages, read ahead and taken in the order they arrived (arrival_queue.h).
  ArrivalQueue queue_;
  void read_ahead(int timeout_ms);
  std::unique_ptr<MemscopeWriter> writer_;
  // The live report: the session's rows, analysed on their own thread by the same engine
  // that `memtap report` runs on the file. Before session_, whose
  // callbacks feed it, so that it outlives them.
  std::unique_ptr<AnalysisThread> analysis_;
  uint64_t rows_to_analyse_ = 0;  // rows handed to analysis_
  std::unique_ptr<Session> session_;
  std::string db_path_;
  std::string hostname_;
  std::map<uint32_t, std::chrono::steady_clock::time_point> dead_since_;
  std::map<uint32_t, int64_t> died_ns_;  // process_died
  std::chrono::steady_clock::time_point last_message_ = std::chrono::steady_clock::now();
  // How far behind the present rows are held, beyond what the watermarks ask
  // (MEMTAP_HORIZON_MS, and longer after slow Hellos): a process that starts now sends its
  // Hello only after its start-up allocations (and after loading its sender, which on a
  // busy machine takes longer), and those must still find their place in the time order.
  HorizonLag horizon_lag_{250'000'000};
  bool told_stopped_ = false;  // pump() said that the recording stopped
};

}  // namespace memtap
