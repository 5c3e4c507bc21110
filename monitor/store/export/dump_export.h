// The msmemscope-db and msmemscope-csv exports of a file that is not a memtap or msMemScope
// database (a CSV, a PyTorch snapshot), or of one process of any file: its events as the
// DumpRows memtap's writer would have made of them (event_dump_row.h), in time order, into
// dump_db_writer.h or dump_csv_writer.h. The database also gets memtap_session (the input's
// processes, each started at its first event) and memtap_meta (exported_from, and what the
// input's memtap_meta said of how complete it is).
#pragma once

#include <string>

#include "monitor/store/export/recording_export.h"

namespace memtap {

// Writes `partial` (which must not exist) in `format`, kMsmemscopeDb or kMsmemscopeCsv.
bool export_dump_rows(const std::string& in, ExportFormat format, const std::string& partial,
                      const ExportOptions& options, ExportSummary* summary, std::string* error);

}  // namespace memtap
