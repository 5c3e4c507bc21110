// Numbers, devices and absent values as recordings spell them (see text_values.h).
#include "monitor/store/reader/text_values.h"

#include <charconv>
#include <cstdio>
#include <limits>

#include "monitor/model/mem_event.h"

namespace memtap::reader {
namespace {

bool is_space(char c) {
  return c == ' ' || c == '\t' || c == '\r' || c == '\n';
}
bool is_digit(char c) {
  return c >= '0' && c <= '9';
}
char lower(char c) {
  return c >= 'A' && c <= 'Z' ? char(c - 'A' + 'a') : c;
}

bool all_digits(std::string_view text) {
  if (text.empty()) return false;
  for (char c : text) {
    if (!is_digit(c)) return false;
  }
  return true;
}

// Digits kept of a decimal mantissa: 10^24 times a multiplier below 2^40 stays well inside
// __int128, and 24 digits is more than any field in these formats carries.
constexpr int kMaxSignificantDigits = 24;
constexpr int kMaxExponent = 400;

// 10^n for n <= 38 (the largest power of ten an __int128 holds).
__int128 power_of_ten(int n) {
  __int128 p = 1;
  for (int i = 0; i < n; ++i) p *= 10;
  return p;
}

}  // namespace

std::string_view trim(std::string_view text) {
  size_t begin = 0;
  size_t end = text.size();
  while (begin < end && is_space(text[begin])) ++begin;
  while (end > begin && is_space(text[end - 1])) --end;
  return text.substr(begin, end - begin);
}

bool equals_ignore_case(std::string_view a, std::string_view b) {
  if (a.size() != b.size()) return false;
  for (size_t i = 0; i < a.size(); ++i) {
    if (lower(a[i]) != lower(b[i])) return false;
  }
  return true;
}

bool is_absent(std::string_view text) {
  text = trim(text);
  return text.empty() || equals_ignore_case(text, "N/A");
}

bool parse_u64(std::string_view text, uint64_t* value) {
  int base = 10;
  if (text.size() > 2 && text[0] == '0' && (text[1] == 'x' || text[1] == 'X')) {
    text.remove_prefix(2);
    base = 16;
  }
  if (text.empty() || text[0] == '-' || text[0] == '+') return false;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, *value, base);
  return ec == std::errc() && ptr == end;
}

bool parse_i64(std::string_view text, int64_t* value) {
  if (!text.empty() && text[0] == '+') text.remove_prefix(1);
  if (text.empty()) return false;
  const char* end = text.data() + text.size();
  const auto [ptr, ec] = std::from_chars(text.data(), end, *value, 10);
  return ec == std::errc() && ptr == end;
}

bool parse_decimal_times(std::string_view text, int64_t multiplier, int pow10, int64_t* value) {
  size_t i = 0;
  const size_t n = text.size();
  bool negative = false;
  if (i < n && (text[i] == '-' || text[i] == '+')) negative = text[i++] == '-';

  __int128 mantissa = 0;
  int exponent = pow10;
  int significant = 0;
  bool any_digit = false;
  for (; i < n && is_digit(text[i]); ++i) {
    any_digit = true;
    if (significant < kMaxSignificantDigits) {
      mantissa = mantissa * 10 + (text[i] - '0');
      if (mantissa != 0) ++significant;
    } else {
      ++exponent;  // a digit beyond what is kept still scales the number
    }
  }
  if (i < n && text[i] == '.') {
    for (++i; i < n && is_digit(text[i]); ++i) {
      any_digit = true;
      if (significant < kMaxSignificantDigits) {
        mantissa = mantissa * 10 + (text[i] - '0');
        if (mantissa != 0) ++significant;
        --exponent;
      }
    }
  }
  if (!any_digit) return false;
  if (i < n && (text[i] == 'e' || text[i] == 'E')) {
    ++i;
    bool exponent_negative = false;
    if (i < n && (text[i] == '-' || text[i] == '+')) exponent_negative = text[i++] == '-';
    if (i == n || !is_digit(text[i])) return false;
    int written = 0;
    for (; i < n && is_digit(text[i]); ++i) {
      if (written < kMaxExponent) written = written * 10 + (text[i] - '0');
    }
    exponent += exponent_negative ? -written : written;
  }
  if (i != n) return false;

  __int128 result = mantissa * multiplier;
  constexpr __int128 kMax = std::numeric_limits<int64_t>::max();
  if (result != 0 && exponent > 0) {
    for (int e = 0; e < exponent; ++e) {
      if (result > kMax) return false;
      result *= 10;
    }
  } else if (exponent < 0) {
    if (-exponent > 38) {
      result = 0;
    } else {
      const __int128 divisor = power_of_ten(-exponent);
      const __int128 remainder = result % divisor;
      result = result / divisor + (remainder * 2 >= divisor ? 1 : 0);
    }
  }
  if (result > kMax) return false;
  *value = static_cast<int64_t>(negative ? -result : result);
  return true;
}

bool parse_device(std::string_view text, int32_t* device) {
  text = trim(text);
  if (is_absent(text)) {
    *device = kNoDevice;
    return true;
  }
  std::string_view kind;
  std::string_view number = text;
  if (const size_t colon = text.find(':'); colon != std::string_view::npos) {
    kind = trim(text.substr(0, colon));
    number = trim(text.substr(colon + 1));
  } else if (!all_digits(text)) {
    kind = text;
    number = {};
  }
  if (equals_ignore_case(kind, "cpu") || equals_ignore_case(kind, "host")) {
    *device = kHostDevice;
    return number.empty() || all_digits(number);
  }
  uint64_t id = 0;
  if (!all_digits(number) || !parse_u64(number, &id) ||
      id > uint64_t(std::numeric_limits<int32_t>::max())) {
    return false;
  }
  *device = static_cast<int32_t>(id);
  return true;
}

std::string quote_for_message(std::string_view text, size_t max_chars) {
  return "'" + printable_for_message(text, max_chars) + "'";
}

std::string printable_for_message(std::string_view text, size_t max_chars) {
  std::string out;
  size_t shown = 0;
  for (char c : text) {
    if (shown++ == max_chars) {
      out += "...";
      break;
    }
    const auto byte = static_cast<unsigned char>(c);
    if (byte < 0x20 || byte >= 0x7f) {  // binary garbage stays readable
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\x%02x", byte);
      out += escaped;
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace memtap::reader
