// Interning at row rate, in front of a StringTable.
//
// StringTable::intern builds a std::string for every lookup; a reader interns a name and
// two stacks per row of files with millions of rows, so this keeps its own map, looked up
// by string_view without allocating, and asks the table only for strings it has not seen.
// Ids are the table's: the table assigns them in first-seen order either way.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "monitor/model/mem_event.h"

namespace memtap::reader {

class StringInterner {
 public:
  explicit StringInterner(StringTable* table) : table_(table) {}

  // The id of `text`; 0 for empty text and for `N/A` (msMemScope's "no value").
  uint32_t intern(std::string_view text) {
    if (text.empty() || text == "N/A") return 0;
    if (text == last_text_) return last_id_;  // runs of the same name or stack are common
    auto it = ids_.find(text);
    if (it == ids_.end()) it = ids_.emplace(std::string(text), table_->intern(text)).first;
    last_text_ = it->first;  // the map's node keeps the text alive
    last_id_ = it->second;
    return it->second;
  }

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view text) const { return std::hash<std::string_view>{}(text); }
  };

  StringTable* table_;
  std::unordered_map<std::string, uint32_t, Hash, std::equal_to<>> ids_;
  std::string_view last_text_;
  uint32_t last_id_ = 0;
};

// Events read with a string table of their own (a thread's part of a file) refer to it:
// rewrites their ids through `ids` (their table's id -> the recording's).
inline void rewrite_string_ids(std::vector<MemEvent>* events, const std::vector<uint32_t>& ids) {
  for (MemEvent& event : *events) {
    event.name = ids[event.name];
    event.owner = ids[event.owner];
    event.stack_python = ids[event.stack_python];
    event.stack_c = ids[event.stack_c];
  }
}

}  // namespace memtap::reader
