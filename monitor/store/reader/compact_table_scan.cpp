// memtap_event rows decoded into events (see compact_table_scan.h).
//
// Field by field, what the memscope_dump view spells and the text reader makes of it:
//   Event, Event Type   CASE over the codes -> classify_event (asked here with the same words)
//   Timestamp(ns)       timestamp_offset_ns + timestamp_base_ns
//   Process/Thread Id   memtap_thread's row (none: NULL, read as 0; out of range: skipped)
//   Device Id           detail - 1 on the rows whose detail holds a device (not 0), else
//                       `cpu` for MALLOC, FREE and SNAPSHOT, `N/A` for the others
//   Ptr, Attr           the columns as compact_schema.h's pack_columns put them: MALLOC,
//                       FREE and OOM_TOP_ALLOC: ptr, allocation_id, size_bytes, owner (its
//                       text when not empty), HOST detail bit 0 `kind:mmap`, detail >> 1
//                       `inherited_from` (which MemEvent does not hold), memtap_event_stream
//                       `stream`, memtap_event_pool `used`, `total`, `pending` (PTA);
//                       FREE_COMPLETED: ptr, size_bytes; SNAPSHOT: size_bytes as
//                       app_reserved, detail as total when not 0, or of a device's pool
//                       (PTA) size_bytes as allocated and ptr as reserved, memtap_event_pool
//                       `used` as max_allocated, `total` as max_reserved; KERNEL_LAUNCH: ptr
//                       as stream; OOM_TRIGGER: size_bytes as req_size, ptr as stream; a
//                       device's START_TRACE: size_bytes as free, ptr as total
//   Name                SYSTEM STEP: detail in decimal; else the name's text, `N/A` if none
//   Call Stacks         the stacks' text, '' if none
// and the text reader interns `N/A` and '' as string 0.
#include "monitor/store/reader/compact_table_scan.h"

#include <algorithm>
#include <array>
#include <limits>
#include <unordered_map>

#include "monitor/store/compact_schema.h"
#include "monitor/store/memscope_format.h"
#include "monitor/store/reader/event_vocabulary.h"
#include "monitor/store/reader/read_progress.h"
#include "monitor/store/reader/string_interner.h"
#include "monitor/store/reader/text_values.h"

namespace memtap::reader {
namespace {

// memtap_event's columns as the scan selects them (names and stacks may be selected as 0).
enum Column : int {
  kId,
  kEvent,
  kEventType,
  kTimestampOffset,
  kThread,
  kPtr,
  kSizeBytes,
  kAllocationId,
  kOwner,
  kDetail,
  kName,
  kStackPython,
  kStackC,
  kStream,       // NULL unless a memtap_event_stream row holds one
  kPoolUsed,     // memtap_event_pool's (NULL unless it has a row, and when not known)
  kPoolTotal,    //
  kPoolPending,  // NULL unless memtap_event_pool has a row
  kColumns
};

// The codes the newest version defines (compact_schema.h pins them to the enums).
constexpr int64_t kEventCodes = int64_t(DumpEvent::kFreeCompleted) + 1;
constexpr int64_t kEventTypeCodes = int64_t(DumpEventType::kPta) + 1;

struct CodeMeaning {
  EventClass event_class;
  int32_t device = kNoDevice;
};

// What each pair of codes means, decided by the text reader's own vocabulary on the words
// the view spells them with, so that the two readings cannot drift apart.
class CodeTable {
 public:
  CodeTable() {
    for (int64_t e = 0; e < kEventCodes; ++e) {
      const auto event = DumpEvent(e);
      if (event == DumpEvent::kTraceSlice) continue;  // no memscope_dump row: no meaning
      int32_t device = kNoDevice;
      parse_device(dump_device_id_text(event), &device);
      for (int64_t t = 0; t < kEventTypeCodes; ++t) {
        const std::string_view type = dump_event_type_text(DumpEventType(t));
        meanings_[size_t(e)][size_t(t)] = {classify_event(dump_event_text(event), type), device};
      }
    }
  }
  // Null for a code no version defines.
  const CodeMeaning* find(int64_t event, int64_t event_type) const {
    if (event < 0 || event >= kEventCodes || event_type < 0 || event_type >= kEventTypeCodes ||
        DumpEvent(event) == DumpEvent::kTraceSlice) {
      return nullptr;
    }
    return &meanings_[size_t(event)][size_t(event_type)];
  }

 private:
  std::array<std::array<CodeMeaning, kEventTypeCodes>, kEventCodes> meanings_{};
};

const CodeTable& code_table() {
  static const CodeTable table;  // immutable once built; C++ makes its first use thread-safe
  return table;
}

// memtap_string looked up as rows first use an id, each id once per scan: a full read meets
// every string anyway, and a filtered one (the detail source reads owners only) meets few,
// so stacks it never asks for are never read.
class StringIds {
 public:
  StringIds(sqlite3* db, StringTable* strings) : db_(db), interner_(strings) {}

  int prepare() {
    return sqlite3_prepare_v2(db_, "SELECT text FROM memtap_string WHERE id = ?1", -1,
                              &lookup_.stmt, nullptr);
  }
  // The id in the recording's table of string `id`'s text: 0 for id 0, for an id with no
  // row (the view's NULL) and for '' and `N/A` (the interner's rule).
  uint32_t intern(int64_t id) {
    if (id == 0) return 0;
    if (id > 0 && id < kDirectIds) {
      if (size_t(id) >= direct_.size()) direct_.resize(size_t(id) + 1, kNotYet);
      uint32_t& slot = direct_[size_t(id)];
      if (slot == kNotYet) slot = look_up(id);
      return slot;
    }
    const auto it = sparse_.find(id);
    return it != sparse_.end() ? it->second : sparse_.emplace(id, look_up(id)).first->second;
  }
  // Text that is no memtap_string row (a step's number), interned the same way.
  uint32_t intern_text(std::string_view text) { return interner_.intern(text); }
  // SQLITE_OK, or the first failure of a lookup.
  int status() const { return status_; }

 private:
  static constexpr int64_t kDirectIds = int64_t(1) << 24;
  static constexpr uint32_t kNotYet = std::numeric_limits<uint32_t>::max();

  uint32_t look_up(int64_t id) {
    sqlite3_bind_int64(lookup_.stmt, 1, id);
    uint32_t interned = 0;
    const int rc = sqlite3_step(lookup_.stmt);
    if (rc == SQLITE_ROW) {
      const auto* text = reinterpret_cast<const char*>(sqlite3_column_text(lookup_.stmt, 0));
      if (text != nullptr) {
        interned = interner_.intern({text, size_t(sqlite3_column_bytes(lookup_.stmt, 0))});
      }
    } else if (rc != SQLITE_DONE && status_ == SQLITE_OK) {
      status_ = rc;
    }
    sqlite3_reset(lookup_.stmt);
    return interned;
  }

  sqlite3* db_;
  Statement lookup_;
  StringInterner interner_;
  std::vector<uint32_t> direct_;
  std::unordered_map<int64_t, uint32_t> sparse_;
  int status_ = SQLITE_OK;
};

// One memtap_event row as the statement returns it.
struct CompactRow {
  int64_t values[kColumns] = {};
  bool has_timestamp = false;
  bool has_stream = false;
  bool has_pool = false;

  int64_t operator[](Column column) const { return values[column]; }
};

void read_row(sqlite3_stmt* stmt, CompactRow* row) {
  for (int column = 0; column < kColumns; ++column) {
    row->values[column] = sqlite3_column_int64(stmt, column);
  }
  row->has_timestamp = sqlite3_column_type(stmt, kTimestampOffset) != SQLITE_NULL;
  row->has_stream = sqlite3_column_type(stmt, kStream) != SQLITE_NULL;
  row->has_pool = sqlite3_column_type(stmt, kPoolPending) != SQLITE_NULL;
  // NULL: not known, as pack_columns writes -1.
  if (sqlite3_column_type(stmt, kPoolUsed) == SQLITE_NULL) row->values[kPoolUsed] = -1;
  if (sqlite3_column_type(stmt, kPoolTotal) == SQLITE_NULL) row->values[kPoolTotal] = -1;
}

// Process Id / Thread Id as the text reader checks them.
bool id_in_range(const char* column, int64_t value, uint32_t* id, std::string* problem) {
  if (value < 0 || value > int64_t(std::numeric_limits<uint32_t>::max())) {
    *problem = std::string(column) + " " + std::to_string(value) + " is out of range";
    return false;
  }
  *id = uint32_t(value);
  return true;
}

class CompactRowDecoder {
 public:
  CompactRowDecoder(const CompactFile& file, StringIds* strings, bool names_and_stacks)
      : file_(file), strings_(strings), names_and_stacks_(names_and_stacks) {}

  // Fills *event from `row`; false with *problem for a row the text reader would skip, or
  // whose codes version 1 does not define.
  bool decode(const CompactRow& row, MemEvent* event, std::string* problem) {
    *event = MemEvent{};
    const CodeMeaning* meaning = code_table().find(row[kEvent], row[kEventType]);
    if (meaning == nullptr) {
      *problem = "event " + std::to_string(row[kEvent]) + ", event_type " +
                 std::to_string(row[kEventType]) + ": not codes of memtap_format version " +
                 std::to_string(file_.version);
      return false;
    }
    event->kind = meaning->event_class.kind;
    event->layer = meaning->event_class.layer;
    event->device = meaning->device;
    if (!row.has_timestamp) {
      *problem = "Timestamp(ns) is empty";
      return false;
    }
    if (!read_thread(row[kThread], event, problem)) return false;
    const auto event_code = DumpEvent(row[kEvent]);
    // The columns back into the row they were packed from (compact_schema.h), then into
    // the event as the text reader reads that row's Attr.
    DumpRow dump;
    dump.event = event_code;
    dump.event_type = DumpEventType(row[kEventType]);
    unpack_columns(
        {row[kPtr], row[kSizeBytes], row[kAllocationId], row[kOwner], row[kDetail], row.has_stream,
         row[kStream], row.has_pool, row[kPoolUsed], row[kPoolTotal], row[kPoolPending] != 0},
        &dump);
    if (dump.device >= 0) event->device = dump.device;
    if (dump.has_stream) event->stream = dump.stream;
    if (dump_row_has_block(dump)) {
      read_block(dump, event);
      if (dump_row_is_pool_block(dump)) {  // Attr used, total, pending
        if (dump.pool_used >= 0) event->pool_used = dump.pool_used;
        if (dump.pool_total >= 0) event->pool_total = dump.pool_total;
        event->free_pending = dump.free_pending;
      }
    } else if (event_code == DumpEvent::kFreeCompleted) {
      event->addr = dump.ptr;
      event->size_bytes = dump.size_bytes;
    } else if (event_code == DumpEvent::kSnapshot && dump.event_type == DumpEventType::kPta) {
      event->snap_allocated = dump.pool_used;
      event->snap_reserved = dump.pool_total;
      if (dump.has_pool_peaks) {
        event->snap_max_allocated = int64_t(dump.size_bytes);
        event->snap_max_reserved = int64_t(dump.total_bytes);
      }
    } else if (event_code == DumpEvent::kSnapshot) {
      event->snap_app_reserved = int64_t(dump.size_bytes);
      if (dump.total_bytes != 0) event->snap_total = int64_t(dump.total_bytes);
    } else if (dump.event_type == DumpEventType::kOomTrigger) {
      event->size_bytes = dump.size_bytes;
    } else if (dump.event_type == DumpEventType::kStartTrace && dump.device >= 0) {
      event->snap_free = int64_t(dump.size_bytes);
      event->snap_total = int64_t(dump.total_bytes);
    }
    // Unsigned addition: a damaged offset wraps rather than overflowing.
    event->ts_ns = int64_t(uint64_t(file_.timestamp_base_ns) + uint64_t(row[kTimestampOffset]));
    if (names_and_stacks_) read_names_and_stacks(row, event_code, event);
    return true;
  }

 private:
  bool read_thread(int64_t number, MemEvent* event, std::string* problem) const {
    const int64_t at = file_.thread_index.find(number);
    if (at < 0) return true;  // no memtap_thread row: the view's NULL, read as 0
    const CompactThread& thread = file_.threads[size_t(at)];
    return id_in_range("Process Id", thread.process_id, &event->pid, problem) &&
           id_in_range("Thread Id", thread.thread_id, &event->tid, problem);
  }

  void read_block(const DumpRow& row, MemEvent* event) {
    event->addr = row.ptr;
    event->allocation_id = row.allocation_id;
    event->size_bytes = row.size_bytes;
    event->owner = strings_->intern(row.owner);  // before the name, as the text reader
    event->is_mmap = row.is_mmap;
  }

  void read_names_and_stacks(const CompactRow& row, DumpEvent event_code, MemEvent* event) {
    if (event_code == DumpEvent::kSystem &&
        DumpEventType(row[kEventType]) == DumpEventType::kStep) {
      event->name = strings_->intern_text(std::to_string(row[kDetail]));  // the view's CAST
    } else {
      event->name = strings_->intern(row[kName]);
    }
    event->stack_python = strings_->intern(row[kStackPython]);
    event->stack_c = strings_->intern(row[kStackC]);
  }

  const CompactFile& file_;
  StringIds* strings_;
  bool names_and_stacks_;
};

// floor(a - b) bounded to int64: the offset bound for a time bound.
int64_t offset_bound(int64_t max_ts_ns, int64_t base_ns) {
  const __int128 offset = __int128(max_ts_ns) - base_ns;
  return int64_t(std::clamp<__int128>(offset, std::numeric_limits<int64_t>::min(),
                                      std::numeric_limits<int64_t>::max()));
}

bool has_time_bound(const RecordingFilter& filter) {
  return filter.max_ts_ns != std::numeric_limits<int64_t>::max();
}

// The query for `scan`: its ID range always bounded (see compact_tables.h on live files).
std::string scan_sql(const CompactFile& file, const CompactScan& scan) {
  const bool names = !scan.filter.skip_names_and_stacks;
  std::string sql =
      "SELECT ID, event, event_type, timestamp_offset_ns, thread, ptr, size_bytes, "
      "allocation_id, owner, detail, ";
  sql += names ? "name, stack_python, stack_c" : "0, 0, 0";
  // The stream and pool tables are looked up only for the blocks that may have a row there.
  const std::string block_event = "event IN (" + std::to_string(int(DumpEvent::kMalloc)) + ", " +
                                  std::to_string(int(DumpEvent::kFree)) + ")";
  sql += file.version >= 2 ? ", CASE WHEN " + block_event + " AND event_type IN (" +
                                 std::to_string(int(DumpEventType::kHal)) + ", " +
                                 std::to_string(int(DumpEventType::kHostPinned)) + ", " +
                                 std::to_string(int(DumpEventType::kPta)) +
                                 ") THEN (SELECT stream FROM memtap_event_stream AS s WHERE s.ID "
                                 "= memtap_event.ID) END"
                           : ", NULL";
  if (file.version >= 3) {
    // A PTA block's pool after it, or a device pool SNAPSHOT's peaks.
    const std::string pool_event = "event IN (" + std::to_string(int(DumpEvent::kMalloc)) + ", " +
                                   std::to_string(int(DumpEvent::kFree)) + ", " +
                                   std::to_string(int(DumpEvent::kSnapshot)) + ")";
    const std::string pool = " CASE WHEN " + pool_event +
                             " AND event_type = " + std::to_string(int(DumpEventType::kPta)) +
                             " THEN (SELECT ";
    const std::string from = " FROM memtap_event_pool AS p WHERE p.ID = memtap_event.ID) END";
    sql += "," + pool + "used" + from + "," + pool + "total" + from + "," + pool + "pending" + from;
  } else {
    sql += ", NULL, NULL, NULL";
  }
  sql += " FROM memtap_event WHERE ID BETWEEN ?1 AND ?2";
  // Pid 0 stays out: rows of a thread without a memtap_thread row also read as pid 0.
  if (scan.filter.pid && *scan.filter.pid != 0) {
    std::string list;
    for (const int64_t number : threads_of(file, *scan.filter.pid)) {
      list += (list.empty() ? "" : ", ") + std::to_string(number);
    }
    sql += " AND thread IN (" + list + ")";  // SQLite takes an empty list: no row
  }
  if (has_time_bound(scan.filter)) sql += " AND timestamp_offset_ns <= ?3";
  if (scan.time_order) sql += " ORDER BY timestamp_offset_ns, ID";
  return sql;
}

}  // namespace

int64_t compact_scan_last_id(const CompactFile& file, const RecordingFilter& filter) {
  if (!has_time_bound(filter)) return file.last_id;
  return last_id_at_or_before(file, offset_bound(filter.max_ts_ns, file.timestamp_base_ns));
}

bool scan_compact_rows(const std::string& path, sqlite3* db, const CompactFile& file,
                       const CompactScan& scan, std::vector<MemEvent>* events, StringTable* strings,
                       RowProblems* problems, std::string* error) {
  if (!file.has_rows) return true;
  const RecordingFilter& filter = scan.filter;
  const int64_t last = compact_scan_last_id(file, filter);
  StringIds string_ids(db, strings);
  Statement s;
  int rc = string_ids.prepare();
  if (rc == SQLITE_OK)
    rc = sqlite3_prepare_v2(db, scan_sql(file, scan).c_str(), -1, &s.stmt, nullptr);
  if (rc == SQLITE_OK) {
    sqlite3_bind_int64(s.stmt, 1,
                       scan.whole_table ? std::numeric_limits<int64_t>::min() : scan.first_id);
    sqlite3_bind_int64(s.stmt, 2, scan.whole_table ? last : std::min(last, scan.last_id));
    if (has_time_bound(filter)) {
      sqlite3_bind_int64(s.stmt, 3, offset_bound(filter.max_ts_ns, file.timestamp_base_ns));
    }
  }
  CompactRowDecoder decoder(file, &string_ids, !filter.skip_names_and_stacks);
  CompactRow row;
  std::string problem;
  RowCounter counter(scan.rows_read);
  while (rc == SQLITE_OK && (rc = sqlite3_step(s.stmt)) == SQLITE_ROW) {
    ++problems->rows;
    counter.row();
    read_row(s.stmt, &row);
    MemEvent& event = events->emplace_back();
    if (!decoder.decode(row, &event, &problem)) {
      events->pop_back();
      skip_row(problems, "ID " + std::to_string(row[kId]), problem);
    } else if (!filter.passes(event)) {
      events->pop_back();  // what the query could not leave out
    }
    rc = string_ids.status();  // SQLITE_OK unless a string's lookup failed
    if (rc == SQLITE_OK && scan.drain && events->size() >= scan.batch_events && !scan.drain()) {
      return true;
    }
  }
  if (rc == SQLITE_DONE) return true;
  *error = sqlite_failure(path, db, rc) + " after " + std::to_string(problems->rows) + " rows";
  return false;
}

}  // namespace memtap::reader
