// Reading SQLite files for the reader (see sqlite_access.h).
#include "monitor/store/reader/sqlite_access.h"

#include <sys/stat.h>

#include <array>
#include <fstream>

#include "monitor/store/reader/text_values.h"
#include "monitor/store/sqlite_status.h"

namespace memtap::reader {
namespace {

uint32_t big_endian(const unsigned char* p, int bytes) {
  uint32_t value = 0;
  for (int i = 0; i < bytes; ++i) value = value << 8 | p[i];
  return value;
}

// Whether a database header (its first 20 bytes at least) says WAL mode: read and write
// versions 2.
bool wal_mode(const unsigned char* header) {
  return header[18] == 2 && header[19] == 2;
}

// Whether a log with frames lies beside `path`: committed pages may then be in it alone.
bool log_has_frames(const std::string& path) {
  struct stat wal {};
  return ::stat((path + "-wal").c_str(), &wal) == 0 && wal.st_size > 0;
}

// Whether `path` is in WAL mode with no log of frames beside it: every committed page is
// then in the file itself.
bool wal_mode_without_log(const std::string& path) {
  std::array<unsigned char, 20> header{};
  std::ifstream file(path, std::ios::binary);
  file.read(reinterpret_cast<char*>(header.data()), header.size());
  return file.gcount() == std::streamsize(header.size()) && wal_mode(header.data()) &&
         !log_has_frames(path);
}

// SQLite's URI for `path` with immutable=1: '%', '?' and '#' escaped, and an absolute path
// after an empty authority so that one starting "//" is not read as a host.
std::string immutable_uri(const std::string& path) {
  std::string uri = path.empty() || path[0] != '/' ? "file:" : "file://";
  for (const char c : path) {
    if (c == '%' || c == '?' || c == '#') {
      static const char kHex[] = "0123456789ABCDEF";
      uri += '%';
      uri += kHex[(static_cast<unsigned char>(c) >> 4) & 0xf];
      uri += kHex[static_cast<unsigned char>(c) & 0xf];
    } else {
      uri += c;
    }
  }
  return uri + "?immutable=1";
}

}  // namespace

int open_read_only(const std::string& path, int extra_flags, sqlite3** db) {
  const int flags = SQLITE_OPEN_READONLY | extra_flags;
  int rc = sqlite3_open_v2(path.c_str(), db, flags, nullptr);
  if (rc != SQLITE_OK) return rc;
  // SQLite opens the log and its index at the first read: this one tells whether it can.
  const int read_rc = sqlite3_exec(*db, "PRAGMA schema_version", nullptr, nullptr, nullptr);
  const int primary = read_rc & 0xff;
  if (primary != SQLITE_IOERR && primary != SQLITE_CANTOPEN && primary != SQLITE_READONLY) {
    return SQLITE_OK;  // readable, or a failure the caller's own reads will name
  }
  if (!wal_mode_without_log(path)) return SQLITE_OK;
  sqlite3* immutable = nullptr;
  rc = sqlite3_open_v2(immutable_uri(path).c_str(), &immutable, flags | SQLITE_OPEN_URI, nullptr);
  if (rc != SQLITE_OK) {
    sqlite3_close(immutable);
    return SQLITE_OK;  // the first handle's reads say why
  }
  sqlite3_close(*db);
  *db = immutable;
  return SQLITE_OK;
}

std::string sqlite_failure(const std::string& path, sqlite3* db, int rc) {
  if (rc == SQLITE_READONLY_ROLLBACK ||
      ((rc & 0xff) == SQLITE_READONLY && db != nullptr &&
       sqlite3_extended_errcode(db) == SQLITE_READONLY_ROLLBACK)) {
    // A writer died inside a transaction (memtap's, while it built the indexes): only a
    // read-write open rolls the journal back, and a reader never writes.
    const std::string journal = path + "-journal";
    if (path.ends_with(".partial")) {
      return path +
             ": the monitor was stopped while it finished this recording, and its "
             "rollback journal " +
             journal +
             " holds the changes it had half made; "
             "'memtap recover " +
             path + "' rolls them back and finishes it";
    }
    return path + ": a write to this database was cut half made, and its rollback journal " +
           journal + " must be rolled back first: open it read-write once (sqlite3 " + path +
           " 'PRAGMA quick_check')";
  }
  const int primary = rc & 0xff;
  const char* what = primary == SQLITE_CORRUPT || primary == SQLITE_NOTADB
                         ? ": corrupt or truncated SQLite database ("
                         : ": cannot read the SQLite database (";
  // SQLite's message may quote the file's schema (a damaged one: any bytes, newlines).
  return path + what + printable_for_message(sqlite_error_text(db, rc), 200) + ")";
}

bool check_sqlite_length(const std::string& path, std::string* error) {
  std::array<unsigned char, 100> header{};
  std::ifstream file(path, std::ios::binary);
  file.read(reinterpret_cast<char*>(header.data()), header.size());
  const auto got = file.gcount();
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return true;  // SQLite will say what is wrong
  if (got < std::streamsize(header.size())) {
    *error = path + ": truncated SQLite database: " + std::to_string(st.st_size) +
             " bytes, shorter than the 100-byte header";
    return false;
  }
  uint64_t page_size = big_endian(&header[16], 2);
  if (page_size == 1) page_size = 65536;
  const bool page_size_valid =
      page_size >= 512 && page_size <= 65536 && (page_size & (page_size - 1)) == 0;
  const uint32_t pages = big_endian(&header[28], 4);
  // The page count is trusted (by SQLite too) only while the change counters agree; a
  // header that is itself garbage says nothing about length, and SQLite calls it NOTADB.
  const bool count_valid =
      page_size_valid && pages > 0 && big_endian(&header[24], 4) == big_endian(&header[92], 4);
  // A recording in WAL mode (read and write versions 2) with its log beside it may hold its
  // pages in the log: a checkpoint that a full disk stopped part way has written page 1,
  // with the new page count, and not the pages that would have grown the file. SQLite takes
  // the size from the log then, and so does this check.
  const bool pages_in_log = wal_mode(header.data()) && log_has_frames(path);
  if (count_valid && !pages_in_log && uint64_t(st.st_size) < page_size * pages) {
    *error = path + ": truncated SQLite database: its header says " + std::to_string(pages) +
             " pages of " + std::to_string(page_size) + " bytes (" +
             std::to_string(page_size * pages) + " bytes) but the file has " +
             std::to_string(st.st_size);
    return false;
  }
  return true;
}

bool open_for_reading(const std::string& path, DbHandle* handle, std::string* error) {
  const int rc = open_read_only(path, SQLITE_OPEN_NOMUTEX, &handle->db);
  if (rc != SQLITE_OK) {
    *error = sqlite_failure(path, handle->db, rc);
    return false;
  }
  sqlite3_busy_timeout(handle->db, 2000);  // a recorder may be committing right now
  // Map the file instead of copying every page through read(): a large recording is read
  // once, front to back. (SQLite caps this at its compile-time maximum.)
  sqlite3_exec(handle->db, "PRAGMA mmap_size = 17179869184", nullptr, nullptr, nullptr);
  return true;
}

std::string quote_identifier(const std::string& name) {
  std::string quoted = "\"";
  for (char c : name) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

std::string join_names(const std::vector<std::string>& names) {
  std::string text;
  for (const std::string& name : names) {
    text += (text.empty() ? "" : ", ") + printable_for_message(name);
  }
  return text;
}

bool table_columns(const std::string& path, sqlite3* db, const std::string& table,
                   std::vector<std::string>* columns, std::string* error,
                   std::vector<std::string>* types) {
  const std::string sql = "SELECT name, type FROM pragma_table_info('" + table + "') ORDER BY cid";
  return for_each_row(
      path, db, sql,
      [&](sqlite3_stmt* s) {
        columns->push_back(column_string(s, 0));
        if (types != nullptr) types->push_back(column_string(s, 1));
      },
      error);
}

int find_column(const std::vector<std::string>& columns, std::string_view name) {
  for (size_t i = 0; i < columns.size(); ++i) {
    if (equals_ignore_case(columns[i], name)) return int(i);
  }
  return -1;
}

}  // namespace memtap::reader
