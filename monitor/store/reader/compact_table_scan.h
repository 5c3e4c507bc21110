// The rows of a compact recording's memtap_event decoded into events, straight from its
// integers (compact_schema.h).
//
// The file's `memscope_dump` view spells each row as text, which the dump reader would parse
// back (dump_row_decoder.h): this gives the same events without either step, and with
// columns SQLite compares as numbers, so a RecordingFilter goes into the query. The
// meaning of each row is the view's as the text reader decodes it, field by field (see
// compact_table_scan.cpp); where the integers say more than the text could, they win:
//   - an event or event_type code version 1 does not define is a skipped row (the view
//     spells it `N/A`, which the text reader keeps as an event of kind kOther);
//   - ptr, size_bytes, allocation_id and the detail keep all 64 bits (the view prints
//     values of 2^63 and above as negative numbers, which Attr cannot hold);
//   - timestamps are nanoseconds, as the writer stores them: no microsecond guess
//     (timestamp_unit.h), which only msMemScope's misnamed column needs.
#pragma once

#include <atomic>
#include <cstddef>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "monitor/model/mem_event.h"
#include "monitor/store/reader/compact_tables.h"
#include "monitor/store/reader/recording_reader.h"
#include "monitor/store/reader/row_problems.h"

namespace memtap::reader {

struct CompactScan {
  bool time_order = false;  // ORDER BY timestamp_offset_ns, ID; else ID order
  bool whole_table = true;  // else only IDs in [first_id, last_id]
  int64_t first_id = 0;
  int64_t last_id = 0;
  // Optional: called whenever *events holds batch_events or more; false stops the scan.
  std::function<bool()> drain;
  size_t batch_events = 0;
  // In the query: pid as the thread numbers of that process, max_ts_ns as an offset bound
  // and, through memtap_event_chunk, the last ID to visit; checked again after decoding.
  RecordingFilter filter;
  // Where the rows visited are counted (ReadProgress::rows_read); null: nowhere.
  std::atomic<uint64_t>* rows_read = nullptr;
};

// The last ID any scan with `filter` visits: the file's last ID when loaded, or earlier
// when the filter's time bound lets the chunks stop the scan (last_id_at_or_before).
int64_t compact_scan_last_id(const CompactFile& file, const RecordingFilter& filter);

// Appends the decoded rows to *events (strings interned into *strings, in the order the
// text reader interns them: owner, name, Python stack, C stack), counting rows and skipped
// ones in *problems. False with *error when SQLite fails mid-way (corruption).
bool scan_compact_rows(const std::string& path, sqlite3* db, const CompactFile& file,
                       const CompactScan& scan, std::vector<MemEvent>* events, StringTable* strings,
                       RowProblems* problems, std::string* error);

}  // namespace memtap::reader
