// See wal_checkpointer.h.
#include "monitor/store/wal_checkpointer.h"

#include <pthread.h>
#include <sqlite3.h>

#include <system_error>

#include "common/cpu_share.h"
#include "monitor/store/sqlite_status.h"

namespace memtap {

std::unique_ptr<WalCheckpointer> WalCheckpointer::start(const std::string& path,
                                                        std::shared_ptr<const CpuShare> cpu_share,
                                                        std::string* error,
                                                        int deferred_wal_pages) {
  std::unique_ptr<WalCheckpointer> c(new WalCheckpointer());
  c->cpu_share_ = std::move(cpu_share);
  c->deferred_wal_pages_ = deferred_wal_pages;
  const int rc =
      sqlite3_open_v2(path.c_str(), &c->db_, SQLITE_OPEN_READWRITE | SQLITE_OPEN_NOMUTEX, nullptr);
  // A connection that has not read the database yet has not opened its log either, and
  // sqlite3_wal_checkpoint_v2 on it returns SQLITE_OK having copied nothing (log and
  // checkpointed frames -1): until this read, the thread never copied a page, and every
  // recording's whole log was copied at the end, on the thread that finished it.
  const int read_rc = rc == SQLITE_OK ? sqlite3_exec(c->db_, "SELECT 1 FROM sqlite_schema LIMIT 1",
                                                     nullptr, nullptr, nullptr)
                                      : rc;
  if (read_rc != SQLITE_OK) {
    if (error != nullptr) *error = "checkpoint connection: " + sqlite_error_text(c->db_, read_rc);
    sqlite3_close(c->db_);
    c->db_ = nullptr;
    return nullptr;
  }
  try {
    c->thread_ = std::thread([raw = c.get()] { raw->run(); });
  } catch (const std::system_error& e) {
    if (error != nullptr) *error = std::string("cannot start the checkpoint thread: ") + e.what();
    sqlite3_close(c->db_);
    c->db_ = nullptr;
    return nullptr;
  }
  return c;
}

WalCheckpointer::~WalCheckpointer() {
  // The hook points here; SQLite would otherwise call it after this is gone.
  if (writer_ != nullptr) sqlite3_wal_hook(writer_, nullptr, nullptr);
  if (thread_.joinable()) {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    wake_.notify_one();
    thread_.join();
  }
  sqlite3_close(db_);
}

void WalCheckpointer::attach(sqlite3* writer) {
  writer_ = writer;
  sqlite3_wal_hook(writer, &WalCheckpointer::on_commit, this);
}

unsigned long WalCheckpointer::checkpoints() const {
  std::lock_guard lock(mutex_);
  return checkpoints_;
}

int WalCheckpointer::on_commit(void* self, sqlite3* writer, const char* db_name, int wal_pages) {
  auto* c = static_cast<WalCheckpointer*>(self);
  if (wal_pages >= kMaxWalPages) {
    // Best effort, as SQLite's own hook: a failure here only leaves the log longer.
    sqlite3_wal_checkpoint_v2(writer, db_name, SQLITE_CHECKPOINT_PASSIVE, nullptr, nullptr);
  }
  // Not while the program runs, until the log is large (kDeferredWalPages). The program's
  // end is seen at the writer's next commit, and finish() copies whatever is left.
  if (c->cpu_share_ != nullptr && c->cpu_share_->limited.load(std::memory_order_relaxed) &&
      wal_pages < c->deferred_wal_pages_) {
    return SQLITE_OK;
  }
  {
    std::lock_guard lock(c->mutex_);
    c->requested_ = true;
  }
  c->wake_.notify_one();
  return SQLITE_OK;
}

void WalCheckpointer::run() {
  pthread_setname_np(pthread_self(), "memtap-ckpt");
  // Part of writing the file, which comes after the program (memscope_writer.cpp).
  CpuPacer pacer(cpu_share_.get());
  std::unique_lock lock(mutex_);
  for (;;) {
    wake_.wait(lock, [this] { return requested_ || stop_; });
    if (stop_) return;
    requested_ = false;
    lock.unlock();
    // PASSIVE copies what no reader still needs and never waits for the writer; a busy
    // result just means the next commit asks again.
    sqlite3_wal_checkpoint_v2(db_, nullptr, SQLITE_CHECKPOINT_PASSIVE, nullptr, nullptr);
    pacer.pace();
    lock.lock();
    ++checkpoints_;
  }
}

}  // namespace memtap
