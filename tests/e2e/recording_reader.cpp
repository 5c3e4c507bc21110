// See recording_reader.h.
#include "tests/e2e/recording_reader.h"

#include <cstdlib>

namespace memtap::e2e {

const std::vector<std::string> kMemscopeDumpColumns = {
    "ID",        "Event",     "Event Type", "Name", "Timestamp(ns)",      "Process Id",
    "Thread Id", "Device Id", "Ptr",        "Attr", "Call Stack(Python)", "Call Stack(C)"};

namespace {

int64_t integer_or(const std::map<std::string, DbValue>& columns, const char* name,
                   int64_t fallback) {
  auto it = columns.find(name);
  return it != columns.end() && it->second.type == SQLITE_INTEGER ? it->second.integer : fallback;
}

std::string text_or_empty(const std::map<std::string, DbValue>& columns, const char* name) {
  auto it = columns.find(name);
  return it == columns.end() ? "" : it->second.text;
}

bool parse_hex_ptr(const std::string& text, uint64_t* value) {
  if (text.size() < 3 || text.compare(0, 2, "0x") != 0) return false;
  char* end = nullptr;
  *value = strtoull(text.c_str() + 2, &end, 16);
  return *end == 0;
}

}  // namespace

bool parse_decimal(const std::string& text, uint64_t* value) {
  if (text.empty() || text.size() > 20) return false;
  uint64_t v = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return false;
    v = v * 10 + uint64_t(c - '0');
  }
  *value = v;
  return true;
}

bool parse_string_object(const std::string& json, std::map<std::string, std::string>* out,
                         std::string* error) {
  out->clear();
  size_t i = 0;
  auto fail = [&](const std::string& what) {
    *error = "at offset " + std::to_string(i) + ": expected " + what;
    return false;
  };
  auto skip_space = [&] {
    while (i < json.size() && (json[i] == ' ' || json[i] == '\n' || json[i] == '\t')) ++i;
  };
  auto read_string = [&](std::string* s) {
    if (i >= json.size() || json[i] != '"') return false;
    ++i;
    s->clear();
    while (i < json.size() && json[i] != '"') {
      if (json[i] == '\\') {
        if (++i >= json.size()) return false;
        switch (json[i]) {
          case 'n':
            *s += '\n';
            break;
          case 't':
            *s += '\t';
            break;
          case '"':
          case '\\':
          case '/':
            *s += json[i];
            break;
          default:
            return false;  // \u and the rest: never written by memtap
        }
      } else {
        *s += json[i];
      }
      ++i;
    }
    if (i >= json.size()) return false;
    ++i;  // closing quote
    return true;
  };
  skip_space();
  if (i >= json.size() || json[i] != '{') return fail("'{'");
  ++i;
  skip_space();
  if (i < json.size() && json[i] == '}') {
    ++i;
  } else {
    for (;;) {
      std::string key, value;
      skip_space();
      if (!read_string(&key)) return fail("a string key");
      skip_space();
      if (i >= json.size() || json[i] != ':') return fail("':'");
      ++i;
      skip_space();
      if (!read_string(&value)) return fail("a string value for key '" + key + "'");
      if (!out->emplace(key, value).second) return fail("no repeated key '" + key + "'");
      skip_space();
      if (i < json.size() && json[i] == ',') {
        ++i;
        continue;
      }
      if (i < json.size() && json[i] == '}') {
        ++i;
        break;
      }
      return fail("',' or '}'");
    }
  }
  skip_space();
  if (i != json.size()) return fail("the end of the text");
  return true;
}

std::string DumpRecord::describe() const {
  return "row ID " + std::to_string(id) + ": " + event + " " + event_type + " ts " +
         std::to_string(ts_ns) + " pid " + std::to_string(pid) + " tid " + std::to_string(tid) +
         " device " + device + " ptr " + ptr_text + " attr " + attr_text;
}

std::vector<const DumpRecord*> RecordingData::rows_of(int64_t pid) const {
  std::vector<const DumpRecord*> out;
  for (const DumpRecord& r : rows)
    if (r.pid == pid) out.push_back(&r);
  return out;
}

bool load_recording(const std::string& path, RecordingData* out, std::string* error) {
  *out = RecordingData{};
  std::unique_ptr<DbQuery> db = DbQuery::open(path, error);
  if (!db) return false;

  DbRows dump;
  if (!db->query("SELECT * FROM memscope_dump ORDER BY ID", {}, &dump, error)) return false;
  out->dump_columns = dump.columns;
  for (const std::vector<DbValue>& raw : dump.rows) {
    DumpRecord r;
    r.raw = raw;
    auto text = [&](const char* name) {
      int c = dump.column(name);
      return c < 0 ? std::string() : raw[size_t(c)].text;
    };
    auto integer = [&](const char* name) {
      int c = dump.column(name);
      return c < 0 ? int64_t(-1) : raw[size_t(c)].integer;
    };
    r.id = integer("ID");
    r.event = text("Event");
    r.event_type = text("Event Type");
    r.name = text("Name");
    r.ts_ns = integer("Timestamp(ns)");
    r.pid = integer("Process Id");
    r.tid = integer("Thread Id");
    r.device = text("Device Id");
    r.ptr_text = text("Ptr");
    r.attr_text = text("Attr");
    parse_hex_ptr(r.ptr_text, &r.ptr);
    r.attr_ok = parse_string_object(r.attr_text, &r.attr, &r.attr_error);
    auto attr_number = [&](const char* key, uint64_t* v) {
      auto it = r.attr.find(key);
      if (it != r.attr.end()) parse_decimal(it->second, v);
    };
    attr_number("size", &r.size);
    attr_number("allocation_id", &r.allocation_id);
    attr_number("inherited_from", &r.inherited_from);
    auto kind = r.attr.find("kind");
    r.is_mmap = kind != r.attr.end() && kind->second == "mmap";
    out->rows.push_back(std::move(r));
  }

  DbRows sessions;
  if (!db->query("SELECT * FROM memtap_session", {}, &sessions, error)) return false;
  for (const std::vector<DbValue>& raw : sessions.rows) {
    SessionRecord s;
    for (size_t c = 0; c < sessions.columns.size(); ++c) s.columns[sessions.columns[c]] = raw[c];
    s.pid = integer_or(s.columns, "pid", -1);
    s.ppid = integer_or(s.columns, "ppid", -1);
    s.forked_from_pid = integer_or(s.columns, "forked_from_pid", -1);
    s.hostname = text_or_empty(s.columns, "hostname");
    s.command_line = text_or_empty(s.columns, "command_line");
    s.events_received = integer_or(s.columns, "events_received", -1);
    s.events_dropped = integer_or(s.columns, "events_dropped", -1);
    s.events_lost = integer_or(s.columns, "events_lost", -1);
    s.events_sent = integer_or(s.columns, "events_sent", -1);
    s.events_sent_before = integer_or(s.columns, "events_sent_before", -1);
    s.bye_received = integer_or(s.columns, "bye_received", -1);
    ++out->session_rows;
    out->sessions[s.pid] = std::move(s);
  }

  DbRows meta;
  if (!db->query("SELECT key, value FROM memtap_meta", {}, &meta, error)) return false;
  for (const std::vector<DbValue>& raw : meta.rows) out->meta[raw[0].text] = raw[1].text;
  return true;
}

}  // namespace memtap::e2e
