// The database the event table pages from. memtap's and msMemScope's recordings are SQLite
// already; a CSV recording (msMemScope's export, CANN's operator_memory / memory_record) is
// read whole into memory, so the window writes its events into a database of its own, in
// msMemScope's columns, and pages from that like from any recording.
#pragma once

#include <string>

#include "monitor/store/reader/recording_reader.h"

namespace memtap::viewdata {

// "memscope_dump" or "leaks_dump" when `path` is a SQLite database with such a table or
// view (memscope_dump first), else "".
std::string recording_table(const std::string& path);

// Writes a recording's events (the ids of `strings`) as a `memscope_dump` table (msMemScope's
// columns, one row an event in time order, IDs from 1) into a new file in $TMPDIR (/tmp) named
// after `source_path`, and returns the file's path; "" with *error (one line) when it cannot. The
// caller removes the file.
std::string write_csv_database(const std::vector<MemEvent>& events, const StringTable& strings,
                               const std::string& source_path, std::string* error);

}  // namespace memtap::viewdata
