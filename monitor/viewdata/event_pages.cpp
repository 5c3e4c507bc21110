// See event_pages.h.
#include "monitor/viewdata/event_pages.h"

#include <sqlite3.h>

#include <algorithm>
#include <map>
#include <optional>
#include <string_view>

#include "monitor/engine/saturating.h"
#include "monitor/store/compact_schema.h"
#include "monitor/store/memscope_format.h"
#include "monitor/store/memscope_schema.h"
#include "monitor/store/reader/attr_parser.h"
#include "monitor/store/reader/compact_tables.h"
#include "monitor/store/reader/sqlite_access.h"
#include "monitor/store/reader/timestamp_unit.h"

namespace memtap::viewdata {

namespace {

using reader::column_string;
using reader::quote_identifier;
using reader::sqlite_failure;
// A statement's parameter: a number, or text when `is_text`.
struct Bind {
  Bind(int64_t value) : number(value) {}  // NOLINT: binds read as their values
  Bind(std::string value) : is_text(true), text(std::move(value)) {}  // NOLINT
  bool is_text = false;
  int64_t number = 0;
  std::string text;
};

constexpr size_t kMaxAnchors = 4096;  // page starts remembered in ID order

// memtap_attr(attr, key): the value of `key` in an Attr text, whichever form it has; NULL
// when absent or when the text does not parse.
void attr_function(sqlite3_context* context, int, sqlite3_value** values) {
  const unsigned char* text = sqlite3_value_text(values[0]);
  const unsigned char* key = sqlite3_value_text(values[1]);
  if (text == nullptr || key == nullptr) return sqlite3_result_null(context);
  std::vector<reader::AttrPair> pairs;
  std::string scratch, error;
  if (!reader::split_attr(reinterpret_cast<const char*>(text), &pairs, &scratch, &error)) {
    return sqlite3_result_null(context);
  }
  const std::string_view wanted(reinterpret_cast<const char*>(key));
  for (const reader::AttrPair& pair : pairs) {
    if (pair.key != wanted) continue;
    return sqlite3_result_text(context, pair.value.data(), int(pair.value.size()),
                               SQLITE_TRANSIENT);
  }
  sqlite3_result_null(context);
}

// The leading integer of `text` as SQLite's CAST(... AS INTEGER) reads it: spaces, a sign,
// digits; 0 when there are none.
int64_t leading_integer(std::string_view text) {
  size_t i = 0;
  while (i < text.size() && (text[i] == ' ' || text[i] == '\t')) ++i;
  const bool negative = i < text.size() && text[i] == '-';
  if (i < text.size() && (text[i] == '-' || text[i] == '+')) ++i;
  uint64_t value = 0;
  for (; i < text.size() && text[i] >= '0' && text[i] <= '9'; ++i) {
    const uint64_t next = value * 10 + uint64_t(text[i] - '0');
    if (next / 10 != value) return negative ? INT64_MIN : INT64_MAX;  // CAST clamps
    value = next;
  }
  if (value > uint64_t(INT64_MAX)) return negative ? INT64_MIN : INT64_MAX;
  return negative ? -int64_t(value) : int64_t(value);
}

// memtap_size(attr): the `size` member of an Attr text as an integer; NULL when absent.
// memtap's and msMemScope's newest Attr (JSON) is searched for `"size":"` directly (a sort
// reads every row's: a scan with memtap_attr's full parse, or with SQLite's instr/substr,
// costs 3x as much), other forms are parsed.
void size_function(sqlite3_context* context, int, sqlite3_value** values) {
  const char* text = reinterpret_cast<const char*>(sqlite3_value_text(values[0]));
  if (text == nullptr) return sqlite3_result_null(context);
  const std::string_view attr(text, size_t(sqlite3_value_bytes(values[0])));
  constexpr std::string_view kKey = "\"size\":\"";
  const size_t at = attr.find(kKey);
  if (at != std::string_view::npos) {
    return sqlite3_result_int64(context, leading_integer(attr.substr(at + kKey.size())));
  }
  std::vector<reader::AttrPair> pairs;
  std::string scratch, error;
  if (!reader::split_attr(attr, &pairs, &scratch, &error)) return sqlite3_result_null(context);
  for (const reader::AttrPair& pair : pairs) {
    if (pair.key == "size") return sqlite3_result_int64(context, leading_integer(pair.value));
  }
  sqlite3_result_null(context);
}

const char* kSizeSql = "memtap_size(\"Attr\")";

// What a column sorts by.
std::string order_expression(EventColumn column) {
  switch (column) {
    case EventColumn::kId:
      return "\"ID\"";
    case EventColumn::kEvent:
      return "\"Event\"";
    case EventColumn::kEventType:
      return "\"Event Type\"";
    case EventColumn::kName:
      return "\"Name\"";
    case EventColumn::kTimestamp:
      return "\"Timestamp(ns)\"";
    case EventColumn::kProcessId:
      return "\"Process Id\"";
    case EventColumn::kThreadId:
      return "\"Thread Id\"";
    case EventColumn::kDeviceId:
      return "\"Device Id\"";
    case EventColumn::kPtr:
      return "\"Ptr\"";
    case EventColumn::kSize:
      return kSizeSql;
    case EventColumn::kOwner:
      return "memtap_attr(\"Attr\", 'owner')";
    case EventColumn::kAllocationId:
      return "CAST(memtap_attr(\"Attr\", 'allocation_id') AS INTEGER)";
    case EventColumn::kStackPython:
      return "\"Call Stack(Python)\"";
    case EventColumn::kStackC:
      return "\"Call Stack(C)\"";
  }
  return "\"ID\"";
}

// A compact recording's columns computed from memtap_event (alias e) as the memscope_dump
// view spells them (compact_schema.h gives the view's own expressions), so that filters and
// sorts read integers and the small string table instead of building every row's text: the
// view's Attr alone costs a printf, a subquery and a JSON quote per row. The event pages
// tests check both forms.
std::string code(DumpEvent event) {
  return std::to_string(static_cast<int>(event));
}

// 'text' as an SQL literal.
std::string literal(std::string_view text) {
  std::string out = "'";
  for (char c : text) out += c == '\'' ? std::string("''") : std::string(1, c);
  return out + "'";
}

// Rows whose Attr holds allocation_id, addr, size and owner.
const std::string kBlockSql = compact_block_sql();
// SYSTEM STEP rows: their Name is the step's number (in `detail`), not a string id.
const std::string kStepSql = "(e.event = " + code(DumpEvent::kSystem) + " AND e.event_type = " +
                             std::to_string(static_cast<int>(DumpEventType::kStep)) + ")";

std::string string_of(const char* id) {
  return std::string("(SELECT text FROM memtap_string WHERE id = e.") + id + ")";
}

std::string compact_order_expression(EventColumn column) {
  switch (column) {
    case EventColumn::kId:
      return "e.ID";
    case EventColumn::kEvent:
      return compact_event_sql();
    case EventColumn::kEventType:
      return compact_event_type_sql();
    case EventColumn::kName:
      return compact_name_sql();
    case EventColumn::kTimestamp:
      return "e.timestamp_offset_ns";
    case EventColumn::kProcessId:
      return "(SELECT process_id FROM memtap_thread WHERE thread = e.thread)";
    case EventColumn::kThreadId:
      return "(SELECT thread_id FROM memtap_thread WHERE thread = e.thread)";
    case EventColumn::kDeviceId:
      return compact_device_id_sql();
    case EventColumn::kPtr:
      return compact_ptr_sql();
    case EventColumn::kSize:
      return "(CASE WHEN " + kBlockSql + " THEN e.size_bytes END)";
    case EventColumn::kOwner:
      return "(CASE WHEN " + kBlockSql +
             " THEN (SELECT text FROM memtap_string WHERE id = e.owner AND text <> '') END)";
    case EventColumn::kAllocationId:
      return "(CASE WHEN " + kBlockSql + " THEN e.allocation_id END)";
    case EventColumn::kStackPython:
      return "COALESCE(" + string_of("stack_python") + ", '')";
    case EventColumn::kStackC:
      return "COALESCE(" + string_of("stack_c") + ", '')";
  }
  return "e.ID";
}

// The condition for `Event` = kind on a compact row: the view spells codes outside its list
// as 'N/A'.
std::string compact_kind_term(const std::string& kind) {
  std::string codes;
  for (const DumpEvent event : kCompactEvents) {
    if (dump_event_text(event) == kind) return "e.event = " + code(event);
    codes += (codes.empty() ? "" : ", ") + code(event);
  }
  return kind == "N/A" ? "e.event NOT IN (" + codes + ")" : "0";
}

// The `Device Id` texts of EventFilter::device's rows: the device's own, then the rows of
// no device. Those are the process's context (SYSTEM STEP, MSTX, OP_LAUNCH, its START_TRACE
// and STOP_TRACE): a user looking at GPU 0 wants its blocks, kernels and OOMs placed among
// the steps, and the host's millions of heap rows gone. Spelled as recordings spell them
// (reader::parse_device): `cpu`, older files `host`; `N/A`, or empty.
std::vector<std::string> device_id_texts(int32_t device) {
  std::vector<std::string> texts;
  if (device == kHostDevice) {
    texts = {std::string(dump_device_id_text(DumpEvent::kMalloc)), "host"};
  } else {
    texts = {std::to_string(device)};
  }
  texts.push_back(std::string(dump_device_id_text(DumpEvent::kSystem)));
  texts.push_back("");
  return texts;
}

// "<expression> IN (?, ...)", the texts appended to *binds.
std::string in_term(const std::string& expression, const std::vector<std::string>& texts,
                    std::vector<Bind>* binds) {
  std::string in = expression + " IN (";
  for (size_t i = 0; i < texts.size(); ++i) {
    in += i == 0 ? "?" : ", ?";
    binds->push_back(texts[i]);
  }
  return in + ")";
}

const char* kSelectColumns =
    "\"ID\", \"Event\", \"Event Type\", \"Name\", \"Timestamp(ns)\", \"Process Id\", "
    "\"Thread Id\", \"Device Id\", \"Ptr\", \"Attr\", \"Call Stack(Python)\", \"Call Stack(C)\"";

// "%text%" for LIKE ... ESCAPE '\'.
std::string like_pattern(const std::string& text) {
  std::string pattern = "%";
  for (char c : text) {
    if (c == '%' || c == '_' || c == '\\') pattern += '\\';
    pattern += c;
  }
  return pattern + "%";
}

// x / d rounded towards +inf / -inf (d > 0).
int64_t div_up(int64_t x, int64_t d) {
  return x / d + (x % d > 0 ? 1 : 0);
}
int64_t div_down(int64_t x, int64_t d) {
  return x / d - (x % d < 0 ? 1 : 0);
}

EventRow read_row(sqlite3_stmt* s, int64_t factor, int first) {
  EventRow row;
  row.id = sqlite3_column_int64(s, first + 0);
  row.event = column_string(s, first + 1);
  row.event_type = column_string(s, first + 2);
  row.name = column_string(s, first + 3);
  row.timestamp_ns = sqlite3_column_int64(s, first + 4) * factor;
  row.process_id = sqlite3_column_int64(s, first + 5);
  row.thread_id = sqlite3_column_int64(s, first + 6);
  row.device_id = column_string(s, first + 7);
  row.ptr = column_string(s, first + 8);
  const std::string attr = column_string(s, first + 9);
  std::vector<reader::AttrPair> pairs;
  std::string scratch, error;
  if (reader::split_attr(attr, &pairs, &scratch, &error)) {
    for (const reader::AttrPair& pair : pairs) {
      if (pair.key == "size" && !pair.value.empty()) {
        row.has_size = true;
        row.size_bytes = std::strtoull(std::string(pair.value).c_str(), nullptr, 10);
      } else if (pair.key == "owner") {
        row.owner = std::string(pair.value);
      } else if (pair.key == "allocation_id") {
        row.allocation_id = std::string(pair.value);
      }
    }
  }
  row.stack_python = column_string(s, first + 10);
  row.stack_c = column_string(s, first + 11);
  return row;
}

}  // namespace

const char* event_column_name(EventColumn column) {
  switch (column) {
    case EventColumn::kId:
      return "ID";
    case EventColumn::kEvent:
      return "Event";
    case EventColumn::kEventType:
      return "Event Type";
    case EventColumn::kName:
      return "Name";
    case EventColumn::kTimestamp:
      return "Timestamp";
    case EventColumn::kProcessId:
      return "Process Id";
    case EventColumn::kThreadId:
      return "Thread Id";
    case EventColumn::kDeviceId:
      return "Device Id";
    case EventColumn::kPtr:
      return "Ptr";
    case EventColumn::kSize:
      return "Size";
    case EventColumn::kOwner:
      return "owner";
    case EventColumn::kAllocationId:
      return "allocation_id";
    case EventColumn::kStackPython:
      return "Call Stack(Python)";
    case EventColumn::kStackC:
      return "Call Stack(C)";
  }
  return "";
}

struct EventPages::State {
  std::string path, table;
  reader::DbHandle db;
  std::string error;     // opening failed: every page says so
  int64_t factor = 0;    // the timestamps' unit (timestamp_unit.h); 0 until known
  bool compact = false;  // memtap's compact tables are under the view
  reader::CompactFile file;

  // Counted once per filter (in ID order; a sorted query knows its count from the sort).
  std::optional<EventFilter> counted_filter;
  uint64_t count = 0;
  // The text table's IDs, last minus first plus one (-1 until read): how sparse a count is.
  int64_t id_span = -1;
  // ID order: position -> the ID the row at that position follows (keyset paging).
  std::optional<EventQuery> anchored_query;
  std::map<size_t, int64_t> anchors;
  // A compact file's text filter: the string ids holding this text (prepare_text).
  std::optional<std::string> text_ids_for;
  bool name_text_matches = false;  // "N/A" (a row without a name) holds it
  // Other orders: the sorted IDs in temp.memtap_sorted, for this query.
  std::optional<EventQuery> sorted_query;
  uint64_t sorted_rows = 0;

  bool open(const std::string& new_path, const std::string& new_table) {
    if (db.db != nullptr && new_path == path && new_table == table) return error.empty();
    path = new_path;
    table = new_table;
    sqlite3_close(db.db);
    db.db = nullptr;
    error.clear();
    forget();
    if (!reader::open_for_reading(path, &db, &error)) return false;
    sqlite3_create_function(db.db, "memtap_attr", 2, SQLITE_UTF8 | SQLITE_DETERMINISTIC, nullptr,
                            attr_function, nullptr, nullptr);
    sqlite3_create_function(db.db, "memtap_size", 1, SQLITE_UTF8 | SQLITE_DETERMINISTIC, nullptr,
                            size_function, nullptr, nullptr);
    std::vector<std::string> tables;
    if (!reader::for_each_row(
            path, db.db, "SELECT name FROM sqlite_master",
            [&](sqlite3_stmt* s) { tables.push_back(column_string(s, 0)); }, &error)) {
      return false;
    }
    compact = table == "memscope_dump" && reader::has_compact_tables(tables);
    return true;
  }

  void forget() {
    counted_filter.reset();
    anchored_query.reset();
    anchors.clear();
    sorted_query.reset();
    text_ids_for.reset();
    id_span = -1;
    if (compact) file = {};
  }

  // What the time filter needs: the unit, and for a compact file its chunks (reloaded
  // after a refresh: a live file grows).
  bool prepare() {
    if (factor == 0) {
      std::string e;
      reader::for_each_row(
          path, db.db,
          "SELECT \"Timestamp(ns)\" FROM " + quote_identifier(table) +
              " WHERE \"Timestamp(ns)\" > 0 LIMIT 1",
          [&](sqlite3_stmt* s) {
            factor = reader::TimestampUnit::factor_for(sqlite3_column_int64(s, 0));
          },
          &e);
    }
    if (compact && !file.has_rows) {
      std::string e;
      if (!reader::load_compact_file(path, db.db, &file, &e)) compact = false;
    }
    if (!compact && id_span < 0) {
      std::string e;
      reader::for_each_row(
          path, db.db,
          // Two subqueries: SQLite answers a lone max() or min() from the index's ends, but
          // scans the table for an expression of both.
          "SELECT (SELECT max(\"ID\") FROM " + quote_identifier(table) +
              ") - (SELECT min(\"ID\") FROM " + quote_identifier(table) + ") + 1",
          [&](sqlite3_stmt* s) { id_span = sqlite3_column_int64(s, 0); }, &e);
    }
    return true;
  }

  int64_t unit() const { return factor == 0 ? 1 : factor; }

  // What the filters and sorts read: the compact file's integer table, or the text table.
  std::string source() const { return compact ? "memtap_event AS e" : quote_identifier(table); }
  const char* id_column() const { return compact ? "e.ID" : "\"ID\""; }
  std::string order_by(EventColumn column) const {
    return compact ? compact_order_expression(column) : order_expression(column);
  }

  // A compact file's text filter matches strings, not rows: the ids of the memtap_string
  // rows that hold `text` go into temp.memtap_text_ids once per text (a LIKE over the
  // small table), and rows are then matched by id.
  bool prepare_text(const EventFilter& f, std::string* err) {
    if (!compact || f.text.empty() || (text_ids_for && *text_ids_for == f.text)) return true;
    text_ids_for.reset();
    if (!run(
            "CREATE TEMP TABLE IF NOT EXISTS memtap_text_ids (id INTEGER PRIMARY KEY)", {},
            [](sqlite3_stmt*) {}, err) ||
        !run(
            "DELETE FROM temp.memtap_text_ids", {}, [](sqlite3_stmt*) {}, err) ||
        !run(
            "INSERT INTO temp.memtap_text_ids SELECT id FROM memtap_string WHERE text LIKE ? "
            "ESCAPE '\\'",
            {like_pattern(f.text)}, [](sqlite3_stmt*) {}, err)) {
      return false;
    }
    // A row without a name reads "N/A": whether that matches is one comparison.
    name_text_matches = false;
    if (!run(
            "SELECT " + literal(kDumpNameText) + " LIKE ? ESCAPE '\\'", {like_pattern(f.text)},
            [&](sqlite3_stmt* s) { name_text_matches = sqlite3_column_int(s, 0) != 0; }, err)) {
      return false;
    }
    text_ids_for = f.text;
    return true;
  }

  // " WHERE ..." for `filter`, its parameters appended to *binds. `few_rows`: the text
  // table's device and kind filters may take their partial indexes (see text_where).
  std::string where(const EventFilter& f, std::vector<Bind>* binds, bool few_rows = false) const {
    return compact ? compact_where(f, binds) : text_where(f, binds, few_rows);
  }

  // The text table's (or a view without compact tables under it).
  std::string text_where(const EventFilter& f, std::vector<Bind>* binds, bool few_rows) const {
    std::vector<std::string> terms;
    const int64_t u = unit();
    if (f.t0_ns != std::numeric_limits<int64_t>::min()) {
      terms.push_back("\"Timestamp(ns)\" >= ?");
      binds->push_back(div_up(f.t0_ns, u));
    }
    if (f.t1_ns != std::numeric_limits<int64_t>::max()) {
      terms.push_back("\"Timestamp(ns)\" <= ?");
      binds->push_back(div_down(f.t1_ns, u));
    }
    if (f.pid != 0) {
      terms.push_back("\"Process Id\" = ?");
      binds->push_back(int64_t{f.pid});
    }
    // The device and kind filters are columns read row by row, like the process's, unless
    // `few_rows`: "+" keeps SQLite off their indexes, so every plan stays the one it was
    // without them (an ID-order scan, or the Timestamp index for a range). On an index, a
    // page is sorted (USE TEMP B-TREE FOR ORDER BY): a jump to row 1 M of a 2 M-row host
    // cost 0.88 s there, 0.14 s scanning. A GPU's few rows are the other way round:
    // scanning for them cost 0.14 s a page, the index 1 ms (page_by_id decides). memtap's
    // indexes hold only the few rows (memscope_schema.h), and SQLite takes them only with
    // their condition among the terms: added where the filter's rows are all among them.
    if (f.device) {
      const std::vector<std::string> texts = device_id_texts(*f.device);
      // Only the host's texts hold `cpu`, the rows the index leaves out.
      const bool indexed = few_rows && *f.device != kHostDevice;
      terms.push_back(in_term(indexed ? "\"Device Id\"" : "+\"Device Id\"", texts, binds));
      if (indexed) terms.emplace_back(kMemscopeDumpDeviceIndexWhere);
    }
    if (!f.kinds.empty()) {
      const bool indexed =
          few_rows && std::none_of(f.kinds.begin(), f.kinds.end(), [](const std::string& kind) {
            return kind == dump_event_text(DumpEvent::kMalloc) ||
                   kind == dump_event_text(DumpEvent::kFree);
          });
      terms.push_back(in_term(indexed ? "\"Event\"" : "+\"Event\"", f.kinds, binds));
      if (indexed) terms.emplace_back(kMemscopeDumpEventIndexWhere);
    }
    if (f.min_size > 0) {
      terms.push_back(std::string(kSizeSql) + " >= ?");
      binds->push_back(int64_t(std::min<uint64_t>(f.min_size, INT64_MAX)));
    }
    if (f.max_size < uint64_t(INT64_MAX)) {
      terms.push_back(std::string(kSizeSql) + " <= ?");
      binds->push_back(int64_t(f.max_size));
    }
    if (!f.text.empty()) {
      const std::string like = " LIKE ? ESCAPE '\\'";
      // The owner is in Attr: SQLite's LIKE on the whole text first, so that the function
      // only parses the rows that may match.
      terms.push_back("((\"Attr\"" + like + " AND memtap_attr(\"Attr\", 'owner')" + like +
                      ") OR \"Name\"" + like + " OR \"Call Stack(Python)\"" + like +
                      " OR \"Call Stack(C)\"" + like + ")");
      for (int i = 0; i < 5; ++i) binds->push_back(like_pattern(f.text));
    }
    std::string sql;
    for (size_t i = 0; i < terms.size(); ++i) sql += (i == 0 ? " WHERE " : " AND ") + terms[i];
    return sql;
  }

  // memtap_event's columns (alias e), as the view would spell them (compact_order_expression).
  std::string compact_where(const EventFilter& f, std::vector<Bind>* binds) const {
    std::vector<std::string> terms;
    const int64_t u = unit();
    // The view's Timestamp(ns) is timestamp_offset_ns + timestamp_base_ns.
    const int64_t base = file.timestamp_base_ns;
    if (f.t0_ns != std::numeric_limits<int64_t>::min()) {
      terms.push_back("e.timestamp_offset_ns >= ?");
      binds->push_back(saturating_sub(div_up(f.t0_ns, u), base));
    }
    if (f.t1_ns != std::numeric_limits<int64_t>::max()) {
      terms.push_back("e.timestamp_offset_ns <= ?");
      binds->push_back(saturating_sub(div_down(f.t1_ns, u), base));
      // No timestamp index: the chunks bound the IDs to visit.
      if (file.has_rows) {
        terms.push_back("e.ID <= ?");
        binds->push_back(
            reader::last_id_at_or_before(file, saturating_sub(f.t1_ns, file.timestamp_base_ns)));
      }
    }
    if (f.pid != 0) {
      terms.push_back("e.thread IN (SELECT thread FROM memtap_thread WHERE process_id = ?)");
      binds->push_back(int64_t{f.pid});
    }
    if (f.device) {
      // The view's own Device Id: integer tests on event, event_type and detail, no
      // subquery; the rows are visited in ID order as for the other filters (no index).
      terms.push_back(in_term(compact_device_id_sql(), device_id_texts(*f.device), binds));
    }
    if (!f.kinds.empty()) {
      std::string any;
      for (const std::string& kind : f.kinds) {
        any += (any.empty() ? "(" : " OR ") + compact_kind_term(kind);
      }
      terms.push_back(any + ")");
    }
    if (f.min_size > 0) {
      terms.push_back("(" + kBlockSql + " AND e.size_bytes >= ?)");
      binds->push_back(int64_t(std::min<uint64_t>(f.min_size, INT64_MAX)));
    }
    if (f.max_size < uint64_t(INT64_MAX)) {
      terms.push_back("(" + kBlockSql + " AND e.size_bytes <= ?)");
      binds->push_back(int64_t(f.max_size));
    }
    if (!f.text.empty()) {
      // prepare_text filled temp.memtap_text_ids for this text.
      const std::string ids = " IN (SELECT id FROM temp.memtap_text_ids)";
      std::string name = "e.name" + ids;
      if (name_text_matches) name += " OR COALESCE(" + string_of("name") + ", '') = ''";
      terms.push_back("((" + kBlockSql + " AND e.owner" + ids + ") OR e.stack_python" + ids +
                      " OR e.stack_c" + ids + " OR (CASE WHEN " + kStepSql +
                      " THEN CAST(e.detail AS TEXT) LIKE ? ESCAPE '\\' ELSE " + name + " END))");
      binds->push_back(like_pattern(f.text));
    }
    std::string sql;
    for (size_t i = 0; i < terms.size(); ++i) sql += (i == 0 ? " WHERE " : " AND ") + terms[i];
    return sql;
  }

  // Runs `sql` with `binds`, calling row(stmt) per row; false with `error` set on failure.
  template <class Row>
  bool run(const std::string& sql, const std::vector<Bind>& binds, Row row, std::string* err) {
    reader::Statement s;
    int rc = sqlite3_prepare_v2(db.db, sql.c_str(), -1, &s.stmt, nullptr);
    for (size_t i = 0; rc == SQLITE_OK && i < binds.size(); ++i) {
      const Bind& b = binds[i];
      rc = b.is_text ? sqlite3_bind_text(s.stmt, int(i + 1), b.text.c_str(), int(b.text.size()),
                                         SQLITE_TRANSIENT)
                     : sqlite3_bind_int64(s.stmt, int(i + 1), b.number);
    }
    while (rc == SQLITE_OK && (rc = sqlite3_step(s.stmt)) == SQLITE_ROW) {
      row(s.stmt);
      rc = SQLITE_OK;
    }
    if (rc == SQLITE_DONE) return true;
    *err = sqlite_failure(path, db.db, rc);
    return false;
  }

  bool count_rows(const EventFilter& f, std::string* err) {
    if (counted_filter && *counted_filter == f) return true;
    std::vector<Bind> binds;
    // Through the indexes wherever the filter allows: a count has no order to keep.
    const std::string sql = "SELECT count(*) FROM " + source() + where(f, &binds, true);
    if (!run(
            sql, binds, [&](sqlite3_stmt* s) { count = uint64_t(sqlite3_column_int64(s, 0)); },
            err)) {
      return false;
    }
    counted_filter = f;
    return true;
  }

  bool page_by_id(const EventQuery& q, size_t offset, size_t count_wanted, EventPage* out) {
    if (!count_rows(q.filter, &out->error)) return false;
    out->total_rows = count;
    // Past the end (a device with no rows): nothing to read, where a filter read row by row
    // would scan the whole table to find that out.
    if (offset >= count) return true;
    if (!anchored_query || !same_query(*anchored_query, q)) {
      anchored_query = q;
      anchors.clear();
    }
    const bool desc = q.descending;
    anchors.emplace(0, desc ? INT64_MAX : INT64_MIN);
    auto anchor = std::prev(anchors.upper_bound(offset));
    std::vector<Bind> binds;
    // A device whose rows are few (under an eighth of the table: a GPU's, beside the host's
    // heap) is found through its index; a page of many is a scan in ID order.
    const bool sparse = id_span > 0 && count * 8 < uint64_t(id_span);
    const std::string filter = where(q.filter, &binds, sparse);
    const std::string id = id_column();
    // The page's IDs from the filtered source, then (compact) their rows from the view.
    std::string rest = " FROM " + source() + filter;
    rest += (filter.empty() ? " WHERE " : " AND ") + id + (desc ? " < ?" : " > ?");
    binds.push_back(anchor->second);
    rest += " ORDER BY " + id + (desc ? " DESC" : "");
    rest += " LIMIT " + std::to_string(count_wanted) + " OFFSET " +
            std::to_string(offset - anchor->first);
    const std::string sql =
        compact ? "SELECT " + std::string(kSelectColumns) + " FROM (SELECT " + id + " AS page_id" +
                      rest + ") AS p CROSS JOIN " + quote_identifier(table) +
                      " ON \"ID\" = p.page_id ORDER BY p.page_id" + (desc ? " DESC" : "")
                : "SELECT " + std::string(kSelectColumns) + rest;
    const int64_t u = unit();
    if (!run(
            sql, binds, [&](sqlite3_stmt* s) { out->rows.push_back(read_row(s, u, 0)); },
            &out->error)) {
      return false;
    }
    if (anchors.size() > kMaxAnchors) {
      anchors.clear();
      anchors.emplace(0, desc ? INT64_MAX : INT64_MIN);
    }
    if (!out->rows.empty()) {
      anchors[offset + out->rows.size()] = out->rows.back().id;
      anchors[offset] = out->rows.front().id + (desc ? 1 : -1);
    }
    return true;
  }

  bool page_sorted(const EventQuery& q, size_t offset, size_t count_wanted, EventPage* out) {
    if (!sorted_query || !same_query(*sorted_query, q)) {
      sorted_query.reset();
      if (!run(
              "CREATE TEMP TABLE IF NOT EXISTS memtap_sorted (pos INTEGER PRIMARY KEY, "
              "event_id INTEGER)",
              {}, [](sqlite3_stmt*) {}, &out->error) ||
          !run(
              "DELETE FROM temp.memtap_sorted", {}, [](sqlite3_stmt*) {}, &out->error)) {
        return false;
      }
      std::vector<Bind> binds;
      const char* dir = q.descending ? " DESC" : "";
      const std::string sql = "INSERT INTO temp.memtap_sorted (event_id) SELECT " +
                              std::string(id_column()) + " FROM " + source() +
                              where(q.filter, &binds) + " ORDER BY " + order_by(q.column) + dir +
                              ", " + id_column() + dir;
      if (!run(
              sql, binds, [](sqlite3_stmt*) {}, &out->error) ||
          !run(
              "SELECT count(*) FROM temp.memtap_sorted", {},
              [&](sqlite3_stmt* s) { sorted_rows = uint64_t(sqlite3_column_int64(s, 0)); },
              &out->error)) {
        return false;
      }
      sorted_query = q;
    }
    out->total_rows = sorted_rows;
    // The sorted table drives the join: one row lookup by ID per row of the page.
    const std::string sql = "SELECT " + std::string(kSelectColumns) +
                            " FROM temp.memtap_sorted AS s CROSS JOIN " + quote_identifier(table) +
                            " ON \"ID\" = s.event_id WHERE s.pos > ? AND s.pos <= ? ORDER BY s.pos";
    const int64_t u = unit();
    return run(
        sql, {int64_t(offset), int64_t(offset + count_wanted)},
        [&](sqlite3_stmt* s) { out->rows.push_back(read_row(s, u, 0)); }, &out->error);
  }

  static bool same_query(const EventQuery& a, const EventQuery& b) {
    return a.filter == b.filter && a.column == b.column && a.descending == b.descending;
  }
};

EventPages::EventPages() : state_(std::make_unique<State>()) {}
EventPages::~EventPages() = default;

void EventPages::refresh() {
  state_->forget();
  state_->file = {};
}

EventPage EventPages::page(const EventQuery& query, size_t offset, size_t count) {
  EventPage out;
  out.offset = offset;
  State& s = *state_;
  if (!s.open(query.path, query.table)) {
    out.error = s.error;
    return out;
  }
  s.prepare();
  if (!s.prepare_text(query.filter, &out.error)) return out;
  const bool ok = query.column == EventColumn::kId ? s.page_by_id(query, offset, count, &out)
                                                   : s.page_sorted(query, offset, count, &out);
  if (!ok) out.rows.clear();
  return out;
}

}  // namespace memtap::viewdata
