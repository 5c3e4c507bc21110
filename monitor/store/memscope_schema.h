// The SQL of msMemScope's `memscope_dump` table, exactly as msMemScope creates it.
//
// Column names, order and declared types are what MindStudio Insight's importer and
// msMemScope's own tools look up, so they are copied from their files, not designed here
// (tests compare them with a sample file in ../shared/data/msmemscope/).
#pragma once

#include <cstdint>
#include <string>

namespace memtap {

inline constexpr const char* kCreateMemscopeDumpSql =
    R"sql(CREATE TABLE "memscope_dump" ("ID" INTEGER PRIMARY KEY, "Event" TEXT, )sql"
    R"sql("Event Type" TEXT, "Name" TEXT, "Timestamp(ns)" INTEGER, "Process Id" INTEGER, )sql"
    R"sql("Thread Id" INTEGER, "Device Id" TEXT, "Ptr" TEXT, "Attr" TEXT, )sql"
    R"sql("Call Stack(Python)" TEXT, "Call Stack(C)" TEXT))sql";

// Created after the bulk load: building an index once over sorted input is much cheaper
// than updating it on every insert.
inline constexpr const char* kCreateMemscopeDumpIndexesSql =
    R"sql(CREATE INDEX "idx_memscope_dump_timestamp" ON "memscope_dump" ("Timestamp(ns)");)sql"
    R"sql(CREATE INDEX "idx_memscope_dump_event" ON "memscope_dump" ("Event");)sql"
    R"sql(CREATE INDEX "idx_memscope_dump_device" ON "memscope_dump" ("Device Id");)sql";

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
