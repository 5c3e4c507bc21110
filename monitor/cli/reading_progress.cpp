// See reading_progress.h.
#include "monitor/cli/reading_progress.h"

namespace memtap {
namespace {

ProgressSample reading_sample(const std::string& name, const std::string& after,
                              const ReadingProgress& p) {
  ProgressSample s;
  const uint64_t total = p.read.rows_total.load(std::memory_order_relaxed);
  const uint64_t read = p.read.rows_read.load(std::memory_order_relaxed);
  const uint64_t analysed = p.events_analysed.load(std::memory_order_relaxed);
  if (total != 0 && read >= total) {
    // A streamed file is analysed as it is read, a held one once read and put in time
    // order; either way the rows are about its events (a FREE's row is one event).
    s.what = after + " " + name;
    s.done = analysed;
    s.total = analysed != 0 ? total : 0;
    s.unit = "events";
  } else {
    s.what = "reading " + name;
    s.done = read;
    s.total = total;
  }
  return s;
}

}  // namespace

std::unique_ptr<TerminalProgress> show_reading_progress(const std::string& path,
                                                        const std::string& after,
                                                        const ReadingProgress* progress) {
  const std::string name = path.substr(path.rfind('/') + 1);
  return TerminalProgress::start(
      [name, after, progress] { return reading_sample(name, after, *progress); });
}

}  // namespace memtap
