// A recording session as the monitor sees it: every traced process, their events put back
// into one timestamp order, and each FREE paired with its MALLOC.
//
// No sockets and no SQLite here: raw Cap'n Proto messages go in (ingest), DumpRows come
// out through the sink, in timestamp order across all processes. Ordering works by
// watermark: each Batch promises that the process sends nothing older than watermarkNs,
// so rows older than the smallest watermark of all processes still running are final.
// A process that said Bye, or that `forget_process` was told is dead, no longer holds
// the watermark back.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "monitor/engine/dump_row.h"
#include "monitor/engine/process_info.h"

namespace memtap {

using RowSink = std::function<void(const DumpRow*, size_t count)>;

struct IngestResult {
  bool ok = true;
  std::string error;  // why the message was rejected: names the field and what was expected
};

class Session {
 public:
  explicit Session(RowSink sink);
  ~Session();
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  // Decodes one (unpacked) wire::Message, validates it, and applies it. A rejected message
  // is counted (rejected_messages) and changes nothing else. Never throws.
  IngestResult ingest(const void* data, size_t size);

  // Rows newer than this epoch time stay held even when every watermark has passed them:
  // a process whose Hello has not arrived yet may still send older events (its start-up
  // allocations). A live monitor sets it to "now minus a short lag" and calls it
  // periodically, which also releases rows when no message comes. Default: no horizon.
  void set_horizon(int64_t epoch_ns);

  // The process stopped without Bye (killed): stop waiting for its watermark.
  void forget_process(uint32_t pid);

  // End of session: releases every held row and writes STOP_TRACE for processes that
  // never said Bye.
  void finish();

  std::vector<ProcessInfo> processes() const;
  uint64_t rejected_messages() const;
  uint64_t rows_emitted() const;
  // Processes seen (Hello) that have neither said Bye nor been forgotten, then fork()
  // children expected (their parent's fork was applied, their Hello has not come yet).
  std::vector<uint32_t> running_pids() const;
  // Events (and SYSTEM rows) held back waiting for the watermark.
  size_t held_events() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace memtap
