// See recording_checks.h.
#include "tests/e2e/recording_checks.h"

#include <gtest/gtest.h>

#include <map>
#include <set>
#include <utility>

namespace memtap::e2e {

namespace {

constexpr size_t kShown = 8;

bool is_ptr_text(const std::string& s) {
  if (s.size() != 18 || s.compare(0, 2, "0x") != 0) return false;
  for (size_t i = 2; i < s.size(); ++i) {
    char c = s[i];
    if (!((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f'))) return false;
  }
  return true;
}

void check_columns(const RecordingData& rec) {
  EXPECT_EQ(rec.dump_columns, kMemscopeDumpColumns) << "memscope_dump columns";
  if (rec.dump_columns != kMemscopeDumpColumns) return;
  Violations v("every memscope_dump value has its column's storage class");
  for (const DumpRecord& r : rec.rows) {
    for (size_t c = 0; c < r.raw.size(); ++c) {
      const bool integer = c == 0 || c == 4 || c == 5 || c == 6;  // ID, Timestamp, pids
      const int expected = integer ? SQLITE_INTEGER : SQLITE_TEXT;
      if (r.raw[c].type != expected)
        v.add(r.describe() + ": column '" + kMemscopeDumpColumns[c] + "' has storage class " +
              std::to_string(r.raw[c].type));
    }
  }
  MEMTAP_REPORT(v);
}

void check_encodings(const RecordingData& rec) {
  Violations v("MALLOC/FREE, SYSTEM and SNAPSHOT rows use msMemScope's encodings");
  static const std::set<std::string> kKnownKeys = {"allocation_id", "addr", "size", "kind",
                                                   "inherited_from"};
  for (const DumpRecord& r : rec.rows) {
    if (r.is_alloc_event()) {
      if (r.event_type != "HOST") v.add(r.describe() + ": Event Type is not HOST");
      if (r.name != "N/A") v.add(r.describe() + ": Name is not N/A");
      if (r.device != "cpu") v.add(r.describe() + ": Device Id is not cpu");
      if (!is_ptr_text(r.ptr_text)) v.add(r.describe() + ": Ptr is not 0x%016llx");
      if (!r.attr_ok) {
        v.add(r.describe() + ": Attr is not a JSON object of strings: " + r.attr_error);
        continue;
      }
      for (const char* key : {"allocation_id", "addr", "size"})
        if (!r.attr.count(key)) v.add(r.describe() + ": Attr has no '" + key + "'");
      for (const auto& [key, value] : r.attr) {
        uint64_t n;
        if (!kKnownKeys.count(key)) v.add(r.describe() + ": Attr has unexpected key '" + key + "'");
        if ((key == "allocation_id" || key == "size" || key == "inherited_from") &&
            !parse_decimal(value, &n))
          v.add(r.describe() + ": Attr '" + key + "' is not a decimal number");
        if (key == "kind" && value != "mmap") v.add(r.describe() + ": Attr kind is not mmap");
      }
      if (r.attr.count("addr") && r.attr.at("addr") != r.ptr_text)
        v.add(r.describe() + ": Attr addr differs from Ptr");
    } else if (r.event == "SYSTEM") {
      if (r.event_type != "START_TRACE" && r.event_type != "STOP_TRACE")
        v.add(r.describe() + ": SYSTEM row of unexpected Event Type");
      if (r.name != "N/A" || r.device != "N/A" || r.ptr_text != "N/A")
        v.add(r.describe() + ": SYSTEM row with a Name, Device Id or Ptr other than N/A");
    } else if (r.event == "SNAPSHOT") {
      // The agent's memory samples: what the process holds (RSS) and what it may hold.
      uint64_t n;
      if (r.event_type != "SNAPSHOT" || r.name != "N/A" || r.device != "cpu" || r.ptr_text != "N/A")
        v.add(r.describe() + ": SNAPSHOT row not SNAPSHOT/N/A/cpu/N/A");
      if (r.tid != r.pid) v.add(r.describe() + ": SNAPSHOT row not on the process's own id");
      if (!r.attr_ok || !r.attr.count("app_reserved") ||
          !parse_decimal(r.attr.at("app_reserved"), &n) || n == 0)
        v.add(r.describe() + ": SNAPSHOT Attr has no app_reserved byte count");
      for (const auto& [key, value] : r.attr)
        if ((key != "app_reserved" && key != "total") || !parse_decimal(value, &n))
          v.add(r.describe() + ": SNAPSHOT Attr key '" + key + "' unexpected or not decimal");
    } else {
      v.add(r.describe() + ": unexpected Event");
    }
  }
  MEMTAP_REPORT(v);
}

void check_order_and_window(const RecordingData& rec, const WallWindow& window) {
  Violations order("rows are in timestamp order (ID order)");
  Violations inside("every timestamp lies in the test's wall-clock window [" +
                    std::to_string(window.begin_ns) + ", " + std::to_string(window.end_ns) + "]");
  for (size_t i = 0; i < rec.rows.size(); ++i) {
    const DumpRecord& r = rec.rows[i];
    if (i > 0 && r.id <= rec.rows[i - 1].id) order.add(r.describe() + ": ID not increasing");
    if (i > 0 && r.ts_ns < rec.rows[i - 1].ts_ns)
      order.add(r.describe() + ": earlier than the row before it, " + rec.rows[i - 1].describe());
    if (r.ts_ns < window.begin_ns || r.ts_ns > window.end_ns) inside.add(r.describe());
  }
  MEMTAP_REPORT(order);
  MEMTAP_REPORT(inside);
}

void check_pairing(const RecordingData& rec) {
  Violations v("every FREE is paired with an earlier MALLOC of the same block");
  std::map<uint64_t, const DumpRecord*> malloc_by_id;
  for (const DumpRecord& r : rec.rows) {
    if (r.event != "MALLOC") continue;
    if (r.allocation_id == 0) v.add(r.describe() + ": MALLOC without an allocation_id");
    auto [it, inserted] = malloc_by_id.emplace(r.allocation_id, &r);
    if (!inserted)
      v.add(r.describe() + ": allocation_id already used by " + it->second->describe());
  }
  std::set<std::pair<int64_t, uint64_t>> freed;  // (pid, allocation_id)
  for (const DumpRecord& r : rec.rows) {
    if (r.event != "FREE") continue;
    auto it = malloc_by_id.find(r.allocation_id);
    if (r.allocation_id == 0 || it == malloc_by_id.end()) {
      v.add(r.describe() + ": no MALLOC with this allocation_id");
      continue;
    }
    const DumpRecord& m = *it->second;
    const int64_t owner = r.inherited_from != 0 ? int64_t(r.inherited_from) : r.pid;
    if (m.pid != owner)
      v.add(r.describe() + ": paired MALLOC is in another process: " + m.describe());
    if (r.inherited_from != 0) {
      auto s = rec.sessions.find(r.pid);
      if (s == rec.sessions.end() || s->second.forked_from_pid != int64_t(r.inherited_from))
        v.add(r.describe() + ": inherited_from names a process this one was not forked from");
    }
    if (m.ptr_text != r.ptr_text)
      v.add(r.describe() + ": Ptr differs from its MALLOC " + m.describe());
    if (m.size != r.size) v.add(r.describe() + ": size differs from its MALLOC " + m.describe());
    if (m.is_mmap != r.is_mmap)
      v.add(r.describe() + ": kind differs from its MALLOC " + m.describe());
    if (m.id >= r.id || m.ts_ns > r.ts_ns)
      v.add(r.describe() + ": not after its MALLOC " + m.describe());
    if (!freed.emplace(r.pid, r.allocation_id).second)
      v.add(r.describe() + ": second FREE of this allocation_id in this process");
  }
  MEMTAP_REPORT(v);
}

void check_trace_markers(const RecordingData& rec) {
  Violations v("each process has one START_TRACE (its first row) and one STOP_TRACE (its last)");
  std::map<int64_t, std::vector<const DumpRecord*>> by_pid;
  for (const DumpRecord& r : rec.rows) by_pid[r.pid].push_back(&r);
  for (const auto& [pid, rows] : by_pid) {
    int starts = 0, stops = 0;
    for (const DumpRecord* r : rows) {
      starts += r->event == "SYSTEM" && r->event_type == "START_TRACE";
      stops += r->event == "SYSTEM" && r->event_type == "STOP_TRACE";
    }
    const std::string who = "pid " + std::to_string(pid);
    if (starts != 1 || stops != 1)
      v.add(who + ": " + std::to_string(starts) + " START_TRACE, " + std::to_string(stops) +
            " STOP_TRACE");
    if (rows.front()->event_type != "START_TRACE")
      v.add(who + ": first row is not START_TRACE: " + rows.front()->describe());
    if (rows.back()->event_type != "STOP_TRACE")
      v.add(who + ": last row is not STOP_TRACE: " + rows.back()->describe());
  }
  MEMTAP_REPORT(v);
}

void check_sessions(const RecordingData& rec) {
  std::set<int64_t> pids_with_rows;
  for (const DumpRecord& r : rec.rows) pids_with_rows.insert(r.pid);
  std::set<int64_t> pids_with_session;
  for (const auto& [pid, s] : rec.sessions) pids_with_session.insert(pid);
  EXPECT_EQ(size_t(rec.session_rows), rec.sessions.size()) << "a pid has two memtap_session rows";
  EXPECT_EQ(pids_with_session, pids_with_rows)
      << "memtap_session should hold exactly the processes that have rows";
  Violations v(
      "every process's events all arrived: events_dropped 0, events_lost 0, bye_received 1, and "
      "what its agent says it sent (events_sent) is what came");
  for (const auto& [pid, s] : rec.sessions) {
    const std::string who = "pid " + std::to_string(pid) + ": ";
    if (s.events_dropped != 0) v.add(who + "events_dropped " + std::to_string(s.events_dropped));
    if (s.events_lost != 0) v.add(who + "events_lost " + std::to_string(s.events_lost));
    if (s.bye_received != 1) v.add(who + "bye_received " + std::to_string(s.bye_received));
    if (s.bye_received == 1 && s.events_sent_before + s.events_received != s.events_sent) {
      v.add(who + std::to_string(s.events_sent) + " sent, " + std::to_string(s.events_sent_before) +
            " before this recording, " + std::to_string(s.events_received) + " received");
    }
  }
  MEMTAP_REPORT(v);
  auto complete = rec.meta.find("complete");
  EXPECT_TRUE(complete != rec.meta.end() && complete->second == "1")
      << "memtap_meta should say complete = 1";
}

}  // namespace

void Violations::add(const std::string& what) {
  if (first_.size() < kShown) first_.push_back(what);
  ++count_;
}

void Violations::report(const char* file, int line) const {
  if (count_ == 0) return;
  std::string text = "rule: " + rule_ + "\n" + std::to_string(count_) + " violation(s):";
  for (const std::string& s : first_) text += "\n  " + s;
  if (count_ > first_.size()) text += "\n  ...";
  ADD_FAILURE_AT(file, line) << text;
}

void expect_well_formed(const RecordingData& rec, const WallWindow& window) {
  check_columns(rec);
  check_encodings(rec);
  check_order_and_window(rec, window);
  check_pairing(rec);
  check_trace_markers(rec);
  check_sessions(rec);
}

}  // namespace memtap::e2e
