// The recording's file lifecycle and its writer thread (see memscope_writer.h).
//
// append() only copies rows into `pending` under a mutex (define_string, strings into
// `pending_strings`); the writer thread swaps both out together and inserts them with the
// lock released, strings first, so the engine never waits on SQLite and a row never comes
// before a string it uses. Once `pending` holds max_memory_rows, rows queue in a file
// instead (row_spool.h), and keep doing so until the writer has read that file empty, so
// the order is always pending, then the spool. The thread owns the connection until it is
// joined; after that finish() or the destructor use it from the caller's thread.
//
// The first SQLite error, or the spool's disk refusing rows, stops the recording (fail()):
// the rows committed stay, the open transaction is rolled back, and every queued row is
// dropped, the spool's file too. It stops at once rather than waiting for room: the spool
// and the database share the disk, a full disk seldom frees itself while a training run
// goes on (its own checkpoints are what fills it), and rows held until it does would grow
// the monitor's memory without bound (a flood brings millions a second). A recording cut at
// one known point is also the one every analysis of the file can trust: one with a gap in
// its middle would show leaks and unmatched frees that never were. From then on rows are
// counted (rows_queued - rows_written), not kept; the live analyses have them all.
#include "monitor/store/memscope_writer.h"

#include <fcntl.h>
#include <pthread.h>
#include <sqlite3.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/statvfs.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <mutex>
#include <system_error>
#include <thread>

#include "common/cpu_share.h"
#include "monitor/store/compact_inserter.h"
#include "monitor/store/compact_schema.h"
#include "monitor/store/dump_inserter.h"
#include "monitor/store/memscope_indexes.h"
#include "monitor/store/memscope_schema.h"
#include "monitor/store/memtap_tables.h"
#include "monitor/store/recording_reserve.h"
#include "monitor/store/row_chunks.h"
#include "monitor/store/row_spool.h"
#include "monitor/store/sqlite_status.h"
#include "monitor/store/wal_checkpointer.h"

namespace memtap {
namespace {

using Clock = std::chrono::steady_clock;

// What the writer thread does once it sees a stop request.
enum class StopMode { kRunning, kDrain, kAbandon };

// SQLite reports every unusable location as "unable to open database file"; checking the
// directory first turns the common cases into a reason the user can act on.
bool check_directory(const std::string& path, std::string* reason) {
  std::string dir = std::filesystem::path(path).parent_path().string();
  if (dir.empty()) dir = ".";
  struct stat st;
  if (stat(dir.c_str(), &st) != 0) {
    const int err = errno;
    *reason = err == ENOENT ? "directory " + dir + " does not exist"
                            : "directory " + dir + ": " + std::strerror(err);
    return false;
  }
  if (!S_ISDIR(st.st_mode)) {
    *reason = dir + " is not a directory";
    return false;
  }
  if (access(dir.c_str(), W_OK | X_OK) != 0) {
    *reason = "directory " + dir + " is not writable: " + std::strerror(errno);
    return false;
  }
  return true;
}

bool remove_if_present(const std::string& file, std::string* reason) {
  if (unlink(file.c_str()) == 0 || errno == ENOENT) return true;
  *reason = "cannot remove stale " + file + ": " + std::strerror(errno);
  return false;
}

// A stale -wal or -journal next to a database would be replayed into it on the next open,
// so a file is only ever created or renamed into place with those gone.
bool remove_sidecars(const std::string& file, std::string* reason) {
  return remove_if_present(file + "-wal", reason) && remove_if_present(file + "-shm", reason) &&
         remove_if_present(file + "-journal", reason);
}

// "; 12 KiB free on its file system", for the message of a disk that refused a write; ""
// when statvfs cannot say.
std::string free_space_note(const std::string& file) {
  std::string dir = std::filesystem::path(file).parent_path().string();
  if (dir.empty()) dir = ".";
  struct statvfs st;
  if (statvfs(dir.c_str(), &st) != 0) return "";
  const double bytes = double(st.f_bavail) * double(st.f_frsize);
  char text[64];
  if (bytes < 1024.0 * 1024) {
    snprintf(text, sizeof text, "; %.0f KiB free on its file system", bytes / 1024);
  } else {
    snprintf(text, sizeof text, "; %.1f MiB free on its file system", bytes / 1024 / 1024);
  }
  return text;
}

// ": the file size limit (ulimit -f) is 8192 KiB", the user's (not as the reserve lowered
// it), for a message that says "File too large"; "" with no limit.
std::string file_size_limit_note() {
  const uint64_t limit = user_file_size_limit();
  if (limit == UINT64_MAX) return "";
  return ": the file size limit (ulimit -f) is " + std::to_string(limit / 1024) + " KiB";
}

// Why the file system would refuse to grow `file` or its log, when that can be seen: "File
// too large: the file size limit (ulimit -f) is 256 KiB", "No space left on device"; "".
std::string refusal_cause(const std::string& file) {
  rlimit limit{};
  // The limit in force, the reserve's room below the user's.
  if (getrlimit(RLIMIT_FSIZE, &limit) == 0 && limit.rlim_cur != RLIM_INFINITY) {
    for (const std::string& f : {file, file + "-wal"}) {
      struct stat st;
      // Within a page of the limit: the next write of a page crossed it.
      if (stat(f.c_str(), &st) == 0 && uint64_t(st.st_size) + 65536 > uint64_t(limit.rlim_cur)) {
        return std::strerror(EFBIG) + file_size_limit_note();
      }
    }
  }
  std::string dir = std::filesystem::path(file).parent_path().string();
  struct statvfs st;
  if (statvfs(dir.empty() ? "." : dir.c_str(), &st) == 0 &&
      uint64_t(st.f_bavail) * st.f_frsize < 65536) {
    return std::strerror(ENOSPC);
  }
  return "";
}

int64_t realtime_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

}  // namespace

struct MemscopeWriter::Impl {
  std::string path;
  std::string partial_path;
  MemscopeWriterOptions options;
  sqlite3* db = nullptr;
  // One of the two, as options.compact says.
  std::unique_ptr<DumpInserter> text;
  std::unique_ptr<CompactInserter> compact;
  std::unique_ptr<WalCheckpointer> checkpointer;  // after the writer's thread is joined: gone

  std::mutex mutex;
  std::condition_variable wake;
  RowChunks pending;                                              // guarded by mutex
  std::vector<std::pair<uint32_t, std::string>> pending_strings;  // guarded by mutex
  std::unique_ptr<RowSpool> spool;                                // guarded by mutex
  std::string spool_error;                                        // guarded by mutex
  // The spool's disk refused rows: the thread stops the recording with this (fail()).
  std::string refusal;             // guarded by mutex
  bool refusal_disk_full = false;  // guarded by mutex
  std::atomic<uint64_t> rows_spooled{0};
  uint64_t rows_lost_in_spool = 0;     // guarded by mutex
  StopMode stop = StopMode::kRunning;  // guarded by mutex
  int64_t first_ns = 0;                // guarded by mutex: Timestamp(ns) of the first row
  RecordingStop stop_info;             // guarded by mutex; reason "" while it records
  std::thread thread;

  std::atomic<uint64_t> rows_queued{0};   // written by append() only
  std::atomic<uint64_t> deferrals{0};     // milliseconds the thread waited for the live view
  std::atomic<uint64_t> rows_written{0};  // written by the writer thread only
  std::atomic<uint64_t> rows_taken{0};    // written by the writer thread only
  std::atomic<FinishStep> finish_step{FinishStep::kRecording};  // written by finish() only
  // No more rows are kept: the recording stopped, or the spool refused rows and the thread
  // is about to stop it.
  std::atomic<bool> failed{false};

  // The writer thread's state; read by finish() only after the thread is joined.
  uint64_t next_id = 0;
  uint64_t rows_in_transaction = 0;
  bool in_transaction = false;
  Clock::time_point commit_deadline;
  int64_t transaction_last_ns = 0;  // Timestamp(ns) of the open transaction's last row
  int64_t committed_last_ns = 0;    // and of the last row committed
  std::string error;                // the first failure, without the path
  bool has_stopped = false;         // fail() ran
  RecordingReserve reserve;

  bool finished = false;

  ~Impl() {
    stop_thread(StopMode::kAbandon);
    close_db();
  }

  bool open(std::string* reason);
  void run();
  bool define_string(uint32_t id, const std::string& string);
  // With the mutex held: whether the thread has anything to do.
  bool has_work() const {
    return !pending.empty() || !pending_strings.empty() ||
           (spool != nullptr && spool->unread() != 0) || !refusal.empty();
  }
  // With the mutex held: queues rows for the thread, in memory or on disk.
  void queue_rows(const DumpRow* rows, size_t count);
  // The next rows to write, in order, into *work (empty: none); the mutex is held on entry
  // and exit, and released while the spool is read. True when *work is a chunk of
  // `pending`, to be recycled once written.
  // `spool_rows`: an empty buffer for rows read from the spool, swapped into *work.
  bool take_rows(std::unique_lock<std::mutex>& lock, std::vector<DumpRow>* work,
                 std::vector<DumpRow>* spool_rows);
  // With the mutex held: whether to wait rather than write now
  // (MemscopeWriterOptions::live_behind).
  bool live_is_behind();
  void write_rows(const std::vector<DumpRow>& rows);
  bool write_row(const DumpRow& row);
  bool begin();
  bool commit();
  // Stops the recording (see the top of the file). `context`: what was being done ("writing
  // row 12"), for finish()'s message; `cause`: the error, naming its file when it is not
  // the database.
  void fail(const std::string& context, const std::string& cause, bool disk_full);
  // fail() for result code `rc` of a call on the database.
  void fail_sqlite(const std::string& context, int rc);
  void stop_thread(StopMode mode);
  bool close_db();
  void stop_checkpointer();
  // memtap_session and memtap_meta (with complete=1 and the indexes when `finished`).
  bool write_session_tables(const std::vector<ProcessInfo>& processes,
                            const std::vector<std::pair<std::string, std::string>>& meta,
                            bool finished, std::string* reason);
};

bool MemscopeWriter::Impl::open(std::string* reason) {
  if (!check_directory(path, reason) || !remove_if_present(partial_path, reason) ||
      !remove_sidecars(partial_path, reason)) {
    return false;
  }
  // NOMUTEX: one thread at a time uses the connection (the writer, then finish()).
  int rc =
      sqlite3_open_v2(partial_path.c_str(), &db,
                      SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE | SQLITE_OPEN_NOMUTEX, nullptr);
  if (rc != SQLITE_OK) {
    *reason = sqlite_error_text(db, rc);
    return false;
  }
  // 16 KiB pages: a quarter of the page splits and b-tree levels of 4 KiB ones for rows
  // that only ever append (and a file read faster). WAL with synchronous=NORMAL: a commit
  // appends to the log without fsync, and the file still cannot be corrupted by a crash
  // (only the last commits may be lost). The log is copied into the file by a thread of its
  // own (wal_checkpointer.h).
  if (!sqlite_exec(db, "PRAGMA page_size=16384; PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL",
                   reason)) {
    return false;
  }
  if (options.max_page_count != 0) {
    const std::string sql = "PRAGMA max_page_count=" + std::to_string(options.max_page_count);
    if (!sqlite_exec(db, sql.c_str(), reason)) return false;
  }
  const std::string schema = (options.compact ? compact_schema_sql()
                                              : std::string(kCreateMemscopeDumpSql) + ";" +
                                                    kCreateMemscopeDumpPartialIndexesSql) +
                             memtap_tables_sql();
  if (!sqlite_exec(db, schema.c_str(), reason)) return false;
  checkpointer = WalCheckpointer::start(partial_path, options.cpu_share, reason);
  if (checkpointer == nullptr) return false;
  if (!remove_if_present(partial_path + ".reserve", reason)) return false;
  reserve.create(partial_path + ".reserve", options.reserve_bytes);
  checkpointer->attach(db);
  if (options.compact) {
    compact = CompactInserter::prepare(db, reason);
    return compact != nullptr;
  }
  text = DumpInserter::prepare(db, reason);
  return text != nullptr;
}

void MemscopeWriter::Impl::run() {
  pthread_setname_np(pthread_self(), "memtap-writer");
  // The program first, then the live view, then the file. This thread stands behind the
  // program by pacing itself while it runs (common/cpu_share.h), and behind the live view
  // by waiting while it is behind (live_is_behind). Rows it cannot take yet wait in the
  // queue and on disk (nothing is lost; the recording completes later).
  CpuPacer pacer(options.cpu_share.get());
  std::vector<DumpRow> work;        // the rows being written
  bool work_is_chunk = false;       // work is a chunk of the queue
  std::vector<DumpRow> spool_rows;  // for reading the spool back, kept for its capacity
  std::vector<std::pair<uint32_t, std::string>> strings;
  for (;;) {
    StopMode mode;
    {
      std::unique_lock lock(mutex);
      auto ready = [this] { return has_work() || stop != StopMode::kRunning; };
      // With a transaction open, wake at its deadline even if no rows come, to commit it.
      if (in_transaction) {
        wake.wait_until(lock, commit_deadline, ready);
      } else {
        wake.wait(lock, ready);
      }
      if (!refusal.empty()) {
        const std::string cause = std::move(refusal);
        const bool disk_full = refusal_disk_full;
        refusal.clear();
        lock.unlock();
        // What the open transaction holds is recorded if the disk still takes it.
        if (in_transaction) commit();
        fail("queueing rows on disk", cause, disk_full);
        continue;
      }
      if (live_is_behind()) {
        lock.unlock();
        if (in_transaction) commit();
        std::this_thread::sleep_for(std::chrono::milliseconds(1));
        continue;
      }
      // What was written goes back: a chunk to the queue's spares, the spool's rows to
      // their buffer.
      if (work_is_chunk) {
        pending.recycle(std::move(work));
      } else {
        spool_rows.swap(work);
      }
      work.clear();
      spool_rows.clear();
      strings.swap(pending_strings);
      work_is_chunk = take_rows(lock, &work, &spool_rows);
      mode = stop;
    }
    if (mode == StopMode::kAbandon) work.clear();
    for (const auto& [id, string] : strings) {
      if (!define_string(id, string)) break;
    }
    strings.clear();
    write_rows(work);
    if (in_transaction && (mode != StopMode::kRunning || Clock::now() >= commit_deadline)) {
      commit();
    }
    pacer.pace();
    if (mode == StopMode::kAbandon) return;
    if (mode == StopMode::kDrain) {
      std::lock_guard lock(mutex);
      if (!has_work()) return;
    }
  }
}

bool MemscopeWriter::Impl::live_is_behind() {
  if (!options.live_behind || stop != StopMode::kRunning || !has_work() ||
      failed.load(std::memory_order_relaxed)) {
    return false;
  }
  if (spool != nullptr && spool->unread_bytes() >= options.max_deferred_bytes) return false;
  if (!options.live_behind()) return false;
  deferrals.fetch_add(1, std::memory_order_relaxed);
  return true;
}

void MemscopeWriter::Impl::queue_rows(const DumpRow* rows, size_t count) {
  // Stopped, or stopping: counted only (append() looked at `failed` without the lock, and
  // fail() sets it before it takes the queues away).
  if (failed.load(std::memory_order_relaxed) || !refusal.empty()) return;
  if (first_ns == 0 && count != 0) first_ns = rows[0].timestamp_ns;
  const bool spooling = spool != nullptr && spool->unread() != 0;
  if (!spooling) {
    // What still fits in memory goes there, the rest to disk behind it: a release of
    // millions of rows at once (an agent's backlog) went to disk whole, to be encoded on the
    // receiving thread and decoded again by the writer.
    const size_t limit = options.max_memory_rows == 0 ? SIZE_MAX : options.max_memory_rows;
    const size_t in_memory = pending.rows() < limit ? std::min(count, limit - pending.rows()) : 0;
    pending.push(rows, in_memory);
    rows += in_memory;
    count -= in_memory;
    if (count == 0) return;
  }
  int error_number = 0;
  if (spool == nullptr) {
    spool = RowSpool::create(partial_path + ".spool", &spool_error);
    if (spool == nullptr) error_number = errno;
  }
  if (spool != nullptr) {
    if (spool->push(rows, count, &spool_error)) {
      rows_spooled.fetch_add(count, std::memory_order_relaxed);
      return;
    }
    error_number = spool->last_error_number();
  }
  // The disk refused the queue: the recording stops (see the top of the file). Keeping these
  // rows in memory instead, until the disk takes them, is what has no bound.
  refusal = spool_error;
  refusal_disk_full = errno_disk_full(error_number);
  failed.store(true, std::memory_order_relaxed);
}

bool MemscopeWriter::Impl::take_rows(std::unique_lock<std::mutex>& lock, std::vector<DumpRow>* work,
                                     std::vector<DumpRow>* spool_rows) {
  if (!pending.empty()) {
    *work = pending.take_front();
    return true;
  }
  if (failed.load(std::memory_order_relaxed)) return false;  // nothing more is written
  if (spool != nullptr && spool->unread() != 0) {
    // Rows are read back in pieces the size of a transaction, with appends free to go on:
    // the claimed range is never written again.
    const RowSpool::Claim claim = spool->claim(options.rows_per_transaction);
    std::string error;
    lock.unlock();
    const bool ok = spool->read(claim, spool_rows, &error);
    lock.lock();
    if (!ok) {
      // Rows on a disk that cannot be read back are lost: say which, and how many.
      if (spool_error.empty()) spool_error = error;
      rows_lost_in_spool += claim.count;
    }
    // The thread may have stopped the recording meanwhile, taking the spool with it.
    if (spool != nullptr) spool->truncate_if_drained();
    work->swap(*spool_rows);
  }
  return false;
}

bool MemscopeWriter::Impl::define_string(uint32_t id, const std::string& string) {
  if (failed.load(std::memory_order_relaxed)) return false;
  if (!compact) {
    text->define_string(id, string);
    return true;
  }
  // A compact file keeps its strings in memtap_string, written with the rows that use them.
  if (!in_transaction && !begin()) return false;
  const int rc = compact->define_string(id, string);
  if (rc == SQLITE_DONE) return true;
  fail_sqlite("writing string " + std::to_string(id), rc);
  return false;
}

void MemscopeWriter::Impl::write_rows(const std::vector<DumpRow>& rows) {
  uint64_t taken = 0;  // published once for the batch, not per row
  for (const DumpRow& row : rows) {
    if (failed.load(std::memory_order_relaxed)) break;
    if (!in_transaction && !begin()) break;
    if (!write_row(row)) break;
    ++taken;
    if (++rows_in_transaction >= options.rows_per_transaction && !commit()) break;
  }
  rows_taken.fetch_add(taken, std::memory_order_relaxed);
}

bool MemscopeWriter::Impl::write_row(const DumpRow& row) {
  if (row.event == DumpEvent::kTraceSlice) {
    const int rc = compact ? compact->insert_trace_slice(row) : text->insert_trace_slice(row);
    if (rc != SQLITE_DONE) {
      fail_sqlite("writing a python_trace_" + std::to_string(row.process_id) + " row", rc);
      return false;
    }
    return true;
  }
  const int64_t id = static_cast<int64_t>(next_id);
  const int rc = compact ? compact->insert(id, row) : text->insert(id, row);
  if (rc != SQLITE_DONE) {
    // A row is written with its batch (dump_inserter.h, compact_inserter.h): the rows before
    // it too.
    fail_sqlite("writing rows up to " + std::to_string(next_id), rc);
    return false;
  }
  ++next_id;
  transaction_last_ns = row.timestamp_ns;
  return true;
}

bool MemscopeWriter::Impl::begin() {
  const int rc = sqlite3_exec(db, "BEGIN", nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) {
    fail_sqlite("starting a transaction at row " + std::to_string(next_id), rc);
    return false;
  }
  in_transaction = true;
  commit_deadline = Clock::now() + std::chrono::milliseconds(options.commit_interval_ms);
  return true;
}

bool MemscopeWriter::Impl::commit() {
  int rc = compact ? compact->flush() : text->flush();
  if (rc != SQLITE_DONE) {
    fail_sqlite("writing rows up to " + std::to_string(next_id - 1), rc);
    return false;
  }
  rc = sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) {
    fail_sqlite("committing rows " + std::to_string(next_id - rows_in_transaction) + " to " +
                    std::to_string(next_id - 1),
                rc);
    return false;
  }
  in_transaction = false;
  if (rows_in_transaction != 0) committed_last_ns = transaction_last_ns;
  rows_written.fetch_add(rows_in_transaction, std::memory_order_relaxed);
  rows_in_transaction = 0;
  return true;
}

void MemscopeWriter::Impl::fail_sqlite(const std::string& context, int rc) {
  std::string cause = sqlite_error_text(db, rc);
  bool disk_full = sqlite_disk_full(db, rc);
  if (sqlite3_system_errno(db) == EFBIG) {
    // "(File too large)": which limit, in the user's terms.
    const size_t at = cause.find(std::strerror(EFBIG));
    if (at != std::string::npos) {
      cause.insert(at + std::strlen(std::strerror(EFBIG)), file_size_limit_note());
    }
  }
  if (!disk_full && (rc & 0xff) == SQLITE_IOERR && sqlite3_system_errno(db) == 0) {
    // SQLite lost the OS error of a failed write to the log (errno was overwritten on the
    // way out): look for the two refusals a user can act on.
    const std::string why = refusal_cause(partial_path);
    if (!why.empty()) {
      cause += " (" + why + ")";
      disk_full = true;
    }
  }
  fail(context, cause, disk_full);
}

void MemscopeWriter::Impl::fail(const std::string& context, const std::string& cause,
                                bool disk_full) {
  if (has_stopped) return;  // the first cause is the one that stopped it
  has_stopped = true;
  error = context + ": " + cause;
  // SQLITE_FULL and I/O errors may or may not have rolled the transaction back already.
  if (!sqlite3_get_autocommit(db)) sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
  in_transaction = false;
  rows_in_transaction = 0;
  failed.store(true, std::memory_order_relaxed);
  // Copying the log into the file grows the file: on a full disk the checkpointer would
  // only fail, or take the room given back below.
  stop_checkpointer();
  RecordingStop info;
  // A cause from the spool names its own file; SQLite's is the database's.
  info.reason = (cause.rfind(partial_path, 0) == 0 || cause.rfind("cannot create ", 0) == 0
                     ? cause
                     : partial_path + ": " + cause) +
                (disk_full ? free_space_note(partial_path) : "");
  info.disk_full = disk_full;
  info.rows_recorded = rows_written.load(std::memory_order_relaxed);
  info.recorded_until_ns = committed_last_ns;
  info.stopped_ns = realtime_ns();
  // Where it stopped goes into the file itself below, while the process may still be killed
  // before finish(): in half of the reserve, the other half being finish()'s. Given back
  // before the stop is published, so that whoever sees the stop sees the room too.
  reserve.release_half();
  std::unique_ptr<RowSpool> dropped_spool;
  {
    std::lock_guard lock(mutex);
    // Whatever is queued will never be written: its memory and its disk space go now.
    pending = RowChunks();
    pending_strings.clear();
    pending_strings.shrink_to_fit();
    dropped_spool = std::move(spool);
  }
  // Closed and removed before the stop is published, as the reserve is: whoever sees the
  // stop finds no queue left on disk. Outside the lock, since removing a large file takes
  // time and the lock is the status readers' too.
  dropped_spool.reset();
  {
    std::lock_guard lock(mutex);
    info.first_ns = first_ns;
    info.rows_not_recorded = rows_queued.load(std::memory_order_relaxed) - info.rows_recorded;
    stop_info = info;
  }
  std::string ignored;
  if (!(sqlite_exec(db, "BEGIN", &ignored) &&
        write_memtap_meta(db, recording_stop_meta(info), &ignored) &&
        sqlite_exec(db, "COMMIT", &ignored)) &&
      !sqlite3_get_autocommit(db)) {
    sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
  }
}

void MemscopeWriter::Impl::stop_thread(StopMode mode) {
  if (!thread.joinable()) return;
  {
    std::lock_guard lock(mutex);
    stop = mode;
  }
  wake.notify_one();
  thread.join();
}

void MemscopeWriter::Impl::stop_checkpointer() {
  checkpointer.reset();
}

bool MemscopeWriter::Impl::close_db() {
  // The last connection to close checkpoints the log and removes it: the writer's.
  stop_checkpointer();
  text.reset();  // sqlite3_close refuses while a statement is unfinalized
  compact.reset();
  const int rc = sqlite3_close(db);
  db = nullptr;
  return rc == SQLITE_OK;
}

bool MemscopeWriter::Impl::write_session_tables(
    const std::vector<ProcessInfo>& processes,
    const std::vector<std::pair<std::string, std::string>>& meta, bool finished,
    std::string* reason) {
  std::vector<std::pair<std::string, std::string>> all_meta = meta;
  // Last, so it wins over a caller's own "complete": only finish() may say it.
  if (finished) all_meta.emplace_back("complete", "1");
  // Each CREATE INDEX reads the whole table: mapped, not copied page by page through
  // pread(). The log has been copied into the file by then, so every page read is the
  // file's (the 6-step script's three indexes: 1.51 -> 1.38 s, 0.2 s less system time).
  // Best effort: without it they are read as before.
  if (finished && !options.compact) {
    sqlite3_exec(db, "PRAGMA mmap_size=68719476736", nullptr, nullptr, nullptr);
  }
  // Each CREATE INDEX sorts every row in at most the cache's size, spilling sorted runs to
  // temporary files beyond it: 128 MiB holds the keys of ~2 M rows (a 6-step PyTorch
  // script's recording), whose runs at 64 MiB were 80 MB of temporary files written and read
  // back (finishing took 0.2 s longer; tests/bench/HISTORY.md). The memory goes away with
  // the connection.
  bool ok = sqlite_exec(db, "PRAGMA cache_size=-131072", reason) &&
            sqlite_exec(db, "BEGIN", reason) && write_memtap_session(db, processes, reason) &&
            write_memtap_meta(db, all_meta, reason);
  // A view cannot be indexed; a compact file finds time ranges by memtap_event_chunk.
  if (ok && finished && !options.compact) ok = build_memscope_indexes(db, reason);
  ok = ok && sqlite_exec(db, "COMMIT", reason);
  if (!ok && !sqlite3_get_autocommit(db)) sqlite3_exec(db, "ROLLBACK", nullptr, nullptr, nullptr);
  return ok;
}

MemscopeWriter::MemscopeWriter() : impl_(std::make_unique<Impl>()) {}

MemscopeWriter::~MemscopeWriter() = default;

std::unique_ptr<MemscopeWriter> MemscopeWriter::create(const std::string& path,
                                                       std::string* error) {
  return create(path, MemscopeWriterOptions{}, error);
}

std::unique_ptr<MemscopeWriter> MemscopeWriter::create(const std::string& path,
                                                       const MemscopeWriterOptions& options,
                                                       std::string* error) {
  std::unique_ptr<MemscopeWriter> writer(new MemscopeWriter());
  Impl& w = *writer->impl_;
  w.path = path;
  w.partial_path = path + ".partial";
  w.options = options;
  if (w.options.rows_per_transaction == 0) w.options.rows_per_transaction = 1;
  std::string reason;
  bool ok = w.open(&reason);
  if (ok) {
    try {
      w.thread = std::thread([&w] { w.run(); });
    } catch (const std::system_error& e) {
      reason = std::string("cannot start the writer thread: ") + e.what();
      ok = false;
    }
  }
  if (!ok) {
    w.close_db();
    std::string ignored;
    // A half-made file is of no use.
    remove_if_present(w.partial_path, &ignored) && remove_sidecars(w.partial_path, &ignored);
    if (error != nullptr) *error = "cannot create " + w.partial_path + ": " + reason;
    return nullptr;
  }
  return writer;
}

void MemscopeWriter::append(const DumpRow* rows, size_t count) {
  Impl& w = *impl_;
  w.rows_queued.fetch_add(count, std::memory_order_relaxed);
  if (count == 0 || w.failed.load(std::memory_order_relaxed) || !w.thread.joinable()) return;
  bool wake;
  {
    std::lock_guard lock(w.mutex);
    const bool was_empty = !w.has_work();
    w.queue_rows(rows, count);
    // The thread only sleeps with both queues empty, so only that transition needs a
    // wake-up, and a refusal of the spool, which the thread turns into the stop.
    wake = was_empty || !w.refusal.empty();
  }
  if (wake) w.wake.notify_one();
}

void MemscopeWriter::define_string(uint32_t id, std::string_view text) {
  Impl& w = *impl_;
  if (w.failed.load(std::memory_order_relaxed) || !w.thread.joinable()) return;
  bool was_empty;
  {
    std::lock_guard lock(w.mutex);
    was_empty = !w.has_work();
    w.pending_strings.emplace_back(id, std::string(text));
  }
  if (was_empty) w.wake.notify_one();
}

bool MemscopeWriter::finish(const std::vector<ProcessInfo>& processes,
                            const std::vector<std::pair<std::string, std::string>>& meta,
                            std::string* error) {
  Impl& w = *impl_;
  auto report = [&](const std::string& what) {
    if (error != nullptr) *error = w.partial_path + ": " + what;
    return false;
  };
  if (w.finished) return report("finish() called twice");
  w.finished = true;
  w.finish_step.store(FinishStep::kWritingRows);
  w.stop_thread(StopMode::kDrain);
  w.spool.reset();  // drained: nothing in it, and the file goes
  if (w.rows_lost_in_spool != 0 && !w.failed.load()) {
    w.error = std::to_string(w.rows_lost_in_spool) +
              " rows could not be read back from the queue on disk: " + w.spool_error;
    w.failed.store(true);
  }
  if (w.failed.load()) {
    const uint64_t queued = w.rows_queued.load();
    const uint64_t lost = queued - w.rows_written.load();
    if (!w.stop_info.reason.empty()) {
      // The rest of the reserve: the processes and the final counts, so that the file says
      // what it holds and where it ends (no indexes: they need about the rows' own room).
      {
        std::lock_guard lock(w.mutex);
        w.stop_info.rows_not_recorded = lost;
      }
      w.reserve.release();
      std::vector<std::pair<std::string, std::string>> all = meta;
      for (auto& pair : recording_stop_meta(w.stop_info)) all.push_back(std::move(pair));
      std::string ignored;
      w.write_session_tables(processes, all, false, &ignored);
    }
    w.close_db();
    return report(w.error + "; " + std::to_string(lost) + " of " + std::to_string(queued) +
                  " rows not written");
  }
  std::string reason;
  w.reserve.release();  // room for the indexes
  // The log into the file first: building the indexes then reads pages from the file, not
  // through the log's frame lookup (sqlite3WalFindFrame was a top symbol of finish()).
  w.finish_step.store(FinishStep::kCheckpointing);
  w.stop_checkpointer();
  sqlite3_wal_checkpoint_v2(w.db, nullptr, SQLITE_CHECKPOINT_TRUNCATE, nullptr, nullptr);
  // Then back to a rollback journal, before the indexes: in WAL mode their pages (~40 B a
  // row) were written to the log and copied into the file by the switch at the end; a
  // rollback journal keeps only the few pages the transaction changes, and the new pages
  // go straight into the file (the 6-step script's finish: 2.06-2.20 -> 1.71-1.90 s).
  // Should the monitor die while the indexes are built, the journal is hot: readers say
  // so, and `memtap recover` rolls it back (reader/sqlite_access.h). The finished file can
  // be opened read-only where no -shm file can be created. Should the switch fail (a
  // reader holds the log open), it is tried again at the end, as it used to be.
  // In rollback-journal mode a reader's read transaction (the live window's, on this
  // file) holds the commit back for as long as it lasts, where in WAL mode it never did:
  // wait for it rather than fail the recording.
  sqlite3_busy_timeout(w.db, 5000);
  w.text.reset();  // no statement may be pending across the switch
  w.compact.reset();
  const bool journal_switched = sqlite_exec(w.db, "PRAGMA journal_mode=DELETE", &reason);
  reason.clear();
  w.finish_step.store(w.options.compact ? FinishStep::kClosing : FinishStep::kIndexing);
  const bool tables_written = w.write_session_tables(processes, meta, true, &reason);
  w.finish_step.store(FinishStep::kClosing);
  if (!tables_written) {
    // Every row is in the file; the disk (most likely) had no room for the indexes. The
    // processes at least, for `memtap recover` to keep.
    std::string ignored;
    w.write_session_tables(processes, meta, false, &ignored);
    w.close_db();
    return report(reason + "; every row is in the file: 'memtap recover " + w.partial_path +
                  "' finishes it once the disk has room");
  }
  if (!journal_switched && !sqlite_exec(w.db, "PRAGMA journal_mode=DELETE", &reason)) {
    w.close_db();
    return report(reason);
  }
  const int rc = sqlite3_close(w.db);
  if (rc != SQLITE_OK) {
    reason = "closing: " + sqlite_error_text(w.db, rc);
    w.close_db();
    return report(reason);
  }
  w.db = nullptr;
  // rename() replaces an older `path` atomically, but not the old file's -wal or -journal.
  if (!remove_sidecars(w.path, &reason)) return report(reason);
  if (std::rename(w.partial_path.c_str(), w.path.c_str()) != 0) {
    return report("renaming to " + w.path + ": " + std::strerror(errno));
  }
  return true;
}

uint64_t MemscopeWriter::rows_written() const {
  return impl_->rows_written.load();
}

uint64_t MemscopeWriter::deferred_ms() const {
  return impl_->deferrals.load();
}

uint64_t MemscopeWriter::rows_taken() const {
  return impl_->rows_taken.load();
}

uint64_t MemscopeWriter::rows_spooled() const {
  return impl_->rows_spooled.load();
}

uint64_t MemscopeWriter::rows_queued() const {
  return impl_->rows_queued.load();
}

FinishStep MemscopeWriter::finish_step() const {
  return impl_->finish_step.load();
}

RecordingStop MemscopeWriter::stopped() const {
  std::lock_guard lock(impl_->mutex);
  RecordingStop stop = impl_->stop_info;
  // Until finish(), rows keep coming after the stop.
  if (!stop.reason.empty()) stop.rows_not_recorded = impl_->rows_queued.load() - stop.rows_recorded;
  return stop;
}

uint64_t MemscopeWriter::rows_in_memory() const {
  std::lock_guard lock(impl_->mutex);
  return impl_->pending.rows();
}

const std::string& MemscopeWriter::path() const {
  return impl_->path;
}

}  // namespace memtap
