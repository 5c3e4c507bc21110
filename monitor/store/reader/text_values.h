// Numbers, devices and absent values as recordings spell them.
//
// One set of parsers for every format, so that a `Ptr` of `0x12c0` or `20615843020800`, a
// `Device Id` of `cpu`, `host`, `0` or `NPU:0`, and a time of `1695115378653323.5` or
// `1.69512E+15` (a CSV that went through a spreadsheet) read the same wherever they
// appear. Pure functions over string_views: the readers call them once per field, so
// nothing here allocates.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace memtap::reader {

// Without leading and trailing spaces, tabs, CR and LF (torch_npu pads some CSV times
// with a tab).
std::string_view trim(std::string_view text);

// ASCII case-insensitive equality.
bool equals_ignore_case(std::string_view a, std::string_view b);

// Whether a field says "no value": empty, or `N/A` in any case (after trim).
bool is_absent(std::string_view text);

// An unsigned integer: decimal, or hexadecimal after `0x`/`0X`. No sign, no spaces
// (callers trim). False if `text` is anything else or does not fit.
bool parse_u64(std::string_view text, uint64_t* value);

// A signed decimal integer (optional leading '-' or '+'). False otherwise.
bool parse_i64(std::string_view text, int64_t* value);

// round(number * multiplier * 10^pow10) for a decimal number with an optional sign,
// fraction and exponent ("-12", "1695115378653323.5", "1.69512E+15"). Exact for the
// digits given (no binary floating point), rounded half away from zero. False if `text`
// is not such a number or the result does not fit an int64.
bool parse_decimal_times(std::string_view text, int64_t multiplier, int pow10, int64_t* value);

// `Device Id`: `cpu`/`host` -> kHostDevice; empty or `N/A` -> kNoDevice; `3` -> 3; and a
// `<kind>:<n>` form (`npu:0`, `NPU:1`, `cuda:0`) -> n, except `cpu:<n>` -> kHostDevice.
// False for anything else.
bool parse_device(std::string_view text, int32_t* device);

// `text` for a message, in quotes: at most `max_chars`, bytes outside printable ASCII as
// \xNN (a binary file quoted in an error stays one readable line).
std::string quote_for_message(std::string_view text, size_t max_chars = 60);

// The same without the quotes, for text from a file that a message names as it is (a
// table's name, SQLite's own message, which quotes the file's schema): never more than one
// line, whatever the file holds.
std::string printable_for_message(std::string_view text, size_t max_chars = 60);

}  // namespace memtap::reader
