// See block_scan.h.
#include "monitor/viewdata/block_scan.h"

#include <algorithm>
#include <limits>

namespace memtap::viewdata {

namespace {

constexpr int64_t kMinNs = std::numeric_limits<int64_t>::min();
constexpr int64_t kMaxNs = std::numeric_limits<int64_t>::max();

int64_t minus_saturated(int64_t t, int64_t d) {
  return t < kMinNs + d ? kMinNs : t - d;
}

// "%text%" for LIKE ... ESCAPE '\', the text's own wildcards taken literally.
std::string like_pattern(const std::string& text) {
  std::string p = "%";
  for (char c : text) {
    if (c == '%' || c == '_' || c == '\\') p += '\\';
    p += c;
  }
  return p + "%";
}

// The filter as SQL on alias b, with parameters :pid, :device, :t0, :t1, :min and :max.
std::string where_sql(const BlockFilter& f) {
  std::string sql = "b.pid = :pid AND b.device = :device";
  if (f.t1_ns != kMaxNs) sql += " AND b.alloc_ns <= :t1";
  if (f.t0_ns != kMinNs) sql += " AND b.free_ns > :t0";
  if (f.min_size != 0) sql += " AND b.size >= :min";
  if (f.max_size < uint64_t(kMaxNs)) sql += " AND b.size <= :max";
  const std::string mmap = std::to_string(kMmapSlot);
  if (f.layer && *f.layer == Layer::kHost) {
    if (!f.mmap)
      sql += " AND b.slot IN (0, " + mmap + ")";
    else
      sql += " AND b.slot = " + (*f.mmap ? mmap : std::string("0"));
  } else if (f.layer) {
    sql += (f.mmap && *f.mmap) ? " AND 0" : " AND b.slot = " + std::to_string(int(*f.layer));
  } else if (f.mmap) {
    sql += (*f.mmap ? " AND b.slot = " : " AND b.slot != ") + mmap;
  }
  if (!f.text.empty()) sql += " AND memtap_text(b.owner, b.name, b.stack_python, b.stack_c)";
  return sql;
}

void bind(sqlite3_stmt* stmt, const char* name, int64_t value) {
  const int i = sqlite3_bind_parameter_index(stmt, name);
  if (i > 0) sqlite3_bind_int64(stmt, i, value);
}

class Scan {
 public:
  Scan(BlockStore& store, const BlockFilter& filter, const std::function<void(sqlite3_stmt*)>& row)
      : store_(store), filter_(filter), row_(row) {}

  bool prepare(const std::string& sql, reader::Statement* stmt) {
    const int rc =
        sqlite3_prepare_v2(store_.db(), sql.c_str(), int(sql.size()), &stmt->stmt, nullptr);
    if (rc != SQLITE_OK) store_.fail(rc);
    return rc == SQLITE_OK;
  }

  // Runs stmt with the filter's parameters and these, then resets it.
  bool run(sqlite3_stmt* stmt, int64_t lo, int64_t hi) {
    bind(stmt, ":pid", filter_.pid);
    bind(stmt, ":device", filter_.device);
    bind(stmt, ":t0", filter_.t0_ns);
    bind(stmt, ":t1", filter_.t1_ns);
    bind(stmt, ":min", int64_t(std::min<uint64_t>(filter_.min_size, uint64_t(kMaxNs))));
    bind(stmt, ":max", int64_t(std::min<uint64_t>(filter_.max_size, uint64_t(kMaxNs))));
    bind(stmt, ":lo", lo);
    bind(stmt, ":hi", hi);
    int rc;
    while ((rc = sqlite3_step(stmt)) == SQLITE_ROW) row_(stmt);
    sqlite3_reset(stmt);
    if (rc == SQLITE_DONE) return true;
    store_.fail(rc);
    return false;
  }

 private:
  BlockStore& store_;
  const BlockFilter& filter_;
  const std::function<void(sqlite3_stmt*)>& row_;
};

}  // namespace

TextMatcher::TextMatcher(BlockStore& store) : store_(store) {
  const int rc = sqlite3_create_function_v2(store.db(), "memtap_text", 4, SQLITE_UTF8, this,
                                            &TextMatcher::call, nullptr, nullptr, nullptr);
  if (rc != SQLITE_OK) store.fail(rc);
}

void TextMatcher::call(sqlite3_context* context, int argc, sqlite3_value** argv) {
  const auto* self = static_cast<const TextMatcher*>(sqlite3_user_data(context));
  for (int i = 0; i < argc; ++i) {
    const uint64_t id = uint64_t(sqlite3_value_int64(argv[i]));
    if (id < self->matches_.size() && self->matches_[id]) {
      sqlite3_result_int(context, 1);
      return;
    }
  }
  sqlite3_result_int(context, 0);
}

bool TextMatcher::use(const std::string& text) {
  if (store_.failed()) return false;
  if (!valid_ || text != text_) {
    text_ = text;
    matches_.clear();
    checked_ = 0;
    valid_ = false;
  }
  const std::vector<uint32_t>& ids = store_.string_ids();
  if (checked_ == ids.size() && valid_) return true;
  const std::string pattern = like_pattern(text_);
  // A first use reads the whole table; later ones only the strings added since.
  const std::string sql = checked_ == 0
                              ? "SELECT id FROM strings WHERE text LIKE ?1 ESCAPE '\\'"
                              : "SELECT id FROM strings WHERE id = ?2 AND text LIKE ?1 ESCAPE '\\'";
  reader::Statement stmt;
  int rc = sqlite3_prepare_v2(store_.db(), sql.c_str(), -1, &stmt.stmt, nullptr);
  if (rc == SQLITE_OK) {
    sqlite3_bind_text(stmt.stmt, 1, pattern.data(), int(pattern.size()), SQLITE_STATIC);
    const size_t first = checked_;
    const size_t runs = checked_ == 0 ? 1 : ids.size() - first;
    for (size_t i = 0; i < runs && rc == SQLITE_OK; ++i) {
      if (checked_ != 0) sqlite3_bind_int64(stmt.stmt, 2, ids[first + i]);
      while ((rc = sqlite3_step(stmt.stmt)) == SQLITE_ROW) {
        const uint64_t id = uint64_t(sqlite3_column_int64(stmt.stmt, 0));
        if (id >= matches_.size()) matches_.resize(id + 1, 0);
        matches_[id] = 1;
      }
      sqlite3_reset(stmt.stmt);
      if (rc == SQLITE_DONE) rc = SQLITE_OK;
    }
  }
  if (rc != SQLITE_OK) {
    store_.fail(rc);
    return false;
  }
  checked_ = ids.size();
  valid_ = true;
  return true;
}

bool scan_blocks(ScanSources& sources, const BlockFilter& filter, const std::string& columns,
                 const std::function<void(sqlite3_stmt*)>& row) {
  BlockStore& store = sources.store;
  if (store.failed()) return false;
  if (filter.t1_ns < filter.t0_ns || filter.min_size > filter.max_size) return true;
  if (!filter.text.empty() && !sources.text.use(filter.text)) return false;
  const BlockPairing& pairing = sources.pairing;
  const int64_t promote = pairing.promote_after_ns();
  const AllocSpans& spans = pairing.spans();
  const std::string where = where_sql(filter);
  Scan scan(store, filter, row);

  // Blocks that lived at most promote_after_ns: those allocated in [t0 - it, t1].
  const int64_t hi = spans.last_until(filter.t1_ns);
  const int64_t lo = spans.first_from(minus_saturated(filter.t0_ns, promote));
  if (lo <= hi) {
    reader::Statement recent;
    if (!scan.prepare(
            "SELECT " + columns + " FROM blocks b WHERE b.id BETWEEN :lo AND :hi AND " + where,
            &recent) ||
        !scan.run(recent.stmt, lo, hi))
      return false;
  }
  // The others level by level, each over its longest lifetime before t0; the live ones
  // allocated by t1.
  const uint64_t levels = store.levels();
  if (hi >= 1 && (levels != 0 || store.has_live_stored())) {
    reader::Statement older;
    if (!scan.prepare(
            "SELECT " + columns + " FROM long_lived b WHERE b.key BETWEEN :lo AND :hi AND " + where,
            &older))
      return false;
    for (int level = 1; level <= kMaxLevel; ++level) {
      if (!(levels >> level & 1)) continue;
      const int64_t from = minus_saturated(filter.t0_ns, level_span_ns(uint8_t(level), promote));
      const int64_t level_lo = spans.first_from(from);
      if (level_lo <= hi &&
          !scan.run(older.stmt, long_key(uint8_t(level), level_lo), long_key(uint8_t(level), hi)))
        return false;
    }
    if (store.has_live_stored() &&
        !scan.run(older.stmt, long_key(kLiveLevel, 1), long_key(kLiveLevel, hi)))
      return false;
  }
  if (pairing.young_live() != 0) {
    reader::Statement young;
    if (!scan.prepare("SELECT " + columns + " FROM temp.young b WHERE " + where, &young) ||
        !scan.run(young.stmt, 0, 0))
      return false;
  }
  return true;
}

}  // namespace memtap::viewdata
