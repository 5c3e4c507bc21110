// The lines of a call-stack column, and one line of `Call Stack(Python)`, `file(line):
// function`, taken apart: the flame chart names its spans by it, and the torch-snapshot
// export writes it as PyTorch's frame dicts ({filename, line, name}).
#pragma once

#include <charconv>
#include <string>
#include <string_view>

namespace memtap {

struct PythonFrame {
  std::string file;
  int line = 0;
  std::string function;
};

// "file(12): function" -> {file, 12, function}; a line that does not parse is all function.
inline PythonFrame parse_python_frame(std::string_view text) {
  PythonFrame f;
  // The last "): " ends the line number, since file names may hold parentheses and
  // function names (lambdas: "<lambda>") do not hold "): ".
  const size_t close = text.rfind("): ");
  const size_t open = close == std::string_view::npos ? close : text.rfind('(', close);
  int line = 0;
  if (open != std::string_view::npos &&
      std::from_chars(text.data() + open + 1, text.data() + close, line).ptr ==
          text.data() + close) {
    f.file = std::string(text.substr(0, open));
    f.line = line;
    f.function = std::string(text.substr(close + 3));
  } else {
    f.function = std::string(text);
  }
  return f;
}

// Calls fn(line) for each frame of a stack's text, innermost first: one frame a line, a
// trailing '\r' dropped, empty lines skipped.
template <typename Fn>
void for_each_stack_line(std::string_view text, Fn&& fn) {
  while (!text.empty()) {
    const size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (!line.empty()) fn(line);
    if (nl == std::string_view::npos) break;
    text.remove_prefix(nl + 1);
  }
}

}  // namespace memtap
