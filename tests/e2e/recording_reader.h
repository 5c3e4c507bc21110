// A finished recording read back into plain structs: the `memscope_dump` rows (with their
// Attr JSON parsed), the `memtap_session` rows and `memtap_meta`.
//
// The reader decodes and keeps the raw values; it judges nothing beyond "can this be
// read". The end-to-end checks (recording_checks.h) decide what is right.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "tests/e2e/db_query.h"

namespace memtap::e2e {

// msMemScope's `memscope_dump` columns, in their order (docs/design.md, monitor/store).
extern const std::vector<std::string> kMemscopeDumpColumns;

struct DumpRecord {
  std::vector<DbValue> raw;  // the row as stored, in kMemscopeDumpColumns order

  int64_t id = 0;
  std::string event;       // MALLOC, FREE, SYSTEM
  std::string event_type;  // HOST, START_TRACE, STOP_TRACE
  std::string name;
  int64_t ts_ns = 0;
  int64_t pid = 0;
  int64_t tid = 0;
  std::string device;
  std::string ptr_text;
  std::string attr_text;

  // Attr, parsed: a JSON object whose values are all strings.
  bool attr_ok = false;    // parsed as such an object (an empty Attr is not)
  std::string attr_error;  // why not
  std::map<std::string, std::string> attr;
  // Convenience reads of Attr (0 / false when absent or not a decimal number).
  uint64_t ptr = 0;  // from ptr_text when it is 0x-hex
  uint64_t size = 0;
  uint64_t allocation_id = 0;
  uint64_t inherited_from = 0;
  bool is_mmap = false;

  bool is_alloc_event() const { return event == "MALLOC" || event == "FREE"; }
  // One line for failure messages.
  std::string describe() const;
};

struct SessionRecord {
  std::map<std::string, DbValue> columns;  // every column, by name
  int64_t pid = 0;
  int64_t ppid = 0;
  int64_t forked_from_pid = 0;
  std::string hostname;
  std::string command_line;
  int64_t events_received = -1;
  int64_t events_dropped = -1;
  int64_t events_lost = -1;
  int64_t events_sent = -1;
  int64_t events_sent_before = -1;
  int64_t bye_received = -1;
};

struct RecordingData {
  std::vector<std::string> dump_columns;
  std::vector<DumpRecord> rows;               // in ID order
  std::map<int64_t, SessionRecord> sessions;  // by pid
  int session_rows = 0;                       // rows in memtap_session (pids may repeat)
  std::map<std::string, std::string> meta;

  // Rows of one process, in ID order.
  std::vector<const DumpRecord*> rows_of(int64_t pid) const;
};

// Reads `path`. False with *error when the file or one of the three tables cannot be read.
bool load_recording(const std::string& path, RecordingData* out, std::string* error);

// Parses a flat JSON object whose values are all strings ({"a":"1","b":"x"}); false with
// *error naming the position otherwise.
bool parse_string_object(const std::string& json, std::map<std::string, std::string>* out,
                         std::string* error);

// Whether `text` is a non-empty run of decimal digits; its value in *value.
bool parse_decimal(const std::string& text, uint64_t* value);

}  // namespace memtap::e2e
