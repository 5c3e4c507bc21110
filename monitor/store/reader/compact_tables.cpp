// The small tables of a compact recording (see compact_tables.h).
#include "monitor/store/reader/compact_tables.h"

#include <algorithm>

#include "monitor/store/compact_schema.h"
#include "monitor/store/reader/text_values.h"

namespace memtap::reader {
namespace {

// Ids up to this many times the row count (plus some) get a direct table: 4 bytes an id.
constexpr int64_t kDirectSlack = 4;
constexpr int64_t kDirectMin = 1 << 16;

bool has_table(const std::vector<std::string>& tables, const char* name) {
  return std::any_of(tables.begin(), tables.end(),
                     [name](const std::string& table) { return equals_ignore_case(table, name); });
}

bool read_format(const std::string& path, sqlite3* db, CompactFile* file, std::string* error) {
  bool found = false;
  int64_t version = 0;
  if (!for_each_row(
          path, db, "SELECT version, timestamp_base_ns FROM memtap_format LIMIT 1",
          [&](sqlite3_stmt* s) {
            found = true;
            version = sqlite3_column_int64(s, 0);
            file->timestamp_base_ns = sqlite3_column_int64(s, 1);
          },
          error)) {
    return false;
  }
  if (!found) {
    *error = path + ": table memtap_format has no row (expected version " +
             std::to_string(kCompactFormatVersion) + ")";
    return false;
  }
  if (version < kCompactFormatOldestVersion || version > kCompactFormatVersion) {
    // A newer memtap's file may mean other columns or codes: reading it as this version
    // could give wrong events without a word, so refuse it.
    *error = path + ": memtap_format version " + std::to_string(version) +
             "; this memtap reads versions " + std::to_string(kCompactFormatOldestVersion) +
             " to " + std::to_string(kCompactFormatVersion);
    return false;
  }
  file->version = version;
  return true;
}

// min(ID) and max(ID): SQLite answers each from the b-tree's edge.
bool read_id_span(const std::string& path, sqlite3* db, CompactFile* file, std::string* error) {
  return for_each_row(
      path, db, "SELECT min(ID), max(ID) FROM memtap_event",
      [&](sqlite3_stmt* s) {
        file->has_rows = sqlite3_column_type(s, 1) != SQLITE_NULL;
        file->first_id = sqlite3_column_int64(s, 0);
        file->last_id = sqlite3_column_int64(s, 1);
      },
      error);
}

bool read_threads(const std::string& path, sqlite3* db, CompactFile* file, std::string* error) {
  if (!for_each_row(
          path, db, "SELECT thread, process_id, thread_id FROM memtap_thread ORDER BY thread",
          [&](sqlite3_stmt* s) {
            file->threads.push_back({sqlite3_column_int64(s, 0), sqlite3_column_int64(s, 1),
                                     sqlite3_column_int64(s, 2)});
          },
          error)) {
    return false;
  }
  // memtap writes `thread` as an integer key, so SQLite's order is the numbers' order. A file
  // made otherwise may hold texts or reals there, which sort after every integer and read as
  // any number, or the same number twice: the index wants them ascending and once each (an
  // unsorted list sized its direct table by the last id, and a larger one before it wrote
  // past the end).
  auto by_number = [](const CompactThread& a, const CompactThread& b) {
    return a.number < b.number;
  };
  std::stable_sort(file->threads.begin(), file->threads.end(), by_number);
  file->threads.erase(std::unique(file->threads.begin(), file->threads.end(),
                                  [](const CompactThread& a, const CompactThread& b) {
                                    return a.number == b.number;
                                  }),
                      file->threads.end());
  std::vector<int64_t> ids;
  ids.reserve(file->threads.size());
  for (const CompactThread& t : file->threads) ids.push_back(t.number);
  file->thread_index.build(std::move(ids));
  return true;
}

bool read_chunks(const std::string& path, sqlite3* db, CompactFile* file, std::string* error) {
  return for_each_row(
      path, db,
      "SELECT first_id, min_timestamp_offset_ns FROM memtap_event_chunk ORDER BY first_id",
      [&](sqlite3_stmt* s) {
        file->chunks.push_back({sqlite3_column_int64(s, 0), sqlite3_column_int64(s, 1)});
      },
      error);
}

}  // namespace

void IdIndex::build(std::vector<int64_t> ids) {
  ids_ = std::move(ids);
  direct_.clear();
  if (ids_.empty() || ids_.front() < 0) return;
  const int64_t count = int64_t(ids_.size());
  if (ids_.back() >= kDirectSlack * count + kDirectMin) return;  // sparse: binary search
  direct_.assign(size_t(ids_.back()) + 1, -1);
  for (int64_t at = 0; at < count; ++at) direct_[size_t(ids_[size_t(at)])] = int32_t(at);
}

int64_t IdIndex::search(int64_t id) const {
  const auto it = std::lower_bound(ids_.begin(), ids_.end(), id);
  return it != ids_.end() && *it == id ? int64_t(it - ids_.begin()) : -1;
}

bool has_compact_tables(const std::vector<std::string>& tables) {
  return has_table(tables, "memtap_format") && has_table(tables, "memtap_event");
}

bool load_compact_file(const std::string& path, sqlite3* db, CompactFile* file,
                       std::string* error) {
  *file = CompactFile{};
  // The ID span first: see the header on live files.
  return read_format(path, db, file, error) && read_id_span(path, db, file, error) &&
         read_threads(path, db, file, error) && read_chunks(path, db, file, error);
}

int64_t last_id_at_or_before(const CompactFile& file, int64_t max_offset_ns) {
  // Walk the chunks down from the newest. Rows above `upper` are known to be later than the
  // bound; rows between a chunk's span and `upper` belong to no chunk row (not written
  // yet on a live file): they must be visited, and so must a chunk that may hold one.
  int64_t upper = file.last_id;
  for (auto chunk = file.chunks.rbegin(); chunk != file.chunks.rend(); ++chunk) {
    const int64_t span_last = chunk->first_id + (kEventChunkRows - 1);
    if (upper > span_last || chunk->min_timestamp_offset_ns <= max_offset_ns) return upper;
    upper = std::min(upper, chunk->first_id - 1);
  }
  return upper;  // rows before the first chunk row, if any, are covered by none
}

std::vector<int64_t> threads_of(const CompactFile& file, uint32_t pid) {
  std::vector<int64_t> numbers;
  for (const CompactThread& thread : file.threads) {
    if (thread.process_id == int64_t{pid}) numbers.push_back(thread.number);
  }
  return numbers;
}

}  // namespace memtap::reader
