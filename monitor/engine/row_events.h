// The live path into the analyses: the Session's rows as MemEvents, the same events a
// reader makes of the recording those rows become, so that a replayed recording and the
// live run that wrote it give the same report.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

#include "monitor/model/dump_row.h"
#include "monitor/model/mem_event.h"

namespace memtap {

// The session's string ids as ids of the analyzer's StringTable. Fed with every string
// the Session hands out (its StringSink), in order, before the rows that use them.
class RowStrings {
 public:
  explicit RowStrings(StringTable* table) : table_(table) {}
  void add(uint32_t session_id, std::string_view text);
  uint32_t id(uint32_t session_id) const { return session_id < ids_.size() ? ids_[session_id] : 0; }
  StringTable& table() { return *table_; }

 private:
  StringTable* table_;
  std::vector<uint32_t> ids_{0};  // by session id; 0 is "" in both
};

// A trace slice row has no MemEvent (it is no memscope_dump row): kOther.
MemEvent event_from_row(const DumpRow& row, RowStrings& strings);

// Appends one MemEvent per memscope_dump row; trace slice rows are skipped.
void append_events(const DumpRow* rows, size_t count, RowStrings& strings,
                   std::vector<MemEvent>* out);

}  // namespace memtap
