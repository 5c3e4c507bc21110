// Protocol 0's text arguments (see pickle_text_opcodes.h).
#include "monitor/store/reader/torch/pickle_text_opcodes.h"

namespace memtap::pickle {
namespace {

void append_utf8(uint32_t code, std::string* out) {
  if (code < 0x80) {
    *out += char(code);
  } else if (code < 0x800) {
    *out += char(0xc0 | (code >> 6));
    *out += char(0x80 | (code & 0x3f));
  } else if (code < 0x10000) {
    *out += char(0xe0 | (code >> 12));
    *out += char(0x80 | ((code >> 6) & 0x3f));
    *out += char(0x80 | (code & 0x3f));
  } else {
    *out += char(0xf0 | (code >> 18));
    *out += char(0x80 | ((code >> 12) & 0x3f));
    *out += char(0x80 | ((code >> 6) & 0x3f));
    *out += char(0x80 | (code & 0x3f));
  }
}

int hex_digit(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

DecimalValue parse_decimal(std::string_view line) {
  DecimalValue out;
  bool negative = false;
  size_t i = 0;
  if (i < line.size() && (line[i] == '-' || line[i] == '+')) negative = line[i++] == '-';
  if (i == line.size()) return out;
  unsigned __int128 v = 0;
  bool big = false;
  for (; i < line.size(); ++i) {
    if (line[i] < '0' || line[i] > '9') return out;
    if (big) continue;  // the digits are still checked
    v = v * 10 + unsigned(line[i] - '0');
    big = v > (unsigned __int128)UINT64_MAX;
  }
  if (big || (negative && v > (unsigned __int128)INT64_MAX + 1)) {
    out.kind = DecimalValue::Kind::kBig;
  } else if (negative) {
    out.kind = DecimalValue::Kind::kSigned;
    out.value = int64_t(-(__int128)v);
  } else if (v > INT64_MAX) {
    out.kind = DecimalValue::Kind::kUnsigned;
    out.unsigned_value = uint64_t(v);
  } else {
    out.kind = DecimalValue::Kind::kSigned;
    out.value = int64_t(v);
  }
  return out;
}

bool decode_raw_unicode_escape(std::string_view line, std::string* out, std::string* problem) {
  for (size_t i = 0; i < line.size(); ++i) {
    const auto c = uint8_t(line[i]);
    size_t digits = 0;
    if (c == '\\' && i + 1 < line.size())
      digits = line[i + 1] == 'u' ? 4 : line[i + 1] == 'U' ? 8 : 0;
    if (digits == 0) {
      append_utf8(c, out);  // latin-1
      continue;
    }
    if (i + 2 + digits > line.size()) {
      *problem = "a \\u escape cut short";
      return false;
    }
    uint32_t code = 0;
    for (size_t k = 0; k < digits; ++k) {
      const int h = hex_digit(line[i + 2 + k]);
      if (h < 0) {
        *problem = "a \\u escape with a digit that is not hexadecimal";
        return false;
      }
      code = code * 16 + uint32_t(h);
    }
    if (code > 0x10ffff) {
      *problem = "a \\U escape past U+10FFFF";
      return false;
    }
    append_utf8(code, out);
    i += 1 + digits;
  }
  return true;
}

bool decode_quoted_string(std::string_view line, std::string* out, std::string* problem) {
  if (line.size() < 2 || (line[0] != '\'' && line[0] != '"') || line.back() != line[0]) {
    *problem = "not a quoted string";
    return false;
  }
  line = line.substr(1, line.size() - 2);
  for (size_t i = 0; i < line.size(); ++i) {
    if (line[i] != '\\' || i + 1 == line.size()) {
      *out += line[i];
      continue;
    }
    const char e = line[++i];
    if (e == 'x') {
      const int hi = i + 1 < line.size() ? hex_digit(line[i + 1]) : -1;
      const int lo = i + 2 < line.size() ? hex_digit(line[i + 2]) : -1;
      if (hi < 0 || lo < 0) {
        *problem = "a \\x escape without two hexadecimal digits";
        return false;
      }
      *out += char(hi * 16 + lo);
      i += 2;
      continue;
    }
    const char* const kFrom = "nrt\\'\"";
    const char* const kTo = "\n\r\t\\'\"";
    bool known = false;
    for (int k = 0; kFrom[k] != '\0'; ++k) {
      if (e == kFrom[k]) {
        *out += kTo[k];
        known = true;
        break;
      }
    }
    if (!known) {
      *out += '\\';
      *out += e;
    }
  }
  return true;
}

}  // namespace memtap::pickle
