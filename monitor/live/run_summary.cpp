// See run_summary.h.
#include "monitor/live/run_summary.h"

#include "monitor/report/report_render.h"
#include "monitor/report/units.h"

namespace memtap {

LiveInput live_input(const InputCounts& counts) {
  LiveInput input;
  input.known = true;
  input.rejected_messages = counts.rejected();
  input.malformed = counts.malformed;
  input.protocol_version = counts.protocol_version;
  input.out_of_order = counts.out_of_order;
  input.unknown_process = counts.unknown_process;
  input.spoofed = counts.spoofed;
  input.over_limit = counts.over_limit;
  input.silent_hellos = counts.silent_hellos;
  return input;
}

void print_session_header(FILE* out, const std::vector<ProcessInfo>& processes,
                          const LiveInput& input, uint64_t events) {
  uint64_t dropped = 0, lost = 0, lost_messages = 0, sent_before = 0;
  for (const ProcessInfo& p : processes) {
    dropped += p.events_dropped;
    lost += p.events_lost;
    lost_messages += p.messages_lost;
    sent_before += p.events_sent_before;
  }
  fprintf(out, "memtap: %zu process%s, %s events, %s dropped", processes.size(),
          processes.size() == 1 ? "" : "es", count_text(events).c_str(),
          count_text(dropped).c_str());
  // Lost events include those of the lost messages (docs/design-notes.md, monitor/engine "What was
  // sent, what came"); a message count is said besides, since it is known before the Bye.
  if (lost) fprintf(out, ", %s lost on the way", count_text(lost).c_str());
  if (lost_messages) fprintf(out, ", %s messages lost", count_text(lost_messages).c_str());
  if (sent_before) {
    fprintf(out, ", %s sent to an earlier monitor before this recording",
            count_text(sent_before).c_str());
  }
  fprintf(out, "\n");
  live_input_text(input, "memtap: ", out);
  for (const ProcessInfo& p : processes) {
    if (p.stalls != 0) {
      fprintf(out, "memtap: pid %u: %s (%llu late events)\n", p.pid, stalled_text(p.stalls).c_str(),
              (unsigned long long)p.late_events);
    }
    if (p.ended_by.rfind("no final flush", 0) == 0) {
      fprintf(out,
              "memtap: pid %u: %s (killed, its final flush cut short, or still running when "
              "the recording ended): its last events are missing\n",
              p.pid, p.ended_by.c_str());
    }
  }
}

std::vector<RecordedProcess> recorded_processes(const std::vector<ProcessInfo>& processes) {
  std::vector<RecordedProcess> out;
  for (const ProcessInfo& p : processes) {
    RecordedProcess r;
    r.pid = p.pid;
    r.hostname = p.hostname;
    for (const std::string& a : p.command_line)
      r.command_line += (r.command_line.empty() ? "" : " ") + a;
    r.rank = p.rank;
    r.world_size = p.world_size;
    r.forked_from_pid = p.forked_from_pid;
    r.events_dropped = p.events_dropped;
    r.events_lost = p.events_lost;
    r.events_sent_before = p.events_sent_before;
    r.stalls = p.stalls;
    r.ended_by = p.ended_by;
    out.push_back(r);
  }
  return out;
}

}  // namespace memtap
