// See dump_export.h.
#include "monitor/store/export/dump_export.h"

#include <map>
#include <memory>
#include <unordered_map>

#include "monitor/store/export/dump_csv_writer.h"
#include "monitor/store/export/dump_db_writer.h"
#include "monitor/store/export/event_dump_row.h"
#include "monitor/store/export/export_input.h"
#include "monitor/store/memtap_tables.h"

namespace memtap {
namespace {

const char* kind_name(const MemEvent& e) {
  switch (e.kind) {
    case MemEventKind::kAccess:
      return "ACCESS";
    case MemEventKind::kSnapshot:
      return "device SNAPSHOT";
    case MemEventKind::kMalloc:
    case MemEventKind::kFree:
    case MemEventKind::kFreeCompleted:
      return layer_name(e.layer);
    default:
      return "other";
  }
}

// The input's processes as memtap_session rows: what the reader keeps of them, started at
// their first event (memtap_session is read in the order its processes started).
std::vector<ProcessInfo> session_rows(const Recording& rec,
                                      const std::unordered_map<uint32_t, int64_t>& first_ns) {
  std::vector<ProcessInfo> rows;
  for (const RecordedProcess& p : rec.processes) {
    const auto first = first_ns.find(p.pid);
    if (first == first_ns.end()) continue;  // none of its events is in the export (--pid)
    ProcessInfo& row = rows.emplace_back();
    row.pid = p.pid;
    row.hostname = p.hostname;
    if (!p.command_line.empty()) row.command_line = {p.command_line};
    row.rank = p.rank;
    row.world_size = p.world_size;
    row.forked_from_pid = p.forked_from_pid;
    row.events_dropped = p.events_dropped;
    row.events_lost = p.events_lost;
    row.events_sent_before = p.events_sent_before;
    row.stalls = p.stalls;
    row.ended_by = p.ended_by;
    row.start_ns = first->second;
  }
  return rows;
}

std::vector<std::pair<std::string, std::string>> meta_rows(const std::string& in,
                                                           const Recording& rec) {
  std::vector<std::pair<std::string, std::string>> meta = recording_stop_meta(rec.stopped);
  if (rec.live_input.known) {
    for (const LiveInputKey& key : kLiveInputKeys) {
      meta.emplace_back(key.meta_key, std::to_string(rec.live_input.*key.field));
    }
  }
  for (auto& row : torch_snapshot_meta(rec.torch_snapshot)) meta.push_back(std::move(row));
  meta.emplace_back("exported_from", in);
  // As complete as the input: a cut recording stays one (its report says so).
  if (!rec.unfinished) meta.emplace_back("complete", "1");
  return meta;
}

}  // namespace

bool export_dump_rows(const std::string& in, ExportFormat format, const std::string& partial,
                      const ExportOptions& options, ExportSummary* summary, std::string* error) {
  std::unique_ptr<DumpDbWriter> db;
  std::unique_ptr<DumpCsvWriter> csv;
  if (format == ExportFormat::kMsmemscopeDb) {
    db = DumpDbWriter::create(partial, error);
    if (db == nullptr) return false;
  } else {
    csv = DumpCsvWriter::create(partial, error);
    if (csv == nullptr) return false;
  }
  Recording rec;
  std::unordered_map<uint32_t, int64_t> first_ns;
  std::map<std::string, uint64_t> left_out;
  std::string write_error;
  DumpRow row;
  const bool read = stream_export_input(
      in, options.pid, &rec,
      [&](std::span<const MemEvent> batch) {
        for (const MemEvent& e : batch) {
          first_ns.try_emplace(e.pid, e.ts_ns);
          if (!dump_row_from_event(e, rec.strings, &row)) {
            ++left_out[kind_name(e)];
            continue;
          }
          ++summary->rows;
          if (csv) {
            csv->add(row, rec.strings);
          } else if (!db->add(row, rec.strings, &write_error)) {
            return false;
          }
        }
        return true;
      },
      error, options.progress);
  if (!write_error.empty()) {
    *error = write_error;
    return false;
  }
  if (!read) return false;
  summary->unread_rows = rec.warning;
  for (const auto& [what, count] : left_out) {
    summary->left_out += count;
    if (!summary->left_out_what.empty()) summary->left_out_what += ", ";
    summary->left_out_what += std::to_string(count) + " " + what;
  }
  if (csv) return csv->close(error);
  return db->finish(session_rows(rec, first_ns), meta_rows(in, rec), error);
}

}  // namespace memtap
