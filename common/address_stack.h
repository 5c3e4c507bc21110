// The text of a C stack as the agent interns it (MEMTAP_STACKS=c): its return addresses,
// innermost first, one "0x<lowercase hex>" a line, nothing else.
//
// Text, not a binary list, because the string log and each batch's StringDef carry it
// unchanged: an address stack is interned, deduplicated and sent like any other text, and
// needs no wire type of its own. The monitor symbolises it with the modules the sender
// reports (wire.capnp LoadedModule; monitor/symbols/symbolizer.h). Unambiguous against the
// text older agents sent (dladdr's "module(symbol+0xoff) [0xaddr]" a line): no line of that
// form is a bare hex number.
//
// The agent formats on its hot path (no allocation, no locale); the monitor parses.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <vector>

namespace memtap {

// Longest line: "0x" and 16 hex digits.
inline constexpr size_t kAddressStackLineBytes = 18;

// Writes the stack's text into out (no NUL) and returns its length, or 0 if it does not fit
// in `room` (kAddressStackLineBytes + 1 a frame always fits).
inline size_t format_address_stack(void* const* addresses, int count, char* out, size_t room) {
  size_t len = 0;
  for (int i = 0; i < count; ++i) {
    if (room - len < kAddressStackLineBytes + 1) return 0;
    if (i > 0) out[len++] = '\n';
    auto value = reinterpret_cast<uintptr_t>(addresses[i]);
    int digits = 1;
    while (digits < 16 && (value >> (4 * digits)) != 0) ++digits;
    out[len++] = '0';
    out[len++] = 'x';
    for (int d = digits - 1; d >= 0; --d) out[len++] = "0123456789abcdef"[(value >> (4 * d)) & 15];
  }
  return len;
}

// The addresses of an address stack's text, or false (out left empty) when `text` is not one:
// an older agent's symbolised text, or any other.
inline bool parse_address_stack(std::string_view text, std::vector<uint64_t>* out) {
  out->clear();
  if (text.empty()) return false;
  size_t pos = 0;
  for (;;) {
    size_t end = text.find('\n', pos);
    if (end == std::string_view::npos) end = text.size();
    std::string_view line = text.substr(pos, end - pos);
    if (line.size() < 3 || line.size() > kAddressStackLineBytes || line[0] != '0' ||
        line[1] != 'x') {
      out->clear();
      return false;
    }
    uint64_t value = 0;
    for (char c : line.substr(2)) {
      int digit = c >= '0' && c <= '9' ? c - '0' : c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
      if (digit < 0) {
        out->clear();
        return false;
      }
      value = value << 4 | uint64_t(digit);
    }
    out->push_back(value);
    if (end == text.size()) return true;
    pos = end + 1;
  }
}

}  // namespace memtap
