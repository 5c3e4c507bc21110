// The arguments of protocol 0's text opcodes, which spell values as lines of text: INT and
// LONG (a decimal), UNICODE (raw-unicode-escape: latin-1 with \uXXXX and \UXXXXXXXX) and
// STRING (a quoted Python 2 literal). Pure functions over a line without its LF.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace memtap::pickle {

struct DecimalValue {
  enum class Kind : uint8_t { kSigned, kUnsigned, kBig, kNotANumber };
  Kind kind = Kind::kNotANumber;
  int64_t value = 0;            // kSigned
  uint64_t unsigned_value = 0;  // kUnsigned: above INT64_MAX
};

// An optionally signed decimal integer; kBig past 64 bits.
DecimalValue parse_decimal(std::string_view line);

// Appends the UTF-8 of a raw-unicode-escape line to *out. False with *problem.
bool decode_raw_unicode_escape(std::string_view line, std::string* out, std::string* problem);

// Appends the bytes of a quoted literal ('...' or "...", with \n \t \r \\ \' \" \xHH
// escapes; others are kept as written) to *out. False with *problem.
bool decode_quoted_string(std::string_view line, std::string* out, std::string* problem);

}  // namespace memtap::pickle
