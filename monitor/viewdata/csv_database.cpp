// See csv_database.h.
#include "monitor/viewdata/csv_database.h"

#include <sqlite3.h>
#include <unistd.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>

#include "monitor/store/memscope_indexes.h"
#include "monitor/store/memscope_schema.h"
#include "monitor/store/reader/sqlite_access.h"
#include "monitor/viewdata/labels.h"
#include "monitor/viewdata/temp_dir.h"

namespace memtap::viewdata {

namespace {

const char* event_text(MemEventKind kind) {
  switch (kind) {
    case MemEventKind::kMalloc:
      return "MALLOC";
    case MemEventKind::kFree:
      return "FREE";
    case MemEventKind::kFreeCompleted:
      return "FREE_COMPLETED";
    case MemEventKind::kAccess:
      return "ACCESS";
    case MemEventKind::kOpStart:
    case MemEventKind::kOpEnd:
      return "OP_LAUNCH";
    case MemEventKind::kKernelLaunch:
      return "KERNEL_LAUNCH";
    case MemEventKind::kMark:
    case MemEventKind::kRangeStart:
    case MemEventKind::kRangeEnd:
      return "MSTX";
    case MemEventKind::kStep:
    case MemEventKind::kTraceStart:
    case MemEventKind::kTraceStop:
      return "SYSTEM";
    case MemEventKind::kSnapshot:
      return "SNAPSHOT";
    case MemEventKind::kOom:
    case MemEventKind::kOomTopAlloc:
      return "OOM_DETAIL";
    case MemEventKind::kOther:
      return "N/A";
  }
  return "N/A";
}

// msMemScope's spelling: the layers' names, and "N/A" where it has none.
const char* layer_text(Layer layer) {
  return layer == Layer::kOther ? "N/A" : layer_label(layer);
}

const char* event_type_text(const MemEvent& e) {
  switch (e.kind) {
    case MemEventKind::kMalloc:
    case MemEventKind::kFree:
    case MemEventKind::kFreeCompleted:
    case MemEventKind::kAccess:
      return layer_text(e.layer);
    case MemEventKind::kOpStart:
      return "ATEN_START";
    case MemEventKind::kOpEnd:
      return "ATEN_END";
    case MemEventKind::kKernelLaunch:
      return "KERNEL_LAUNCH";
    case MemEventKind::kMark:
      return "Mark";
    case MemEventKind::kRangeStart:
      return "Range_start";
    case MemEventKind::kRangeEnd:
      return "Range_end";
    case MemEventKind::kStep:
      return "STEP";
    case MemEventKind::kTraceStart:
      return "START_TRACE";
    case MemEventKind::kTraceStop:
      return "STOP_TRACE";
    case MemEventKind::kSnapshot:
      return "SNAPSHOT";
    case MemEventKind::kOom:
      return "OOM_TRIGGER";
    case MemEventKind::kOomTopAlloc:
      return "OOM_TOP_ALLOC";
    case MemEventKind::kOther:
      return "N/A";
  }
  return "N/A";
}

std::string device_id_text(int32_t device) {
  if (device == kHostDevice) return "cpu";
  if (device == kNoDevice) return "N/A";
  return std::to_string(device);
}

// JSON string content: quotes, backslashes and control characters escaped.
std::string json_escaped(const std::string& s) {
  std::string out;
  for (char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if ((unsigned char)c < 0x20) {
      char buf[8];
      snprintf(buf, sizeof buf, "\\u%04x", (unsigned char)c);
      out += buf;
    } else {
      out += c;
    }
  }
  return out;
}

std::string attr_text(const MemEvent& e, const StringTable& strings) {
  std::string attr;
  auto add = [&](const char* key, const std::string& value) {
    attr += attr.empty() ? "{" : ",";
    attr += "\"" + std::string(key) + "\":\"" + json_escaped(value) + "\"";
  };
  if (e.kind == MemEventKind::kMalloc || e.kind == MemEventKind::kFree ||
      e.kind == MemEventKind::kAccess || e.kind == MemEventKind::kOomTopAlloc) {
    if (e.allocation_id != 0) add("allocation_id", std::to_string(e.allocation_id));
    char addr[24];
    snprintf(addr, sizeof addr, "0x%016" PRIx64, e.addr);
    add("addr", addr);
    add("size", std::to_string(e.size_bytes));
    if (e.owner != 0) add("owner", strings.get(e.owner));
    if (e.pool_used != kUnknown) add("used", std::to_string(e.pool_used));
    if (e.pool_total != kUnknown) add("total", std::to_string(e.pool_total));
    if (e.stream != 0) add("stream", std::to_string(e.stream));
    if (e.is_mmap) add("kind", "mmap");
    if (e.kind == MemEventKind::kFree && e.free_pending) add("pending", "1");
  } else if (e.kind == MemEventKind::kFreeCompleted) {
    char addr[24];
    snprintf(addr, sizeof addr, "0x%016" PRIx64, e.addr);
    add("addr", addr);
    add("size", std::to_string(e.size_bytes));
  } else if (e.kind == MemEventKind::kSnapshot) {
    if (e.snap_allocated != kUnknown) add("allocated", std::to_string(e.snap_allocated));
    if (e.snap_reserved != kUnknown) add("reserved", std::to_string(e.snap_reserved));
    if (e.snap_max_allocated != kUnknown)
      add("max_allocated", std::to_string(e.snap_max_allocated));
    if (e.snap_max_reserved != kUnknown) add("max_reserved", std::to_string(e.snap_max_reserved));
    if (e.snap_app_reserved != kUnknown) add("app_reserved", std::to_string(e.snap_app_reserved));
    if (e.snap_total != kUnknown) add("total", std::to_string(e.snap_total));
    if (e.snap_free != kUnknown) add("free", std::to_string(e.snap_free));
  } else if (e.kind == MemEventKind::kKernelLaunch) {
    add("stream", std::to_string(e.stream));
  } else if (e.kind == MemEventKind::kOom) {
    add("func", strings.get(e.name));
    add("req_size", std::to_string(e.size_bytes));
    add("size", std::to_string(e.size_bytes));
    add("stream", std::to_string(e.stream));
  } else if (e.kind == MemEventKind::kTraceStart && e.snap_total != kUnknown) {
    if (e.snap_free != kUnknown) add("free", std::to_string(e.snap_free));
    add("total", std::to_string(e.snap_total));
  }
  return attr.empty() ? "" : attr + "}";
}

}  // namespace

std::string recording_table(const std::string& path) {
  sqlite3* db = nullptr;
  std::string table;
  if (reader::open_read_only(path, 0, &db) == SQLITE_OK) {
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(db,
                           "SELECT name FROM sqlite_master WHERE type IN ('table', 'view') AND "
                           "name IN ('memscope_dump', 'leaks_dump') ORDER BY name DESC",
                           -1, &stmt, nullptr) == SQLITE_OK &&
        sqlite3_step(stmt) == SQLITE_ROW) {
      table = reinterpret_cast<const char*>(sqlite3_column_text(stmt, 0));
    }
    sqlite3_finalize(stmt);
  }
  sqlite3_close(db);
  return table;
}

std::string write_csv_database(const std::vector<MemEvent>& events, const StringTable& strings,
                               const std::string& source_path, std::string* error) {
  const std::string base = temp_dir();
  std::string name = source_path.substr(source_path.rfind('/') + 1);
  std::string pattern = base + "/memtap-gui-" + name + "-XXXXXX";
  const int fd = mkstemp(pattern.data());
  if (fd < 0) {
    *error = "cannot make a database for the event table of " + source_path + " in " + base;
    return "";
  }
  close(fd);
  sqlite3* db = nullptr;
  auto fail = [&](const char* what) {
    *error = "cannot write the event table of " + source_path + " to " + pattern + ": " + what +
             (db != nullptr ? std::string(": ") + sqlite3_errmsg(db) : "");
    sqlite3_close(db);
    unlink(pattern.c_str());
    return std::string();
  };
  if (sqlite3_open(pattern.c_str(), &db) != SQLITE_OK) return fail("open");
  sqlite3_exec(db, "PRAGMA journal_mode = OFF; PRAGMA synchronous = OFF", nullptr, nullptr,
               nullptr);
  if (sqlite3_exec(db, kCreateMemscopeDumpSql, nullptr, nullptr, nullptr) != SQLITE_OK ||
      sqlite3_exec(db, "BEGIN", nullptr, nullptr, nullptr) != SQLITE_OK) {
    return fail("create");
  }
  sqlite3_stmt* insert = nullptr;
  if (sqlite3_prepare_v2(db, kInsertMemscopeDumpSql, -1, &insert, nullptr) != SQLITE_OK) {
    return fail("prepare");
  }
  int64_t id = 0;
  for (const MemEvent& e : events) {
    const bool block = e.kind == MemEventKind::kMalloc || e.kind == MemEventKind::kFree ||
                       e.kind == MemEventKind::kAccess || e.kind == MemEventKind::kOomTopAlloc ||
                       e.kind == MemEventKind::kFreeCompleted;
    char ptr[24] = "N/A";
    if (block) snprintf(ptr, sizeof ptr, "0x%016" PRIx64, e.addr);
    const std::string& name_text = strings.get(e.name);
    const std::string attr = attr_text(e, strings);
    const std::string device = device_id_text(e.device);
    sqlite3_bind_int64(insert, 1, ++id);
    sqlite3_bind_text(insert, 2, event_text(e.kind), -1, SQLITE_STATIC);
    sqlite3_bind_text(insert, 3, event_type_text(e), -1, SQLITE_STATIC);
    sqlite3_bind_text(insert, 4, name_text.empty() ? "N/A" : name_text.c_str(), -1, SQLITE_STATIC);
    sqlite3_bind_int64(insert, 5, e.ts_ns);
    sqlite3_bind_int64(insert, 6, e.pid);
    sqlite3_bind_int64(insert, 7, e.tid);
    sqlite3_bind_text(insert, 8, device.c_str(), -1, SQLITE_STATIC);
    sqlite3_bind_text(insert, 9, ptr, -1, SQLITE_STATIC);
    sqlite3_bind_text(insert, 10, attr.c_str(), -1, SQLITE_STATIC);
    sqlite3_bind_text(insert, 11, strings.get(e.stack_python).c_str(), -1, SQLITE_STATIC);
    sqlite3_bind_text(insert, 12, strings.get(e.stack_c).c_str(), -1, SQLITE_STATIC);
    if (sqlite3_step(insert) != SQLITE_DONE) {
      sqlite3_finalize(insert);
      return fail("insert");
    }
    sqlite3_reset(insert);
  }
  sqlite3_finalize(insert);
  if (sqlite3_exec(db, "COMMIT", nullptr, nullptr, nullptr) != SQLITE_OK) return fail("commit");
  // Without the indexes the window pages more slowly, nothing worse: no reason to fail.
  std::string no_indexes;
  build_memscope_indexes(db, &no_indexes);
  sqlite3_close(db);
  return pattern;
}

}  // namespace memtap::viewdata
