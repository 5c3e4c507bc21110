// Turning SQLite failures into one-line messages, and running SQL that returns no rows.
//
// Every store error ends up in a message a user reads after a long recording, so it
// carries SQLite's own text, the result code's name and the OS error behind it when there
// is one ("database or disk is full [SQLITE_FULL]", "... [SQLITE_IOERR] (No space left on
// device)").
#pragma once

#include <string>

struct sqlite3;

namespace memtap {

// Describes result code `rc`, just returned by a call on `db` (which may be null).
std::string sqlite_error_text(sqlite3* db, int rc);

// Whether result code `rc`, just returned by a call on `db` (which may be null), means the
// file system refused to grow the file: SQLITE_FULL (SQLite's word for ENOSPC), or an I/O
// error whose OS error is ENOSPC, EDQUOT (a quota) or EFBIG (RLIMIT_FSIZE, the file
// system's largest file).
bool sqlite_disk_full(sqlite3* db, int rc);
// The same for an OS error number.
bool errno_disk_full(int error_number);

// Runs `sql` (statements that return no rows, or whose rows are not needed). On failure
// sets *error to "<sql>: <sqlite_error_text>" and returns false.
bool sqlite_exec(sqlite3* db, const char* sql, std::string* error);

}  // namespace memtap
