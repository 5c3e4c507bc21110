// A recording session as the monitor sees it: every traced process, their events put back
// into one timestamp order, and each FREE paired with its MALLOC.
//
// No sockets and no SQLite here: raw Cap'n Proto messages go in (ingest), DumpRows come
// out through the sink, in timestamp order across all processes. Ordering works by
// watermark: each Batch promises that the process sends nothing older than watermarkNs,
// so rows older than the smallest watermark of all processes still running are final.
// A process that said Bye, or that `forget_process` was told is dead, no longer holds
// the watermark back.
//
// Context: each (process, thread) has an owner stack (ownerPush/ownerPop; the label joins
// the levels with '@', outermost first), open operators (opStart/opEnd: a MALLOC is named
// after the innermost) and the Python / C stack waiting for its next malloc or mmap. A
// fork() child's forking thread (tid == the child's pid) starts with the owner stack and
// open operators of the parent's thread that forked, as they were at the fork.
//
// Strings: agents intern text per instance (Batch.strings); the session maps every
// (instance, id) to one session string id, equal texts sharing an id, and the rows carry
// session ids. Ids are resolved when an event is applied, so a definition may arrive after
// the event that uses it as long as the event is still held; an id still unknown then
// gives empty text and counts in ProcessInfo::unresolved_strings.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "monitor/engine/dump_row.h"
#include "monitor/engine/process_info.h"

namespace memtap {

using RowSink = std::function<void(const DumpRow*, size_t count)>;
// One new session string: ids come 1, 2, 3, ... in order, each before the first row that
// uses it (in the same flush, strings go first). Id 0 is the empty text and never comes.
using StringSink = std::function<void(uint32_t id, std::string_view text)>;

struct IngestResult {
  bool ok = true;
  std::string error;  // why the message was rejected: names the field and what was expected
};

class Session {
 public:
  explicit Session(RowSink sink, StringSink strings = {});
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

  // The process stopped without Bye (killed): stop waiting for its watermark. `died_ns`:
  // when its death was seen (epoch ns; 0 unknown), for ProcessInfo::ended_by.
  void forget_process(uint32_t pid, int64_t died_ns = 0);

  // End of session: releases every held row and writes STOP_TRACE for processes that
  // never said Bye.
  void finish();

  // In the order they started (started_before).
  std::vector<ProcessInfo> processes() const;
  uint64_t rejected_messages() const;
  uint64_t rows_emitted() const;
  // Processes seen (Hello) that have neither said Bye nor been forgotten, then fork()
  // children expected (their parent's fork was applied, their Hello has not come yet).
  std::vector<uint32_t> running_pids() const;
  // Events (and SYSTEM rows) held back waiting for the watermark.
  size_t held_events() const;
  // Epoch time of the newest row released in order (INT64_MIN before the first): how far
  // the session has got, which lags the clock by as much as the agents are behind.
  int64_t released_ns() const;
  // The text of a session string id ("" for 0 or an id not issued).
  const std::string& string_text(uint32_t id) const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace memtap
