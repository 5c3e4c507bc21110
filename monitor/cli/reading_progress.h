// The terminal progress line (common/terminal_progress.h) of the commands that read a
// recording: report, check, diff, replay and export. The reader counts the rows it has read
// of the file's; the command counts the events it has analysed (held files are read whole
// first, then analysed).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include "common/terminal_progress.h"
#include "monitor/store/reader/read_progress.h"

namespace memtap {

struct ReadingProgress {
  ReadProgress read;                         // for the reader (feed_recording, ExportOptions)
  std::atomic<uint64_t> events_analysed{0};  // the command's; stays 0 where it analyses none
};

// Starts the line for reading `path` ("reading x.db: 3.2M of 10.0M rows (32%), ..."), then,
// once every row is read, for what follows (`after`: "analysing" says "analysing x.db",
// with the events analysed of about the rows where they are counted); nullptr where no
// line is drawn (terminal_progress.h). `progress` must outlive it.
std::unique_ptr<TerminalProgress> show_reading_progress(const std::string& path,
                                                        const std::string& after,
                                                        const ReadingProgress* progress);

}  // namespace memtap
