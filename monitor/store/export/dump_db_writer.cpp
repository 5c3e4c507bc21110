// See dump_db_writer.h.
#include "monitor/store/export/dump_db_writer.h"

#include <sqlite3.h>

#include "monitor/store/dump_inserter.h"
#include "monitor/store/memscope_indexes.h"
#include "monitor/store/memscope_schema.h"
#include "monitor/store/memtap_tables.h"
#include "monitor/store/sqlite_status.h"

namespace memtap {

struct DumpDbWriter::Impl {
  std::string path;
  sqlite3* db = nullptr;
  std::unique_ptr<DumpInserter> inserter;
  size_t strings_defined = 1;  // id 0, "", needs no definition
  int64_t next_id = 1;

  ~Impl() {
    inserter.reset();  // its statements first: sqlite3_close refuses while they exist
    sqlite3_close(db);
  }
  bool fail(const std::string& reason, std::string* error) const {
    *error = path + ": " + reason;
    return false;
  }
};

DumpDbWriter::DumpDbWriter(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
DumpDbWriter::~DumpDbWriter() = default;

std::unique_ptr<DumpDbWriter> DumpDbWriter::create(const std::string& path, std::string* error) {
  auto impl = std::make_unique<Impl>();
  impl->path = path;
  const int rc =
      sqlite3_open_v2(path.c_str(), &impl->db, SQLITE_OPEN_READWRITE | SQLITE_OPEN_CREATE, nullptr);
  if (rc != SQLITE_OK) {
    impl->fail("cannot create: " + sqlite_error_text(impl->db, rc), error);
    return nullptr;
  }
  // memtap's page size; no journal while the file is written: an interrupted export is a
  // .partial nobody reads. One transaction for every row.
  std::string reason;
  const std::string schema = std::string("PRAGMA page_size=16384; PRAGMA journal_mode=OFF; ") +
                             kCreateMemscopeDumpSql + ";" + memtap_tables_sql() + "BEGIN";
  if (!sqlite_exec(impl->db, schema.c_str(), &reason)) {
    impl->fail(reason, error);
    return nullptr;
  }
  impl->inserter = DumpInserter::prepare(impl->db, &reason);
  if (impl->inserter == nullptr) {
    impl->fail(reason, error);
    return nullptr;
  }
  return std::unique_ptr<DumpDbWriter>(new DumpDbWriter(std::move(impl)));
}

bool DumpDbWriter::add(const DumpRow& row, const StringTable& strings, std::string* error) {
  Impl& w = *impl_;
  for (; w.strings_defined < strings.size(); ++w.strings_defined) {
    w.inserter->define_string(uint32_t(w.strings_defined),
                              strings.get(uint32_t(w.strings_defined)));
  }
  const int rc = w.inserter->insert(w.next_id++, row);
  if (rc != SQLITE_DONE) return w.fail("writing a row: " + sqlite_error_text(w.db, rc), error);
  return true;
}

bool DumpDbWriter::finish(const std::vector<ProcessInfo>& processes,
                          const std::vector<std::pair<std::string, std::string>>& meta,
                          std::string* error) {
  Impl& w = *impl_;
  const int rc_rows = w.inserter->flush();
  if (rc_rows != SQLITE_DONE) {
    return w.fail("writing rows: " + sqlite_error_text(w.db, rc_rows), error);
  }
  w.inserter.reset();
  std::string reason;
  const bool ok = write_memtap_session(w.db, processes, &reason) &&
                  write_memtap_meta(w.db, meta, &reason) && build_memscope_indexes(w.db, &reason) &&
                  sqlite_exec(w.db, "COMMIT; PRAGMA journal_mode=DELETE", &reason);
  if (!ok) return w.fail(reason, error);
  const int rc = sqlite3_close(w.db);
  w.db = nullptr;
  if (rc != SQLITE_OK) return w.fail("closing: " + sqlite_error_text(nullptr, rc), error);
  return true;
}

}  // namespace memtap
