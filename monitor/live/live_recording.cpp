// See live_recording.h.
#include "monitor/live/live_recording.h"

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <ctime>

#include "common/clock.h"
#include "common/terminal_progress.h"
#include "monitor/report/report_render.h"
#include "monitor/report/units.h"

namespace memtap {

std::unique_ptr<LiveRecording> LiveRecording::start(
    const std::string& endpoint, const std::string& db_path, const MemscopeWriterOptions& store,
    std::string* error, EventTap tap, const ListenSecurity& security, const SessionLimits& limits) {
  std::unique_ptr<LiveRecording> r(new LiveRecording);
  r->db_path_ = db_path;
  if (const char* horizon = getenv("MEMTAP_HORIZON_MS"); horizon != nullptr && *horizon != '\0') {
    char* end = nullptr;
    errno = 0;
    const unsigned long long ms = strtoull(horizon, &end, 10);
    if (errno != 0 || *end != '\0' || !isdigit((unsigned char)horizon[0]) || ms > 3'600'000) {
      *error = std::string("MEMTAP_HORIZON_MS='") + horizon +
               "': expected milliseconds, at most 3600000";
      return nullptr;
    }
    r->horizon_lag_ = HorizonLag(int64_t(ms) * 1'000'000);
  }
  // The socket first: a failed bind must not leave a half-made database behind.
  r->socket_ = PullSocket::bind(endpoint, error, security);
  if (!r->socket_) return nullptr;
  // The live view first: while the engine or the receiving loop is behind, the writer
  // waits and rows queue on disk, since on few cores both cannot have the CPU.
  MemscopeWriterOptions options = store;
  // Only while the program runs: once it has ended, the engine and the writer finish side
  // by side, sooner than one after the other.
  options.live_behind = [behind = r->live_behind_, share = r->cpu_share_] {
    return writer_leaves_the_cpu(behind->load(std::memory_order_relaxed),
                                 share->limited.load(std::memory_order_relaxed),
                                 share->spare_cores.load(std::memory_order_relaxed));
  };
  r->min_share_permille_ = min_share_permille();
  r->cpu_share_->permille.store(r->min_share_permille_, std::memory_order_relaxed);
  r->cpu_share_->view_permille.store(r->min_share_permille_, std::memory_order_relaxed);
  options.cpu_share = r->cpu_share_;
  r->writer_ = MemscopeWriter::create(db_path, options, error);
  if (!r->writer_) return nullptr;
  LiveRecording* self = r.get();
  r->analysis_ = std::make_unique<AnalysisThread>(AnalyzerOptions{}, size_t{1} << 20,
                                                  std::move(tap), r->cpu_share_);
  r->session_ = std::make_unique<Session>(
      [self](const DumpRow* rows, size_t n) {
        // The engine first: the writer's append may write its queue to disk (the spool),
        // and the live view should not wait on that.
        self->analysis_->add_rows(rows, n);
        self->writer_->append(rows, n);
        self->rows_to_analyse_ += n;
      },
      [self](uint32_t id, std::string_view text) {
        self->writer_->define_string(id, text);
        self->analysis_->define_string(id, text);
      },
      limits);
  char host[256] = {};
  gethostname(host, sizeof host - 1);
  r->hostname_ = host;
  return r;
}

namespace {

// Exited: no such process, or a zombie its parent has not reaped yet (which kill(pid, 0)
// would call alive, and which sends nothing more either).
bool process_gone(uint32_t pid) {
  if (kill(pid_t(pid), 0) != 0) return errno == ESRCH;
  char path[64];
  snprintf(path, sizeof path, "/proc/%u/stat", pid);
  FILE* f = fopen(path, "re");
  if (!f) return true;
  char buf[512];
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  // "pid (comm) S ...": the state follows the last ')' (comm may contain one).
  const char* close = strrchr(buf, ')');
  return close && close[1] == ' ' && close[2] == 'Z';
}

// finish()'s line on a terminal: the rows left to write, then the steps that have no count.
// `backlog`: LiveRecording::backlog(), which is 0 once the recording stopped.
ProgressSample finishing_progress(const MemscopeWriter& writer, uint64_t backlog) {
  ProgressSample s;
  switch (writer.finish_step()) {
    case FinishStep::kRecording:
    case FinishStep::kWritingRows:
      s.what = "writing the recording";
      s.done = writer.rows_written();
      s.total = s.done + backlog;
      break;
    case FinishStep::kCheckpointing:
      s.what = "checkpointing the recording";
      break;
    case FinishStep::kIndexing:
      s.what = "building msMemScope's indexes";
      break;
    case FinishStep::kClosing:
      s.what = "closing the recording";
      break;
  }
  return s;
}

}  // namespace

// Takes what the socket holds into the arrival queue, waiting up to timeout_ms for the first
// message when there is none; at most kReadAhead messages a call, so that a flood cannot
// keep the call here, and none while the queue is full (the rest waits in ZeroMQ's).
void LiveRecording::read_ahead(int timeout_ms) {
  constexpr size_t kReadAhead = 4096;
  zmq::message_t msg;
  for (size_t i = 0; i < kReadAhead && !queue_.full() && socket_->receive(&msg, timeout_ms); ++i) {
    const uint64_t connection = PullSocket::connection(msg);
    queue_.push(connection, std::move(msg));
    timeout_ms = 0;
  }
}

size_t LiveRecording::pump(int timeout_ms, size_t max_messages) {
  int64_t lag_ns = horizon_lag_.lag_ns(int64_t(monotonic_ns()));
  session_->set_horizon(int64_t(realtime_ns()) - lag_ns);
  // Under a flood the socket is never empty, so the loop also ends after kMaxPumpTime: the
  // caller's progress lines and liveness checks still come on time.
  constexpr std::chrono::milliseconds kMaxPumpTime(20);
  const auto pump_end = std::chrono::steady_clock::now() + kMaxPumpTime;
  size_t handled = 0;
  bool out_of_time = false;
  zmq::message_t msg;
  uint64_t connection = 0;
  for (;;) {
    read_ahead(queue_.empty() && handled == 0 ? timeout_ms : 0);
    if (handled == max_messages || !queue_.pop(&msg, &connection)) break;
    // The horizon moves with every message: set once per call, it held every row newer than
    // the call's start until the call ended, and under a flood that was seconds of rows
    // kept from the engine.
    if (handled != 0) session_->set_horizon(int64_t(realtime_ns()) - lag_ns);
    const MessagePeer peer{connection, PullSocket::peer_address(msg)};
    IngestResult res = session_->ingest(msg.data(), msg.size(), peer);
    if (res.ok && res.hello_start_ns != 0) {
      const auto now = int64_t(monotonic_ns());
      horizon_lag_.saw_hello(int64_t(realtime_ns()) - res.hello_start_ns, now);
      lag_ns = horizon_lag_.lag_ns(now);
    }
    queue_.settle(connection, res.ok && res.awaits_first_batch);
    // The first few are shown; a flood is only counted (summary and memtap_meta).
    constexpr uint64_t kShown = 10;
    if (!res.ok && session_->rejected_messages() <= kShown) {
      fprintf(stderr, "memtap: rejected a message: %s%s\n", res.error.c_str(),
              session_->rejected_messages() == kShown ? " (further ones are only counted)" : "");
    }
    ++handled;
    // After every message: one carries up to 65,536 events, and a pace every 64 messages
    // never came in a two-thread allocation storm (4 M events in ~60 messages), whose
    // receiving thread took 100 ms of its 175 at a share of 25-70 permille.
    pacer_.pace();
    if (std::chrono::steady_clock::now() >= pump_end) {
      out_of_time = true;
      break;
    }
  }
  if (handled) last_message_ = std::chrono::steady_clock::now();
  // Behind: this call ran out of time with messages still coming, or the engine holds more
  // than a few chunks it has not analysed.
  constexpr size_t kEngineBehindRows = 32768;
  const bool flooded = out_of_time;
  const size_t unanalysed = analysis_->rows_waiting();
  live_behind_->store(flooded || unanalysed > kEngineBehindRows, std::memory_order_relaxed);
  // How far behind the path from the agents to the engine is: how old the newest rows
  // released in order are, which counts what waits in the agents' buffers and sockets and
  // in the engine's queue (a full queue stops the receiving). A program that exits waits
  // for all of it, so the further behind, the larger memtap's share while the program
  // runs: a share that stayed small left an exiting program waiting ~50 s for its final
  // flush beside two busy loops. Not rows queued inside the monitor: counting the writer's
  // and the engine's queues took a quarter of a core from a two-thread allocation storm,
  // whose rows wait there without holding anything up until the program ends.
  const int64_t released = session_->released_ns();
  const double behind_s =
      released > 0 ? double(int64_t(realtime_ns()) - lag_ns - released) / 1e9 : 0.0;
  const RunnableNow runnable = runnable_now();
  // A pinned share holds for the window's threads too.
  uint32_t share = pinned_permille_, view = pinned_permille_;
  if (pinned_permille_ == 0) {
    share = share_while_running(min_share_permille_, behind_s, runnable.program, runnable.others,
                                usable_cpus_);
    view = view_share(share, min_share_permille_, runnable.program, usable_cpus_);
  }
  cpu_share_->permille.store(share, std::memory_order_relaxed);
  cpu_share_->view_permille.store(view, std::memory_order_relaxed);
  if (!told_stopped_) {
    const RecordingStop stop = writer_->stopped();
    if (!stop.reason.empty()) {
      told_stopped_ = true;
      fprintf(stderr,
              "memtap: recording stopped %s: %s. The live analyses go on, and so does the "
              "program; later events are counted as not recorded\n",
              recording_stop_position(stop).c_str(), stop.reason.c_str());
    }
  }
  return handled;
}

void LiveRecording::set_program_running(bool running) {
  cpu_share_->limited.store(running, std::memory_order_relaxed);
}

void LiveRecording::check_liveness(std::chrono::milliseconds grace) {
  auto now = std::chrono::steady_clock::now();
  for (uint32_t pid : session_->running_pids()) {
    if (!is_local(pid)) continue;
    if (!process_gone(pid)) {
      dead_since_.erase(pid);
      continue;
    }
    auto it = dead_since_.emplace(pid, now).first;
    if (now - it->second >= grace && now - last_message_ >= grace) {
      const auto died = died_ns_.find(pid);
      session_->forget_process(pid, died == died_ns_.end() ? 0 : died->second);
      dead_since_.erase(pid);
    }
  }
}

int64_t LiveRecording::horizon_lag_ns() const {
  return horizon_lag_.lag_ns(int64_t(monotonic_ns()));
}

uint64_t LiveRecording::backlog() const {
  if (!writer_->stopped().reason.empty()) return 0;
  return writer_->rows_queued() - writer_->rows_written();
}

bool LiveRecording::any_running() const {
  return !session_->running_pids().empty();
}

bool LiveRecording::any_alive() const {
  for (uint32_t pid : session_->running_pids())
    if (!is_local(pid) || !process_gone(pid)) return true;
  return false;
}

LiveRecording::RunnableNow LiveRecording::runnable_now() {
  // A file read per thread of every local process: looked at every 25 ms, and only while
  // the program runs (the share is not followed after).
  constexpr std::chrono::milliseconds kEvery(25);
  const auto now = std::chrono::steady_clock::now();
  if (!cpu_share_->limited.load(std::memory_order_relaxed)) {
    cpu_share_->cores_full.store(-1, std::memory_order_relaxed);
    cpu_share_->spare_cores.store(-1, std::memory_order_relaxed);
    return {};
  }
  if (now < next_runnable_look_) return {recent_.program(), recent_.others()};
  next_runnable_look_ = now + kEvery;
  int program = 0, agents = 0;
  for (uint32_t pid : session_->running_pids()) {
    if (!is_local(pid)) continue;
    const ProgramThreads t = program_runnable_threads(pid);
    program += t.program;
    agents += t.agent;
  }
  // The pacers' view of the cores too.
  const int memtap = agents + std::max(0, my_runnable_threads());
  const int machine = machine_runnable_threads();
  cpu_share_->cores_full.store(recent_.look(program, memtap, machine, usable_cpus_),
                               std::memory_order_relaxed);
  cpu_share_->spare_cores.store(machine < 0 ? -1 : recent_.spare_cores(usable_cpus_),
                                std::memory_order_relaxed);
  return {recent_.program(), recent_.others()};
}

bool LiveRecording::is_local(uint32_t pid) const {
  for (const ProcessInfo& p : session_->processes()) {
    if (p.pid == pid && !p.hostname.empty() && p.hostname != hostname_) return false;
  }
  return true;
}

bool LiveRecording::any_exited_without_bye() const {
  for (uint32_t pid : session_->running_pids()) {
    if (is_local(pid) && process_gone(pid)) return true;
  }
  return false;
}

size_t LiveRecording::held_forks() const {
  return session_->held_forks();
}

bool LiveRecording::saw_pid(uint32_t pid) const {
  for (const ProcessInfo& p : session_->processes()) {
    if (p.pid == pid) return true;
  }
  return false;
}

bool LiveRecording::finish(const std::vector<std::pair<std::string, std::string>>& meta,
                           std::string* error) {
  // What processes that already exited sent may still be in the socket: read until each
  // of them has said Bye, or nothing has come for a moment (bounded either way). Processes
  // still running are not waited for: they would send forever. The moment counts from the
  // stop too, not only from the last message: a process that was quiet for a while before it
  // exited may have its last Batch and Bye still on the way (behind a relay, or a busy
  // machine's I/O thread), and a quiet of 300 ms before the stop is no sign that nothing
  // more comes.
  using namespace std::chrono;
  const auto stopped = steady_clock::now();
  const auto deadline = stopped + seconds(3);
  while (steady_clock::now() < deadline) {
    if (pump(50) > 0 && any_exited_without_bye()) continue;
    const auto quiet_since = std::max(last_message_, stopped);
    if (!any_exited_without_bye() || steady_clock::now() - quiet_since >= milliseconds(300)) {
      break;
    }
  }
  // Then whatever is queued already: a round of pump() ends after 20 ms, and what is left
  // unread at the end would be lost without a count.
  while (pump(0) > 0 && steady_clock::now() < deadline) {
  }
  for (const auto& [pid, died_ns] : died_ns_) session_->forget_process(pid, died_ns);
  session_->finish();
  live_behind_->store(false, std::memory_order_relaxed);
  // SQLite is the slow end: say what is left rather than look hung. On a terminal, as a
  // line that counts down (the writer's counters, read by the line's own thread).
  std::unique_ptr<TerminalProgress> progress =
      TerminalProgress::start([this] { return finishing_progress(*writer_, backlog()); });
  if (!progress && backlog() > 100000) {
    fprintf(stderr, "memtap: writing the remaining %s rows of the recording...\n",
            count_text(backlog()).c_str());
  }
  // Refused messages are lost events too: the counts go into the file, not only stderr.
  std::vector<std::pair<std::string, std::string>> all = meta;
  const LiveInput input = live_input(session_->input_counts());
  for (const LiveInputKey& k : kLiveInputKeys) {
    all.emplace_back(k.meta_key, std::to_string(input.*k.field));
  }
  all.emplace_back("endpoint", socket_->endpoint());
  if (socket_->curve()) {
    all.emplace_back("connections_refused", std::to_string(socket_->connections_refused()));
  }
  const bool written = writer_->finish(session_->processes(), all, error);
  progress.reset();  // the line goes before anything is said about the recording
  return written;
}

bool LiveRecording::caught_up() const {
  // Rows in the writer's open transaction count: finish() commits them at once, where
  // waiting for its commit deadline held every `memtap run` with progress lines up to a
  // second after the rest had caught up.
  const bool writer_caught_up =
      !writer_->stopped().reason.empty() || writer_->rows_taken() == writer_->rows_queued();
  return writer_caught_up && analysis_->rows_analysed() == rows_to_analyse_;
}

std::string LiveRecording::progress_line() const {
  uint64_t received = 0;
  for (const ProcessInfo& p : session_->processes()) received += p.events_received;
  timespec now{};
  clock_gettime(CLOCK_MONOTONIC, &now);
  const InputCounts& input = session_->input_counts();
  // Resident pages, from statm's second field: what the monitor holds, for a look at
  // whether it stays bounded.
  unsigned long long size_pages = 0, resident_pages = 0;
  if (FILE* statm = fopen("/proc/self/statm", "re")) {
    if (fscanf(statm, "%llu %llu", &size_pages, &resident_pages) != 2) resident_pages = 0;
    fclose(statm);
  }
  const unsigned long long rss_kib =
      resident_pages * (unsigned long long)(sysconf(_SC_PAGESIZE) / 1024);
  char line[512];
  snprintf(line, sizeof line,
           "memtap: progress monotonic_ns=%lld received=%llu analysed=%llu written=%llu "
           "spooled=%llu writer_waited_ms=%llu paced=%d share_permille=%u not_recorded=%llu "
           "rss_kib=%llu rejected=%llu silent_hellos=%llu pending_hellos=%zu "
           "agents_behind_ms=%lld spare_cores=%d",
           (long long)now.tv_sec * 1000000000LL + now.tv_nsec, (unsigned long long)received,
           (unsigned long long)analysis_->rows_analysed(),
           (unsigned long long)writer_->rows_written(), (unsigned long long)writer_->rows_spooled(),
           (unsigned long long)writer_->deferred_ms(),
           cpu_share_->limited.load(std::memory_order_relaxed) ? 1 : 0,
           unsigned(cpu_share_->permille.load(std::memory_order_relaxed)),
           (unsigned long long)writer_->stopped().rows_not_recorded, rss_kib,
           (unsigned long long)input.rejected(), (unsigned long long)input.silent_hellos,
           session_->pending_hellos(),
           (long long)(behind_ns(session_->laggard(), int64_t(realtime_ns()) - horizon_lag_ns()) /
                       1'000'000),
           cpu_share_->spare_cores.load(std::memory_order_relaxed));
  return line;
}

void LiveRecording::print_summary(FILE* out, bool written) const {
  const RecordingStop stop = writer_->stopped();
  const std::string partial = db_path_ + ".partial";
  if (written) {
    fprintf(out, "memtap: recording written to %s\n", db_path_.c_str());
  } else if (!stop.reason.empty()) {
    fprintf(out, "memtap: recording stopped %s: %s\n", recording_stop_position(stop).c_str(),
            stop.reason.c_str());
    fprintf(out, "memtap: %s holds those %s events", partial.c_str(),
            count_text(stop.rows_recorded).c_str());
    if (stop.first_ns != 0 && stop.recorded_until_ns >= stop.first_ns) {
      fprintf(out, ", up to %s into the session",
              duration_text(stop.recorded_until_ns - stop.first_ns).c_str());
    }
    fprintf(out,
            "; %s events after them were not recorded (the report below counts them all). "
            "Once the disk has room, 'memtap recover %s' makes it a finished recording\n",
            count_text(stop.rows_not_recorded).c_str(), partial.c_str());
  } else {
    fprintf(out,
            "memtap: the recording was not finished (see above); %s holds what was committed\n",
            partial.c_str());
  }
  Report report = analysis_->drained().report(recorded_processes(session_->processes()));
  report.source = "live";
  report.format = "memscope_dump";
  print_session_header(out, session_->processes(), live_input(session_->input_counts()),
                       report.events);
  if (const uint64_t refused = socket_->connections_refused(); refused != 0) {
    fprintf(out,
            "memtap: refused %s connection%s from agents without an accepted key (see above)\n",
            count_text(refused).c_str(), refused == 1 ? "" : "s");
  }
  if (const uint64_t spooled = writer_->rows_spooled(); spooled != 0 && stop.reason.empty()) {
    fprintf(out,
            "memtap: SQLite fell behind the live rate: %s rows waited on disk until it caught "
            "up; none were lost\n",
            count_text(spooled).c_str());
  }
  report_text(report, out);
}

}  // namespace memtap
