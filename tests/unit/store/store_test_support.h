// Helpers for the store tests: a temporary directory and read-only queries on a database.
#pragma once

#include <gtest/gtest.h>
#include <signal.h>
#include <sqlite3.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <functional>
#include <string>
#include <vector>

namespace memtap::test {

// A fresh directory under $TMPDIR (or /tmp), removed with everything in it afterwards.
class TempDir {
 public:
  TempDir() {
    const char* base = getenv("TMPDIR");
    std::string pattern = std::string(base != nullptr ? base : "/tmp") + "/memtap_store_XXXXXX";
    if (mkdtemp(pattern.data()) != nullptr) path_ = pattern;
  }
  ~TempDir() {
    if (path_.empty()) return;
    std::error_code ignored;
    // Tests make read-only subdirectories; give write permission back so they can go.
    for (auto& entry : std::filesystem::recursive_directory_iterator(path_, ignored)) {
      std::filesystem::permissions(entry.path(), std::filesystem::perms::owner_all,
                                   std::filesystem::perm_options::add, ignored);
    }
    std::filesystem::remove_all(path_, ignored);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  bool ok() const { return !path_.empty(); }
  const std::string& path() const { return path_; }
  std::string file(const std::string& name) const { return path_ + "/" + name; }

 private:
  std::string path_;
};

// A read-write database for an inserter's tests: `schema` run on open, then a transaction
// begun, which commit() ends.
class ScratchDb {
 public:
  ScratchDb(const std::string& path, const std::string& schema) {
    if (sqlite3_open(path.c_str(), &db_) != SQLITE_OK ||
        sqlite3_exec(db_, (schema + ";BEGIN").c_str(), nullptr, nullptr, nullptr) != SQLITE_OK) {
      ADD_FAILURE() << path << ": " << sqlite3_errmsg(db_);
    }
  }
  ~ScratchDb() { sqlite3_close(db_); }
  ScratchDb(const ScratchDb&) = delete;
  ScratchDb& operator=(const ScratchDb&) = delete;

  sqlite3* db() const { return db_; }
  // Rows in `table`, as this connection sees them (its open transaction's included).
  int64_t count(const std::string& table) const {
    sqlite3_stmt* stmt = nullptr;
    sqlite3_prepare_v2(db_, ("SELECT count(*) FROM " + table).c_str(), -1, &stmt, nullptr);
    sqlite3_step(stmt);
    const int64_t n = sqlite3_column_int64(stmt, 0);
    sqlite3_finalize(stmt);
    return n;
  }
  void commit() {
    EXPECT_EQ(sqlite3_exec(db_, "COMMIT", nullptr, nullptr, nullptr), SQLITE_OK)
        << sqlite3_errmsg(db_);
  }

 private:
  sqlite3* db_ = nullptr;
};

// Every value as text; SQL NULL reads as "<NULL>" so it cannot pass for ''.
using Rows = std::vector<std::vector<std::string>>;

// A read-only connection to a finished (or partial) recording.
class Db {
 public:
  explicit Db(const std::string& path) {
    if (sqlite3_open_v2(path.c_str(), &db_, SQLITE_OPEN_READONLY, nullptr) != SQLITE_OK) {
      ADD_FAILURE() << "cannot open " << path << ": " << sqlite3_errmsg(db_);
      sqlite3_close(db_);
      db_ = nullptr;
    }
  }
  ~Db() { sqlite3_close(db_); }
  Db(const Db&) = delete;
  Db& operator=(const Db&) = delete;

  bool ok() const { return db_ != nullptr; }

  Rows query(const std::string& sql) const {
    Rows rows;
    if (db_ == nullptr) return rows;
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(db_, sql.c_str(), -1, &stmt, nullptr) != SQLITE_OK) {
      ADD_FAILURE() << sql << ": " << sqlite3_errmsg(db_);
      return rows;
    }
    int rc;
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) {
      std::vector<std::string>& row = rows.emplace_back();
      for (int i = 0; i < sqlite3_column_count(stmt); ++i) {
        const unsigned char* text = sqlite3_column_text(stmt, i);
        row.emplace_back(text != nullptr ? reinterpret_cast<const char*>(text) : "<NULL>");
      }
    }
    if (rc != SQLITE_DONE) ADD_FAILURE() << sql << ": " << sqlite3_errmsg(db_);
    sqlite3_finalize(stmt);
    return rows;
  }

  // The first column of the first row, or "<none>".
  std::string value(const std::string& sql) const {
    Rows rows = query(sql);
    return rows.empty() || rows[0].empty() ? "<none>" : rows[0][0];
  }

 private:
  sqlite3* db_ = nullptr;
};

inline bool exists(const std::string& path) {
  return std::filesystem::exists(path);
}

// Runs `body` in a forked child (for what must not touch the test process: a file size
// limit) and returns what it reported: "" when every check passed, else what failed.
inline std::string in_child(const std::function<std::string()>& body) {
  int fds[2];
  if (pipe(fds) != 0) return "pipe failed";
  const pid_t child = fork();
  if (child < 0) return "fork failed";
  if (child == 0) {
    close(fds[0]);
    const std::string failures = body();
    const ssize_t n = write(fds[1], failures.data(), failures.size());
    _exit(n == ssize_t(failures.size()) ? 0 : 1);
  }
  close(fds[1]);
  std::string failures;
  char buffer[512];
  ssize_t n;
  while ((n = read(fds[0], buffer, sizeof buffer)) > 0) failures.append(buffer, size_t(n));
  close(fds[0]);
  int status = 0;
  waitpid(child, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) failures += " (the child did not exit 0)";
  return failures;
}

// in_child() under a file size limit of `bytes` (RLIMIT_FSIZE, soft and hard) with SIGXFSZ
// ignored: a write past it fails with EFBIG, a full disk for one file.
inline std::string in_child_with_file_size_limit(rlim_t bytes,
                                                 const std::function<std::string()>& body) {
  return in_child([&]() -> std::string {
    signal(SIGXFSZ, SIG_IGN);
    const rlimit limit{bytes, bytes};
    if (setrlimit(RLIMIT_FSIZE, &limit) != 0) return "setrlimit failed";
    return body();
  });
}

}  // namespace memtap::test
