// A recording copied into msMemScope's own table: what MindStudio Insight and msMemScope's
// analyzer open (they look `memscope_dump` up as a table, so a --compact recording, whose
// memscope_dump is a view, is refused by them).
//
// The rows are copied through SQL, as `SELECT *` of the source's memscope_dump (a table, or
// the compact view that spells the text) gives them, with IDs, into a new file made like
// MemscopeWriter's finished one: the table and its indexes, `python_trace_{pid}` tables,
// memtap_session and memtap_meta (with `exported_from`), journal mode DELETE. The output is
// written under `<out>.partial` and renamed when complete.
#pragma once

#include <string>

namespace memtap {

// False with *error (one line naming the file and what was wrong) when `in` is no SQLite
// database with a memscope_dump or leaks_dump, or `out` cannot be written. `in` and `out`
// must differ.
bool export_memscope_table(const std::string& in, const std::string& out, std::string* error);

}  // namespace memtap
