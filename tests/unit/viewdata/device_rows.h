// Device events (HAL, PTA, OOM) for the window's tests, added to a recording written by
// RecordingBuilder as msMemScope writes them (memtap's writer records HAL blocks of live
// agents, not a framework pool): rows of memscope_dump with their Event Type and Device Id,
// appended to the finished file (the reader orders rows by time).
#pragma once

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "tests/unit/viewdata/recording_builder.h"

namespace memtap::test {

class DeviceRows {
 public:
  DeviceRows(const RecordingBuilder& b, int device = 0) : b_(b), device_(device) {}

  // A block of `layer` ("HAL", "PTA") on the device at `ms`; returns its allocation_id.
  uint64_t malloc(double ms, const std::string& layer, uint64_t addr, uint64_t size,
                  const std::string& owner = "", const std::string& name = "",
                  const std::string& stack_python = "") {
    const uint64_t id = ++ids_;
    live_.push_back({layer, addr, size, id, owner});
    add("MALLOC", layer, ms, addr, attr(id, addr, size, owner), name, stack_python);
    return id;
  }

  void free(double ms, const std::string& layer, uint64_t addr) {
    for (size_t i = live_.size(); i-- > 0;) {
      if (live_[i].layer != layer || live_[i].addr != addr) continue;
      add("FREE", layer, ms, addr, attr(live_[i].id, addr, live_[i].size, ""), "", "");
      live_.erase(live_.begin() + long(i));
      return;
    }
    ADD_FAILURE() << "no live " << layer << " block at " << addr;
  }

  // An allocation of `size` bytes by `api` that failed at `ms`, and OOM_TOP_ALLOC rows for
  // the live blocks of `layer`, largest first.
  void oom(double ms, const std::string& api, uint64_t size, const std::string& layer) {
    add("OOM_DETAIL", "OOM_TRIGGER", ms, 0,
        "{\"func\":\"" + api + "\",\"req_size\":\"" + std::to_string(size) + "\",\"stream\":\"0\"}",
        api, "", "N/A");
    std::vector<Live> top;
    for (const Live& l : live_)
      if (l.layer == layer) top.push_back(l);
    std::sort(top.begin(), top.end(), [](const Live& a, const Live& b) { return a.size > b.size; });
    for (const Live& l : top) {
      add("OOM_DETAIL", "OOM_TOP_ALLOC", ms, l.addr, attr(l.id, l.addr, l.size, l.owner), "", "");
    }
  }

  // Appends the rows to the recording at `path` (written by RecordingBuilder::write).
  void append_to(const std::string& path) {
    sqlite3* db = nullptr;
    ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK) << path;
    std::string sql = "BEGIN;";
    for (const std::string& row : rows_) sql += row;
    sql += "COMMIT;";
    char* message = nullptr;
    const int rc = sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &message);
    const std::string text = message != nullptr ? message : "";
    sqlite3_free(message);
    sqlite3_close(db);
    ASSERT_EQ(rc, SQLITE_OK) << text;
  }

 private:
  struct Live {
    std::string layer;
    uint64_t addr, size, id;
    std::string owner;
  };

  static std::string hex(uint64_t v) {
    char text[32];
    std::snprintf(text, sizeof text, "0x%llx", static_cast<unsigned long long>(v));
    return text;
  }
  static std::string quoted(const std::string& s) {
    std::string out = "'";
    for (char c : s) out += c == '\'' ? std::string("''") : std::string(1, c);
    return out + "'";
  }
  std::string attr(uint64_t id, uint64_t addr, uint64_t size, const std::string& owner) {
    std::string a = "{\"allocation_id\":\"" + std::to_string(id) + "\",\"addr\":\"" + hex(addr) +
                    "\",\"size\":\"" + std::to_string(size) + "\"";
    if (!owner.empty()) a += ",\"owner\":\"" + owner + "\"";
    return a + "}";
  }
  void add(const std::string& event, const std::string& layer, double ms, uint64_t addr,
           const std::string& attr, const std::string& name, const std::string& stack_python,
           const std::string& ptr = "") {
    // IDs past any the writer gave; the reader sorts by time.
    rows_.push_back("INSERT INTO memscope_dump VALUES (" + std::to_string(1000000 + rows_.size()) +
                    ",'" + event + "','" + layer + "'," + quoted(name.empty() ? "N/A" : name) +
                    "," + std::to_string(b_.at(ms)) + "," + std::to_string(b_.pid()) + "," +
                    std::to_string(b_.pid()) + ",'" + std::to_string(device_) + "','" +
                    (ptr.empty() ? hex(addr) : ptr) + "'," + quoted(attr) + "," +
                    quoted(stack_python) + ",'');");
  }

  const RecordingBuilder& b_;
  int device_;
  uint64_t ids_ = 1000;
  std::vector<Live> live_;
  std::vector<std::string> rows_;
};

// One host block and step 1 at +2 ms; on GPU 0 a 2 MiB HAL block at +3 ms, a cudaMalloc of
// 8 MiB that fails at +4 ms, and a 1 MiB block at +5 ms: the OOM the curves' markers
// (viewdata) and the chart over them (gui) are tested on. Written to `path`.
inline void write_oom_after_a_step(RecordingBuilder& b, const std::string& path) {
  b.malloc(1, 0x1000, 4096);
  b.step(2, 1);
  b.write(path);
  DeviceRows d(b, 0);
  d.malloc(3, "HAL", 0x7f0000000000, 2 << 20);
  d.oom(4, "cudaMalloc", 8 << 20, "HAL");
  d.malloc(5, "HAL", 0x7f1000000000, 1 << 20);
  d.append_to(path);
}

}  // namespace memtap::test
