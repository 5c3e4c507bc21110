// Turning SQLite failures into one-line messages (see sqlite_status.h).
#include "monitor/store/sqlite_status.h"

#include <sqlite3.h>

#include <cerrno>
#include <cstring>

namespace memtap {
namespace {

// SQLite has no public name lookup for result codes; the primary codes are enough to
// tell a full disk from a permission problem or a corrupt file.
struct CodeName {
  int code;
  const char* name;
};
constexpr CodeName kPrimaryCodeNames[] = {
    {SQLITE_OK, "SQLITE_OK"},
    {SQLITE_ERROR, "SQLITE_ERROR"},
    {SQLITE_INTERNAL, "SQLITE_INTERNAL"},
    {SQLITE_PERM, "SQLITE_PERM"},
    {SQLITE_ABORT, "SQLITE_ABORT"},
    {SQLITE_BUSY, "SQLITE_BUSY"},
    {SQLITE_LOCKED, "SQLITE_LOCKED"},
    {SQLITE_NOMEM, "SQLITE_NOMEM"},
    {SQLITE_READONLY, "SQLITE_READONLY"},
    {SQLITE_INTERRUPT, "SQLITE_INTERRUPT"},
    {SQLITE_IOERR, "SQLITE_IOERR"},
    {SQLITE_CORRUPT, "SQLITE_CORRUPT"},
    {SQLITE_NOTFOUND, "SQLITE_NOTFOUND"},
    {SQLITE_FULL, "SQLITE_FULL"},
    {SQLITE_CANTOPEN, "SQLITE_CANTOPEN"},
    {SQLITE_PROTOCOL, "SQLITE_PROTOCOL"},
    {SQLITE_SCHEMA, "SQLITE_SCHEMA"},
    {SQLITE_TOOBIG, "SQLITE_TOOBIG"},
    {SQLITE_CONSTRAINT, "SQLITE_CONSTRAINT"},
    {SQLITE_MISMATCH, "SQLITE_MISMATCH"},
    {SQLITE_MISUSE, "SQLITE_MISUSE"},
    {SQLITE_NOLFS, "SQLITE_NOLFS"},
    {SQLITE_AUTH, "SQLITE_AUTH"},
    {SQLITE_RANGE, "SQLITE_RANGE"},
    {SQLITE_NOTADB, "SQLITE_NOTADB"},
};

const char* primary_code_name(int rc) {
  for (const CodeName& entry : kPrimaryCodeNames) {
    if (entry.code == (rc & 0xff)) return entry.name;
  }
  return "SQLITE_UNKNOWN";
}

}  // namespace

std::string sqlite_error_text(sqlite3* db, int rc) {
  // sqlite3_errmsg is more specific than sqlite3_errstr ("no such table: x"), but only
  // while it still describes rc: a later successful call resets it.
  const bool db_describes_rc =
      db != nullptr && (sqlite3_extended_errcode(db) & 0xff) == (rc & 0xff);
  std::string text = db_describes_rc ? sqlite3_errmsg(db) : sqlite3_errstr(rc);
  text += " [";
  text += primary_code_name(rc);
  text += "]";
  const int os_errno = db != nullptr ? sqlite3_system_errno(db) : 0;
  const int primary = rc & 0xff;
  if (os_errno != 0 && (primary == SQLITE_IOERR || primary == SQLITE_CANTOPEN ||
                        primary == SQLITE_FULL || primary == SQLITE_READONLY)) {
    text += " (";
    text += std::strerror(os_errno);
    text += ")";
  }
  return text;
}

bool errno_disk_full(int error_number) {
  return error_number == ENOSPC || error_number == EDQUOT || error_number == EFBIG;
}

bool sqlite_disk_full(sqlite3* db, int rc) {
  const int primary = rc & 0xff;
  if (primary == SQLITE_FULL) return true;
  return primary == SQLITE_IOERR && db != nullptr && errno_disk_full(sqlite3_system_errno(db));
}

bool sqlite_exec(sqlite3* db, const char* sql, std::string* error) {
  const int rc = sqlite3_exec(db, sql, nullptr, nullptr, nullptr);
  if (rc == SQLITE_OK) return true;
  if (error != nullptr) *error = std::string(sql) + ": " + sqlite_error_text(db, rc);
  return false;
}

}  // namespace memtap
