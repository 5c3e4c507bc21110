// What `memtap export` and `memtap import` say about a file they wrote, and where a file
// goes when no -o names one.
#pragma once

#include <string>

#include "monitor/store/export/recording_export.h"

namespace memtap {

// "./memscope_dump_<YYYYmmddHHMMSS>.db" for msmemscope-db (default_db_path()), and the same
// time in "./memscope_dump_<time>.csv", "./operator_memory_<time>.csv",
// "./memory_record_<time>.csv" for the others.
std::string default_export_path(ExportFormat format);

// On stderr, after `command` ("memtap export"): where the file went and what it is, the
// events the format had no place for, and for a database MindStudio Insight would not import
// by its name, that it matches the name and not the content.
void print_export_written(const char* command, const std::string& out, ExportFormat format,
                          const ExportSummary& summary);

}  // namespace memtap
