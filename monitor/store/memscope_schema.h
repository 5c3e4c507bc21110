// The SQL of msMemScope's `memscope_dump` table, exactly as msMemScope creates it.
//
// Column names, order and declared types are what MindStudio Insight's importer and
// msMemScope's own tools look up, so they are copied from their files, not designed here
// (tests compare them with a sample file in ../shared/data/msmemscope/).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace memtap {

inline constexpr const char* kCreateMemscopeDumpSql =
    R"sql(CREATE TABLE "memscope_dump" ("ID" INTEGER PRIMARY KEY, "Event" TEXT, )sql"
    R"sql("Event Type" TEXT, "Name" TEXT, "Timestamp(ns)" INTEGER, "Process Id" INTEGER, )sql"
    R"sql("Thread Id" INTEGER, "Device Id" TEXT, "Ptr" TEXT, "Attr" TEXT, )sql"
    R"sql("Call Stack(Python)" TEXT, "Call Stack(C)" TEXT))sql";

// The rows the window looks up by device or kind are few: a GPU's beside the host's
// millions of heap rows, the OOM, kernel, step and snapshot rows beside MALLOC and FREE.
// The device and event indexes hold those rows only (partial indexes), so SQLite keeps
// them up as rows are inserted for about 20 ns a row (two comparisons), where a full index
// cost a scan and a sort of every row when the recording finished: 0.25 s each for a 6-step
// PyTorch script's 2.18 M rows, on the thread everyone waits for at the end. msMemScope
// itself writes no index (its data_handler.cpp); the names are those of the msMemScope
// sample in ../shared/data/msmemscope/. SQLite takes a partial index only for a query
// whose WHERE holds the index's condition as a term, so the window adds these terms
// verbatim where it wants the index (monitor/viewdata/event_pages.cpp).
inline constexpr std::string_view kMemscopeDumpDeviceIndexWhere = R"sql("Device Id" <> 'cpu')sql";
inline constexpr std::string_view kMemscopeDumpEventIndexWhere =
    R"sql("Event" <> 'MALLOC' AND "Event" <> 'FREE')sql";

// Created with the table by the writer, after the bulk load by the others.
inline constexpr const char* kCreateMemscopeDumpPartialIndexesSql =
    R"sql(CREATE INDEX IF NOT EXISTS "idx_memscope_dump_event" ON "memscope_dump" ("Event") )sql"
    R"sql(WHERE "Event" <> 'MALLOC' AND "Event" <> 'FREE';)sql"
    R"sql(CREATE INDEX IF NOT EXISTS "idx_memscope_dump_device" ON "memscope_dump" )sql"
    R"sql(("Device Id") WHERE "Device Id" <> 'cpu';)sql";
static_assert(std::string_view(kCreateMemscopeDumpPartialIndexesSql)
                          .find(kMemscopeDumpEventIndexWhere) != std::string_view::npos &&
                  std::string_view(kCreateMemscopeDumpPartialIndexesSql)
                          .find(kMemscopeDumpDeviceIndexWhere) != std::string_view::npos,
              "the window's terms must be the indexes' conditions, word for word");

// Created after a bulk load, or by a writer's finish, where it is missing: a full index,
// since building it once over every row is much cheaper than updating it on every insert;
// memtap's readers walk it for time order and time slices. With
// kCreateMemscopeDumpPartialIndexesSql (each only where it is missing too), every index a
// bulk load needs.
inline constexpr const char* kCreateMemscopeDumpTimestampIndexSql =
    R"sql(CREATE INDEX IF NOT EXISTS "idx_memscope_dump_timestamp" ON "memscope_dump" )sql"
    R"sql(("Timestamp(ns)");)sql";

// Parameters ?1..?12 in column order.
inline constexpr const char* kInsertMemscopeDumpSql =
    R"sql(INSERT INTO "memscope_dump" VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, ?10, ?11, ?12))sql";

// msMemScope's Python tracer table, one per traced process: `python_trace_{pid}`, with
// FuncInfo as "file(line): function" and the times as decimal epoch ns in TEXT columns.
inline std::string python_trace_table_name(uint32_t pid) {
  return "python_trace_" + std::to_string(pid);
}

inline std::string python_trace_create_sql(const std::string& table) {
  return "CREATE TABLE IF NOT EXISTS \"" + table +
         "\" (\"FuncInfo\" TEXT, \"StartTime(ns)\" TEXT, \"EndTime(ns)\" TEXT, "
         "\"Thread Id\" INTEGER, \"Process Id\" INTEGER)";
}

// Parameters ?1..?5 in column order.
inline std::string python_trace_insert_sql(const std::string& table) {
  return "INSERT INTO \"" + table + "\" VALUES (?1, ?2, ?3, ?4, ?5)";
}

}  // namespace memtap
