// The `Attr` column split into key/value pairs (see attr_parser.h).
#include "monitor/store/reader/attr_parser.h"

#include "monitor/store/reader/text_values.h"

namespace memtap::reader {
namespace {

// A cursor over one Attr text; each read either succeeds or names what it expected.
class AttrScanner {
 public:
  AttrScanner(std::string_view text, std::string* scratch, std::string* error)
      : text_(text), scratch_(scratch), error_(error) {}

  bool at_end() const { return pos_ >= text_.size(); }
  char peek() const { return at_end() ? '\0' : text_[pos_]; }
  void skip_spaces() {
    while (!at_end() && (peek() == ' ' || peek() == '\t' || peek() == '\r' || peek() == '\n')) {
      ++pos_;
    }
  }
  // `context` and `key` finish the message ("after key 'size'"); they are only joined
  // into text on failure, which keeps a good row free of string building.
  bool expect(char c, std::string_view context, std::string_view key = {}) {
    skip_spaces();
    if (peek() == c) {
      ++pos_;
      return true;
    }
    std::string what = std::string("expected '") + c + "' " + std::string(context);
    if (!key.empty()) what += " " + quote_for_message(key);  // a key may hold any bytes
    return fail(what);
  }
  bool fail(const std::string& what) {
    *error_ = "offset " + std::to_string(pos_) + ": " + what;
    return false;
  }

  // A JSON string at the cursor (which is on its opening quote).
  bool read_string(std::string_view* out) {
    const size_t start = ++pos_;
    bool escaped = false;
    while (!at_end() && peek() != '"') {
      if (peek() == '\\') {
        escaped = true;
        ++pos_;
      }
      ++pos_;
    }
    if (at_end()) {
      pos_ = start - 1;  // point at the string's opening quote, where the damage begins
      return fail("unterminated string");
    }
    const std::string_view raw = text_.substr(start, pos_ - start);
    ++pos_;  // the closing quote
    if (!escaped) {
      *out = raw;
      return true;
    }
    return unescape(raw, out);
  }

  // Bare text up to (not including) the first of `stops` at nesting depth 0, trimmed.
  // Nested {...} and [...] (and strings inside them) are kept whole.
  std::string_view read_bare(std::string_view stops) {
    const size_t start = pos_;
    int depth = 0;
    while (!at_end()) {
      const char c = peek();
      if (depth == 0 && stops.find(c) != std::string_view::npos) break;
      if (c == '{' || c == '[') ++depth;
      if ((c == '}' || c == ']') && depth > 0) --depth;
      if (c == '"' && depth > 0) {
        // Skip a quoted string inside a nested value so its commas do not end the value.
        for (++pos_; !at_end() && peek() != '"'; ++pos_) {
          if (peek() == '\\') ++pos_;
        }
      }
      ++pos_;
    }
    return trim(text_.substr(start, pos_ - start));
  }

 private:
  static void append_utf8(uint32_t cp, std::string* out) {
    if (cp < 0x80) {
      *out += char(cp);
    } else if (cp < 0x800) {
      *out += char(0xc0 | (cp >> 6));
      *out += char(0x80 | (cp & 0x3f));
    } else if (cp < 0x10000) {
      *out += char(0xe0 | (cp >> 12));
      *out += char(0x80 | ((cp >> 6) & 0x3f));
      *out += char(0x80 | (cp & 0x3f));
    } else {
      *out += char(0xf0 | (cp >> 18));
      *out += char(0x80 | ((cp >> 12) & 0x3f));
      *out += char(0x80 | ((cp >> 6) & 0x3f));
      *out += char(0x80 | (cp & 0x3f));
    }
  }

  static bool hex4(std::string_view raw, size_t at, uint32_t* cp) {
    if (at + 4 > raw.size()) return false;
    uint64_t value = 0;
    if (!parse_u64("0x" + std::string(raw.substr(at, 4)), &value)) return false;
    *cp = static_cast<uint32_t>(value);
    return true;
  }

  // Writes the unescaped string at the end of *scratch. split_attr reserved room for the
  // whole text, and unescaping only shrinks, so earlier views into *scratch stay valid.
  bool unescape(std::string_view raw, std::string_view* out) {
    const size_t begin = scratch_->size();
    for (size_t i = 0; i < raw.size(); ++i) {
      if (raw[i] != '\\') {
        *scratch_ += raw[i];
        continue;
      }
      const char c = ++i < raw.size() ? raw[i] : '\0';
      switch (c) {
        case '"':
        case '\\':
        case '/':
          *scratch_ += c;
          break;
        case 'b':
          *scratch_ += '\b';
          break;
        case 'f':
          *scratch_ += '\f';
          break;
        case 'n':
          *scratch_ += '\n';
          break;
        case 'r':
          *scratch_ += '\r';
          break;
        case 't':
          *scratch_ += '\t';
          break;
        case 'u': {
          uint32_t cp = 0;
          if (!hex4(raw, i + 1, &cp)) return fail("bad \\u escape in a string");
          i += 4;
          uint32_t low = 0;
          if (cp >= 0xd800 && cp < 0xdc00 && i + 2 < raw.size() && raw[i + 1] == '\\' &&
              raw[i + 2] == 'u' && hex4(raw, i + 3, &low) && low >= 0xdc00 && low < 0xe000) {
            cp = 0x10000 + ((cp - 0xd800) << 10) + (low - 0xdc00);
            i += 6;
          }
          append_utf8(cp, scratch_);
          break;
        }
        default:
          return fail("unknown escape " + quote_for_message(std::string("\\") + c) +
                      " in a string");
      }
    }
    *out = std::string_view(*scratch_).substr(begin);
    return true;
  }

  std::string_view text_;
  size_t pos_ = 0;
  std::string* scratch_;
  std::string* error_;
};

}  // namespace

bool split_attr(std::string_view text, std::vector<AttrPair>* pairs, std::string* scratch,
                std::string* error) {
  pairs->clear();
  scratch->clear();
  if (trim(text).empty()) return true;
  scratch->reserve(text.size());

  AttrScanner scan(text, scratch, error);
  if (!scan.expect('{', "at the start of Attr")) return false;
  while (true) {
    scan.skip_spaces();
    if (scan.peek() == '}') break;  // an empty object, or a trailing comma
    AttrPair pair;
    if (scan.peek() == '"') {
      if (!scan.read_string(&pair.key)) return false;
    } else {
      pair.key = scan.read_bare(":,}");
      if (pair.key.empty()) return scan.fail("expected a key");
    }
    if (!scan.expect(':', "after key", pair.key)) return false;
    scan.skip_spaces();
    if (scan.peek() == '"') {
      if (!scan.read_string(&pair.value)) return false;
    } else {
      pair.value = scan.read_bare(",}");
    }
    pairs->push_back(pair);
    scan.skip_spaces();
    if (scan.peek() == ',') {
      scan.expect(',', "");
      continue;
    }
    if (scan.peek() != '}') {
      return scan.fail("expected ',' or '}' after the value of " + quote_for_message(pair.key));
    }
    break;
  }
  scan.expect('}', "");
  scan.skip_spaces();
  if (!scan.at_end()) return scan.fail("unexpected text after '}'");
  return true;
}

}  // namespace memtap::reader
