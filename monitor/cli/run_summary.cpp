// See run_summary.h.
#include "monitor/cli/run_summary.h"

#include <algorithm>

namespace memtap {

std::string format_bytes(double bytes) {
  static const char* const kUnits[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  int unit = 0;
  bool negative = bytes < 0;
  if (negative) bytes = -bytes;
  while (bytes >= 1024 && unit < 4) {
    bytes /= 1024;
    ++unit;
  }
  char buf[32];
  snprintf(buf, sizeof buf, unit == 0 ? "%s%.0f %s" : "%s%.1f %s", negative ? "-" : "", bytes,
           kUnits[unit]);
  return buf;
}

void RunSummary::add(const DumpRow* rows, size_t count) {
  for (size_t i = 0; i < count; ++i) {
    const DumpRow& r = rows[i];
    if (r.event != DumpEvent::kMalloc && r.event != DumpEvent::kFree) continue;
    ProcessTotals& t = totals_[r.process_id];
    if (r.event == DumpEvent::kMalloc) {
      ++t.allocations;
      t.bytes_allocated += r.size_bytes;
      t.live_bytes += int64_t(r.size_bytes);
      t.peak_live_bytes = std::max(t.peak_live_bytes, t.live_bytes);
      t.largest_allocation = std::max(t.largest_allocation, r.size_bytes);
    } else {
      ++t.frees;
      // A block inherited from a fork() parent was never counted in this process.
      if (r.inherited_from_pid == 0) t.live_bytes -= int64_t(r.size_bytes);
    }
  }
}

void RunSummary::print(FILE* out, const std::string& db_path,
                       const std::vector<ProcessInfo>& processes,
                       uint64_t rejected_messages) const {
  uint64_t events = 0, dropped = 0, lost_messages = 0;
  for (const ProcessInfo& p : processes) {
    events += p.events_received;
    dropped += p.events_dropped;
    lost_messages += p.messages_lost;
  }
  fprintf(out, "memtap: recording written to %s\n", db_path.c_str());
  fprintf(out, "memtap: %zu process%s, %llu events, %llu dropped", processes.size(),
          processes.size() == 1 ? "" : "es", (unsigned long long)events,
          (unsigned long long)dropped);
  if (lost_messages) fprintf(out, ", %llu messages lost", (unsigned long long)lost_messages);
  if (rejected_messages) {
    fprintf(out, ", %llu malformed messages rejected", (unsigned long long)rejected_messages);
  }
  fprintf(out, "\n");
  for (const ProcessInfo& p : processes) {
    std::string cmd;
    for (const std::string& a : p.command_line) cmd += (cmd.empty() ? "" : " ") + a;
    if (cmd.size() > 100) cmd = cmd.substr(0, 97) + "...";
    auto it = totals_.find(p.pid);
    ProcessTotals t = it == totals_.end() ? ProcessTotals{} : it->second;
    std::string who = "pid " + std::to_string(p.pid);
    if (p.rank >= 0) who += " rank " + std::to_string(p.rank);
    if (p.forked_from_pid) who += " (fork of " + std::to_string(p.forked_from_pid) + ")";
    fprintf(out, "  %s  %s\n", who.c_str(), cmd.c_str());
    fprintf(out, "      %llu allocations, %s allocated, peak live %s, live at end %s",
            (unsigned long long)t.allocations, format_bytes(double(t.bytes_allocated)).c_str(),
            format_bytes(double(t.peak_live_bytes)).c_str(),
            format_bytes(double(t.live_bytes)).c_str());
    if (p.events_dropped)
      fprintf(out, ", %llu events dropped", (unsigned long long)p.events_dropped);
    if (!p.bye_received) fprintf(out, " (no final flush: still running, or killed)");
    fprintf(out, "\n");
  }
}

}  // namespace memtap
