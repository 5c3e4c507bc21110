// See cuda_expectations.h.
#include "tests/e2e/cuda_expectations.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <sstream>

#include "tests/e2e/db_query.h"

namespace memtap::e2e {

std::vector<Expected> parse_expectations(const std::string& out) {
  std::vector<Expected> result;
  for (const std::string& line : split_lines(out)) {
    std::istringstream in(line);
    std::string word, event;
    if (!(in >> word) || word != "expect" || !(in >> event)) continue;
    Expected e{event, {}};
    while (in >> word) {
      const size_t eq = word.find('=');
      if (eq != std::string::npos) e.fields[word.substr(0, eq)] = word.substr(eq + 1);
    }
    result.push_back(e);
  }
  return result;
}

std::string canonical_hex(const std::string& text) {
  if (text.empty()) return text;
  return std::to_string(std::stoull(text, nullptr, text.rfind("0x", 0) == 0 ? 16 : 10));
}

std::string attr_value(const std::string& attr, const std::string& key) {
  const std::string quoted = "\"" + key + "\":\"";
  const size_t at = attr.find(quoted);
  if (at == std::string::npos) return "";
  const size_t start = at + quoted.size();
  return attr.substr(start, attr.find('"', start) - start);
}

void read_recording_rows(const std::string& db, Recording* run) {
  std::string error;
  auto q = DbQuery::open(db, &error);
  if (!q) {
    ADD_FAILURE() << error;
    return;
  }
  DbRows rows;
  EXPECT_TRUE(
      q->query("SELECT Event, \"Event Type\", Name, \"Device Id\", Ptr, Attr, "
               "\"Process Id\", \"Call Stack(C)\" FROM memscope_dump "
               "ORDER BY \"Timestamp(ns)\", ID",
               {}, &rows, &error))
      << error;
  for (const auto& r : rows.rows) {
    run->rows.push_back({r[0].text, r[1].text, r[2].text, r[3].text, r[4].text, r[5].text,
                         r[6].integer, r[7].text});
  }
}

std::multiset<std::string> expected_as(const Recording& run, const std::string& event) {
  std::multiset<std::string> out;
  for (const Expected& e : run.expected) {
    if (e.event != event) continue;
    const Fields& f = e.fields;
    auto get = [&](const char* key) {
      auto it = f.find(key);
      return it == f.end() ? std::string() : it->second;
    };
    if (event == "deviceMalloc" || event == "pinnedMalloc") {
      out.insert(get("pid") + " " + get("api") + " dev" +
                 (event == "pinnedMalloc" ? std::string("cpu") : get("device")) + " " +
                 canonical_hex(get("addr")) + " " + get("size_bytes"));
    } else if (event == "deviceFree" || event == "pinnedFree") {
      out.insert(get("pid") + " dev" +
                 (event == "pinnedFree" ? std::string("cpu") : get("device")) + " " +
                 canonical_hex(get("addr")));
    } else if (event == "kernelLaunch") {
      out.insert(get("pid") + " " + get("name") + " dev" + get("device") + " " +
                 canonical_hex(get("stream")));
    } else if (event == "deviceOom") {
      out.insert(get("pid") + " " + get("api") + " dev" + get("device") + " " + get("size_bytes"));
    }
  }
  return out;
}

std::multiset<std::string> recorded_as(const Recording& run, const std::string& event) {
  std::multiset<std::string> out;
  for (const Row& r : run.rows) {
    const std::string pid = std::to_string(r.pid);
    if ((event == "deviceMalloc" && r.event == "MALLOC" && r.event_type == "HAL") ||
        (event == "pinnedMalloc" && r.event == "MALLOC" && r.event_type == "HOST_PINNED")) {
      out.insert(pid + " " + r.name + " dev" + r.device + " " + canonical_hex(r.ptr) + " " +
                 attr_value(r.attr, "size"));
    } else if ((event == "deviceFree" && r.event == "FREE" && r.event_type == "HAL") ||
               (event == "pinnedFree" && r.event == "FREE" && r.event_type == "HOST_PINNED")) {
      out.insert(pid + " dev" + r.device + " " + canonical_hex(r.ptr));
    } else if (event == "kernelLaunch" && r.event == "KERNEL_LAUNCH") {
      out.insert(pid + " " + r.name + " dev" + r.device + " " +
                 canonical_hex(attr_value(r.attr, "stream")));
    } else if (event == "deviceOom" && r.event == "OOM_DETAIL" && r.event_type == "OOM_TRIGGER") {
      out.insert(pid + " " + r.name + " dev" + r.device + " " + attr_value(r.attr, "size"));
    }
  }
  return out;
}

void expect_recorded(const Recording& run, const std::vector<std::string>& events) {
  for (const std::string& event : events) {
    const auto want = expected_as(run, event);
    EXPECT_FALSE(want.empty()) << "the program printed no " << event;
    EXPECT_EQ(recorded_as(run, event), want) << event << " rows";
  }
}

std::multiset<std::string> expected_pool(const Recording& run, const std::string& event) {
  std::multiset<std::string> out;
  for (const Expected& e : run.expected) {
    if (e.event != event) continue;
    auto get = [&](const char* key) {
      auto it = e.fields.find(key);
      return it == e.fields.end() ? std::string() : it->second;
    };
    const std::string head = get("pid") + " dev" + get("device") + " ";
    if (event == "poolMalloc") {
      out.insert(head + canonical_hex(get("addr")) + " " + get("size_bytes") + " " +
                 canonical_hex(get("stream")));
    } else if (event == "poolFree") {
      out.insert(head + canonical_hex(get("addr")) + " " + get("size_bytes") + " pending" +
                 get("pending") + " " + canonical_hex(get("stream")));
    } else if (event == "poolFreeCompleted") {
      out.insert(head + canonical_hex(get("addr")) + " " + get("size_bytes"));
    } else if (event == "poolState") {
      out.insert(head + get("allocated_bytes") + " " + get("reserved_bytes"));
    }
  }
  return out;
}

std::multiset<std::string> recorded_pool(const Recording& run, const std::string& event) {
  std::multiset<std::string> out;
  for (const Row& r : run.rows) {
    const std::string head = std::to_string(r.pid) + " dev" + r.device + " ";
    const std::string& a = r.attr;
    if (r.event_type != "PTA") continue;
    if (event == "poolMalloc" && r.event == "MALLOC") {
      out.insert(head + canonical_hex(r.ptr) + " " + attr_value(a, "size") + " " +
                 canonical_hex(attr_value(a, "stream")));
    } else if (event == "poolFree" && r.event == "FREE") {
      out.insert(head + canonical_hex(r.ptr) + " " + attr_value(a, "size") + " pending" +
                 (attr_value(a, "pending") == "1" ? "1" : "0") + " " +
                 canonical_hex(attr_value(a, "stream")));
    } else if (event == "poolFreeCompleted" && r.event == "FREE_COMPLETED") {
      out.insert(head + canonical_hex(r.ptr) + " " + attr_value(a, "size"));
    } else if (event == "poolState" && r.event == "SNAPSHOT") {
      out.insert(head + attr_value(a, "allocated") + " " + attr_value(a, "reserved"));
    }
  }
  return out;
}

PoolFigures simulate_pool(const Recording& run, const std::string& device) {
  PoolFigures f;
  int64_t allocated = 0, pending = 0;
  std::map<std::string, int64_t> waiting;
  for (const Expected& e : run.expected) {
    auto it = e.fields.find("device");
    if (it == e.fields.end() || it->second != device) continue;
    auto number = [&](const char* key) { return int64_t(std::stoll(e.fields.at(key))); };
    if (e.event == "poolMalloc") {
      allocated += number("size_bytes");
    } else if (e.event == "poolFree") {
      allocated -= number("size_bytes");
      if (e.fields.at("pending") == "1") {
        pending += number("size_bytes");
        waiting[e.fields.at("addr")] = number("size_bytes");
        ++f.pending_frees;
      }
    } else if (e.event == "poolFreeCompleted") {
      pending -= waiting[e.fields.at("addr")];
      waiting.erase(e.fields.at("addr"));
    } else if (e.event == "poolState") {
      f.reserved_peak = std::max(f.reserved_peak, number("reserved_bytes"));
    }
    f.allocated_peak = std::max(f.allocated_peak, allocated);
    f.active_peak = std::max(f.active_peak, allocated + pending);
  }
  return f;
}

void expect_pool_rows(const Recording& run) {
  for (const char* event : {"poolMalloc", "poolFree", "poolFreeCompleted", "poolState"}) {
    const auto want = expected_pool(run, event);
    EXPECT_FALSE(want.empty()) << "the program printed no " << event;
    EXPECT_EQ(recorded_pool(run, event), want) << event << " rows";
  }
}

ReportedPool reported_pool(const TempDir& dir, const std::string& db) {
  ReportedPool out;
  ProcessResult report =
      run_process(spec_in(dir, {kMemtapBin, "report", "--json", db}), kProcessTimeout);
  EXPECT_TRUE(report.exited && report.exit_code == 0) << describe(report) << report.err;
  std::string error;
  auto q = DbQuery::open(":memory:", &error);
  if (!q) {
    ADD_FAILURE() << error;
    return out;
  }
  DbRows rows;
  EXPECT_TRUE(
      q->query("SELECT json_extract(d.value, '$.pool.source'), "
               "json_extract(d.value, '$.pool.allocated.peak_bytes'), "
               "json_extract(d.value, '$.pool.reserved.peak_bytes'), "
               "json_extract(d.value, '$.pool.active.peak_bytes'), "
               "json_extract(d.value, '$.pool.pending_frees'), "
               "json_extract(d.value, '$.pool.allocated.final_bytes'), "
               "json_extract(d.value, '$.pool.active.final_bytes') "
               "FROM json_each(json_extract(?, '$.devices')) d "
               "WHERE json_extract(d.value, '$.device') = 'device 0'",
               {report.out}, &rows, &error))
      << error;
  if (rows.rows.size() != 1) {
    ADD_FAILURE() << "no one device 0 in the report:\n" << report.out;
    return out;
  }
  const auto& r = rows.rows[0];
  out.source = r[0].text;
  out.allocated_peak = r[1].integer;
  out.reserved_peak = r[2].integer;
  out.active_peak = r[3].integer;
  out.pending_frees = r[4].integer;
  out.allocated_final = r[5].integer;
  out.active_final = r[6].integer;
  return out;
}

}  // namespace memtap::e2e
