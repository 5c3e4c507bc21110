// memtap's `memtap_session` table read into RecordedProcesses.
//
// One row per agent instance, so a pid that exec'd has several: they become one process
// described by its last row in start order (what the pid became, and how that ended), with
// the drop counts of all its rows summed. Columns are probed, so a session table from an older
// memtap still reads.
#pragma once

#include <sqlite3.h>

#include <string>
#include <vector>

#include "monitor/model/mem_event.h"

namespace memtap::reader {

bool read_memtap_session(const std::string& path, sqlite3* db,
                         std::vector<RecordedProcess>* processes, std::string* error);

}  // namespace memtap::reader
