// Fuzzes the monitor's side of the wire: the input is what the PULL socket hands over.
//
// First the whole input as one ZeroMQ message body, through decode_message (decode.h): the
// Cap'n Proto checks, limits, enums and ranges. Then the input as a conversation: split at
// each kMessageSeparator into messages that one Session ingests in turn (Hello, Batches,
// Bye of one or more processes), so pairing, ordering, fork inheritance and the counting of
// drops, gaps and rejected messages run on what the decoder let through; then the session
// is told a process died and finished, which releases and ends everything held. The rows
// it hands out go on, as in `memtap run`, through row_events.h into the engine's analyses
// and the report (a pid an agent claims reaches them unchecked).
//
// Seeds: conversations that make_fuzz_seeds writes from the current schema (so they keep
// the protocol version), and tests/fuzz/seeds/wire_message.
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "monitor/engine/analyzer.h"
#include "monitor/engine/decode.h"
#include "monitor/engine/row_events.h"
#include "monitor/engine/session.h"
#include "tests/fuzz/fuzz_support.h"
#include "tests/fuzz/wire_separator.h"

using namespace memtap;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const DecodeResult one = decode_message(data, size);
  if (one.ok != one.error.empty()) fuzz::fail("decode_message: ok and error disagree", one.error);
  if (one.ok) {
    // Decoded memory in proportion to the message: no more list elements than words.
    const WireMessage& m = one.message;
    uint64_t elements = m.hello.command_line.size() + m.batch.strings.size();
    for (const WireThreadEvents& thread : m.batch.threads) elements += 1 + thread.events.size();
    if (elements > size / 8) fuzz::fail("more list elements decoded than the message has words");
  }

  uint64_t rows = 0;
  uint32_t strings = 0;
  StringTable table;
  RowStrings row_strings(&table);
  Analyzer analyzer(&table);
  std::vector<MemEvent> events;
  Session session(
      [&](const DumpRow* out, size_t count) {
        rows += count;
        events.clear();
        append_events(out, count, row_strings, &events);
        analyzer.add(events.data(), events.size());
      },
      [&](uint32_t id, std::string_view text) {
        if (id != strings + 1) fuzz::fail("session string ids out of order");
        strings = id;
        row_strings.add(id, text);
      });
  const std::string_view input(reinterpret_cast<const char*>(data), size);
  uint64_t rejected = 0;
  for (size_t at = 0; at <= input.size();) {
    size_t end = input.find(fuzz::kMessageSeparator, at);
    if (end == std::string_view::npos) end = input.size();
    // A copy of exactly the message's bytes, so that ASan sees a read past its end.
    const std::vector<uint8_t> message(data + at, data + end);
    const IngestResult result = session.ingest(message.data(), message.size());
    if (!result.ok) {
      ++rejected;
      if (result.error.empty()) fuzz::fail("a message was rejected without an error");
    }
    at = end + fuzz::kMessageSeparator.size();
  }
  if (session.rejected_messages() != rejected) fuzz::fail("rejected messages miscounted");
  for (const ProcessInfo& process : session.processes()) {
    session.forget_process(process.pid, 0);
    break;
  }
  session.finish();
  if (session.held_events() != 0) fuzz::fail("events still held after finish()");
  if (session.rows_emitted() != rows) fuzz::fail("rows_emitted() is not the rows handed out");
  std::vector<RecordedProcess> recorded;
  for (const ProcessInfo& process : session.processes()) recorded.emplace_back().pid = process.pid;
  (void)analyzer.report(recorded);
  return 0;
}
