// The event table's rows, paged straight from the recording's memscope_dump-shaped table or
// view (DataSource::database_path() / event_table()), never all of them in memory: a
// recording can hold 10 M events.
//
// Columns keep the recording's names ("Event", "Event Type", "Process Id", ...); `Size`,
// `owner` and `allocation_id` are members of the `Attr` column, read whichever way the file
// spells it (attr_parser.h) through an SQL function this connection defines.
//
// Paging (cost per page, whatever the offset):
//   - in ID order (the recording's, which is its time order) pages are found by keyset:
//     the IDs at page starts seen so far are kept, and a page reads on from the nearest
//     one before it, so scrolling reads each row once and a jump reads the rows between;
//   - sorted by another column, the IDs of the filtered rows are sorted once into a
//     temporary table (kept while the filter and the sort stay the same) and a page is a
//     range of its positions.
// The number of matching rows (the table's length) is counted once per filter. A live
// recording grows: refresh() forgets counts, positions and sorted IDs, so the next page
// counts again and sees the new rows.
//
// One EventPages belongs to one thread (the window's store thread): it holds a read-only
// SQLite connection, which sees each statement's snapshot of a file still being written.
#pragma once

#include <cstddef>
#include <cstdint>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "monitor/model/mem_event.h"

namespace memtap::viewdata {

// The table's columns, in the order the event table shows them.
enum class EventColumn : uint8_t {
  kId,
  kEvent,
  kEventType,
  kName,
  kTimestamp,
  kProcessId,
  kThreadId,
  kDeviceId,
  kPtr,
  kSize,
  kOwner,
  kAllocationId,
  kStackPython,
  kStackC,
};
inline constexpr int kEventColumns = 14;

// The column's name as the recording spells it ("Timestamp(ns)" shows as "Timestamp": the
// table shows it as time since start), and `Attr`'s members by their keys' names.
const char* event_column_name(EventColumn column);

// Which rows.
struct EventFilter {
  // Timestamp within [t0_ns, t1_ns], epoch ns (a file in microseconds is converted).
  int64_t t0_ns = std::numeric_limits<int64_t>::min();
  int64_t t1_ns = std::numeric_limits<int64_t>::max();
  uint32_t pid = 0;  // 0: every process
  // kHostDevice or a GPU ordinal: that device's rows (`Device Id` `cpu` or older `host`;
  // `0`, `1`, ...) and the rows of no device (`N/A`: steps, MSTX, operators, a process's
  // START_TRACE), which belong to every device's story. Empty: every device.
  std::optional<int32_t> device;
  std::vector<std::string> kinds;  // `Event` values ("MALLOC", "FREE", ...); empty: all
  // Size (the `Attr` size): rows without one pass only when neither bound is set.
  uint64_t min_size = 0;
  uint64_t max_size = std::numeric_limits<uint64_t>::max();
  // Case-insensitive substring of the owner, Name or either call stack; "" for any row.
  std::string text;

  bool operator==(const EventFilter&) const = default;
};

struct EventRow {
  int64_t id = 0;
  std::string event;
  std::string event_type;
  std::string name;
  int64_t timestamp_ns = 0;  // epoch ns
  int64_t process_id = 0;
  int64_t thread_id = 0;
  std::string device_id;
  std::string ptr;
  bool has_size = false;  // SYSTEM and MSTX rows have none
  uint64_t size_bytes = 0;
  std::string owner;
  std::string allocation_id;
  std::string stack_python;
  std::string stack_c;
};

struct EventPage {
  std::vector<EventRow> rows;
  uint64_t total_rows = 0;  // rows the filter matched (the table's length)
  size_t offset = 0;
  std::string error;  // the file could not be read: one line naming it; no rows
};

struct EventQuery {
  std::string path;   // DataSource::database_path()
  std::string table;  // DataSource::event_table()
  EventFilter filter;
  EventColumn column = EventColumn::kId;
  bool descending = false;
};

class EventPages {
 public:
  EventPages();
  ~EventPages();
  EventPages(const EventPages&) = delete;
  EventPages& operator=(const EventPages&) = delete;

  // Rows [offset, offset + count) of the rows `query` matches, in its order (ties by ID).
  EventPage page(const EventQuery& query, size_t offset, size_t count);
  // The recording grew: count and sort again at the next page.
  void refresh();

  struct State;  // the connection and what it keeps between pages (event_pages.cpp)

 private:
  std::unique_ptr<State> state_;
};

}  // namespace memtap::viewdata
