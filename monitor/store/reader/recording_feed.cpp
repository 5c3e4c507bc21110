// See recording_feed.h.
#include "monitor/store/reader/recording_feed.h"

#include <sqlite3.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdio>
#include <cstring>

#include "monitor/store/reader/sqlite_access.h"

namespace memtap {

namespace {

// A recording row takes at least ~100 bytes on disk (memtap writes ~180, msMemScope ~150),
// a --compact one at least ~32 (~36 without stacks), so these over-count events, which errs
// towards streaming.
constexpr double kFileBytesPerEvent = 100;
constexpr double kCompactFileBytesPerEvent = 32;
// The event array, plus a reader thread's part of it while the parts are joined.
constexpr double kHeldBytesPerEvent = 2.0 * sizeof(MemEvent);

// Whether `path` is a --compact recording (compact_schema.h): its rows are a third the size.
bool is_compact_recording(const std::string& path) {
  sqlite3* db = nullptr;
  bool compact = false;
  if (reader::open_read_only(path, 0, &db) == SQLITE_OK) {
    sqlite3_stmt* stmt = nullptr;
    if (sqlite3_prepare_v2(db,
                           "SELECT 1 FROM sqlite_master WHERE type = 'table' AND name = "
                           "'memtap_event'",
                           -1, &stmt, nullptr) == SQLITE_OK) {
      compact = sqlite3_step(stmt) == SQLITE_ROW;
    }
    sqlite3_finalize(stmt);
  }
  sqlite3_close(db);
  return compact;
}

double mem_available_bytes() {
  FILE* f = std::fopen("/proc/meminfo", "r");
  if (f == nullptr) return 0;
  char line[256];
  double kib = 0;
  while (std::fgets(line, sizeof line, f)) {
    if (std::sscanf(line, "MemAvailable: %lf kB", &kib) == 1) break;
  }
  std::fclose(f);
  return kib * 1024;
}

}  // namespace

double estimated_events(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) return 0;
  const double bytes_per_event =
      is_compact_recording(path) ? kCompactFileBytesPerEvent : kFileBytesPerEvent;
  return double(st.st_size) / bytes_per_event;
}

FeedPlan plan_feed(const std::string& path, bool low_memory) {
  FeedPlan plan;
  if (low_memory) {
    plan.stream = true;
    return plan;
  }
  const double events = estimated_events(path);
  if (events == 0) return plan;  // the reader will say what is wrong
  const double need = events * kHeldBytesPerEvent;
  const double available = mem_available_bytes();
  if (available > 0 && need > available / 2) {
    plan.stream = true;
    char text[200];
    std::snprintf(text, sizeof text,
                  "holding its events would take ~%.1f GiB of the %.1f GiB available: "
                  "reading it in batches (--low-memory)",
                  need / (1u << 30), available / (1u << 30));
    plan.why = text;
  }
  return plan;
}

bool feed_recording(const std::string& path, const FeedPlan& plan, size_t batch_events,
                    Recording* rec, size_t* total_events,
                    const std::function<bool(const MemEvent* events, size_t count)>& on_batch,
                    std::string* error, ReadProgress* progress) {
  *total_events = 0;
  batch_events = std::max<size_t>(batch_events, 1);
  if (plan.stream) {
    return stream_recording(
        path, batch_events, rec,
        [&](std::span<const MemEvent> batch) {
          // The reader's batches are about batch_events; pass them on in at most that.
          for (size_t at = 0; at < batch.size(); at += batch_events) {
            if (!on_batch(batch.data() + at, std::min(batch_events, batch.size() - at)))
              return false;
          }
          return true;
        },
        error, progress);
  }
  if (!read_recording(path, rec, error, progress)) return false;
  *total_events = rec->events.size();
  for (size_t at = 0; at < rec->events.size(); at += batch_events) {
    if (!on_batch(rec->events.data() + at, std::min(batch_events, rec->events.size() - at))) break;
  }
  return true;
}

}  // namespace memtap
