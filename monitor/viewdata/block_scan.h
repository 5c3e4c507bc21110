// The blocks a BlockFilter matches, read from the store in a few rowid ranges and never
// the whole table for a time range (block_store.h has the tables):
//   - blocks (lifetimes up to promote_after_ns): the ids allocated in
//     [t0 - promote_after_ns, t1] (ids are in allocation order: AllocSpans);
//   - long_lived level k: the ids allocated in [t0 - (promote_after_ns << k), t1], the
//     longest lifetime the level holds; the stored live ones: every id allocated by t1;
//   - temp.young, the young live blocks.
// So "live at t" reads about what was live then, not the session. The filter's other
// conditions are SQL on the same scans; its text is matched in SQL too: LIKE on the strings
// table gives the ids whose text contains it (kept, and extended as strings come), and
// memtap_text() checks a block's four ids.
#pragma once

#include <sqlite3.h>

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "monitor/viewdata/block_index.h"
#include "monitor/viewdata/block_pairing.h"
#include "monitor/viewdata/block_store.h"

namespace memtap::viewdata {

// Which strings contain a filter's text, for memtap_text().
class TextMatcher {
 public:
  // Registers memtap_text(owner, name, stack_python, stack_c) on the store's connection.
  explicit TextMatcher(BlockStore& store);
  // Makes memtap_text() match `text` (case-insensitive substring); false on failure.
  bool use(const std::string& text);

 private:
  static void call(sqlite3_context* context, int argc, sqlite3_value** argv);

  BlockStore& store_;
  std::string text_;
  std::vector<uint8_t> matches_;  // by string id
  size_t checked_ = 0;            // strings (store.string_ids()) matched against text_
  bool valid_ = false;
};

struct ScanSources {
  BlockStore& store;
  const BlockPairing& pairing;
  TextMatcher& text;
};

// Calls row(stmt) for each block matching `filter`, `columns` selected from alias b (e.g.
// "b.id, b.size"). False when the store failed (then it says why).
bool scan_blocks(ScanSources& sources, const BlockFilter& filter, const std::string& columns,
                 const std::function<void(sqlite3_stmt*)>& row);

}  // namespace memtap::viewdata
