// The `Attr` column split into key/value pairs, whichever way the file spells it.
//
// msMemScope has written three forms over time, and memtap reads them all:
//   {"allocation_id":"4","addr":"0x000012c080000000","size":"6356992"}   (JSON, newest)
//   {allocation_id:4,addr:0x000012c041400000,size:16778240,total:20971520,used:2048}
//   {addr:20615843020800,size:16384,owner:,MID:7}                       (2025-04, empty values)
// so one tolerant grammar covers them: `{` pairs separated by `,` `}`, where a key or value
// is a JSON string or bare text (a bare value runs to the next `,` or `}` and may be
// empty; a nested object or array is kept as its raw text). Which keys mean what is the
// decoder's business (dump_row_decoder.h), not this file's. simdjson was measured
// against this for the JSON form and gave the 10 M-row report no gain (docs/design-notes.md).
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace memtap::reader {

struct AttrPair {
  std::string_view key;
  std::string_view value;  // unquoted and unescaped; bare values trimmed
};

// Splits `text` (an empty or blank Attr gives no pairs) into *pairs, replacing its
// contents. Views point into `text`, or into *scratch for strings that had escapes, so
// both must stay alive and unchanged while the pairs are used. False with *error saying
// where and what was expected ("offset 9: expected ':' after key 'size'").
bool split_attr(std::string_view text, std::vector<AttrPair>* pairs, std::string* scratch,
                std::string* error);

}  // namespace memtap::reader
