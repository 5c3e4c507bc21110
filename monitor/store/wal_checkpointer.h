// Copies a recording's write-ahead log into the database from a thread of its own, so the
// writer thread never stops inserting to do it.
//
// SQLite checkpoints by itself after a commit once the log holds 1000 pages, and then it
// fsyncs the log and the database on the writer's thread: that halved the rows the writer
// stored per second. Here the writer's connection hands the work over (attach(): a
// sqlite3_wal_hook that wakes this thread) and this thread runs PASSIVE checkpoints on its
// own connection, which never block the writer. Should the log still outgrow
// kMaxWalPages (this thread starved of CPU), the writer checkpoints itself once, so the
// log's size on disk stays bounded.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>

struct sqlite3;

namespace memtap {

struct CpuShare;

class WalCheckpointer {
 public:
  // Pages of log the hook lets pass before the writer checkpoints itself (with 16 KiB
  // pages, 1 GiB).
  static constexpr int kMaxWalPages = 65536;
  // While the program runs (CpuShare::limited), pages of log left uncopied before the
  // thread is asked (with 16 KiB pages, 512 MiB). Copying the log while the program runs
  // cost a one-thread PyTorch training loop on two cores 15-20 % of its time (the copy and
  // its page-cache traffic beside the writer, on the core the program was not using), for
  // nothing the program or the live view needs: the log is read through as well as the
  // file. So it is copied once the program has ended, beside the writer's last rows, or
  // when it reaches this size, which bounds the disk it takes.
  static constexpr int kDeferredWalPages = 32768;

  // Opens its own connection to `path` (a WAL database) and starts the thread. nullptr
  // with *error if it cannot.
  // `cpu_share`: how it paces itself behind the program (null: never).
  // `deferred_wal_pages`: kDeferredWalPages but in tests.
  static std::unique_ptr<WalCheckpointer> start(const std::string& path,
                                                std::shared_ptr<const CpuShare> cpu_share,
                                                std::string* error,
                                                int deferred_wal_pages = kDeferredWalPages);
  // Takes the hook off the attached writer, stops the thread and closes its connection
  // (call before the writer changes the journal mode, which needs to be the only
  // connection; from the thread that uses the writer's connection, or with it idle).
  ~WalCheckpointer();
  WalCheckpointer(const WalCheckpointer&) = delete;
  WalCheckpointer& operator=(const WalCheckpointer&) = delete;

  // Installs the hook on the writer's connection `writer` (its automatic checkpoints end).
  void attach(sqlite3* writer);

  // Checkpoints run so far (tests).
  unsigned long checkpoints() const;

 private:
  WalCheckpointer() = default;
  static int on_commit(void* self, sqlite3* writer, const char* db_name, int wal_pages);
  void run();

  sqlite3* db_ = nullptr;
  sqlite3* writer_ = nullptr;  // attach()'s
  std::shared_ptr<const CpuShare> cpu_share_;
  int deferred_wal_pages_ = kDeferredWalPages;
  std::thread thread_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  bool requested_ = false;         // guarded by mutex_
  bool stop_ = false;              // guarded by mutex_
  unsigned long checkpoints_ = 0;  // guarded by mutex_
};

}  // namespace memtap
