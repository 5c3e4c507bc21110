// A snapshot's frames as call stacks (see snapshot_stacks.h).
#include "monitor/store/reader/torch/snapshot_stacks.h"

#include <cstring>

namespace memtap::torch_snapshot {

using pickle::Kind;
using pickle::kNoValue;
using pickle::ValueId;

bool is_python_file(std::string_view filename) {
  if (!filename.empty() && filename.front() == '<') return true;
  return filename.size() >= 3 && filename.substr(filename.size() - 3) == ".py";
}

const StackTexts::Frame& StackTexts::frame(ValueId id) {
  auto [it, added] = frames_.try_emplace(id);
  if (!added) return it->second;
  Frame& f = it->second;
  if (!doc_.is(id, Kind::kDict)) return f;  // no frame: no line
  const std::string_view file = doc_.text(doc_.find(id, "filename"));
  const std::string_view name = doc_.text(doc_.find(id, "name"));
  int64_t line = 0;
  doc_.get_int(doc_.find(id, "line"), &line);
  f.python = is_python_file(file);
  f.text.reserve(file.size() + name.size() + 16);
  f.text.append(file);
  f.text += '(';
  if (f.python) {
    f.text += std::to_string(line);
    f.text += "): ";
    f.text.append(name);
  } else {
    f.text.append(name);
    f.text += ')';
  }
  // A line of a stack column is one frame: a newline inside a name would split it.
  for (char& c : f.text) {
    if (c == '\n' || c == '\r') c = ' ';
  }
  return f;
}

StackTexts::Ids StackTexts::of(ValueId frames) {
  if (!doc_.is(frames, Kind::kList) && !doc_.is(frames, Kind::kTuple)) return {};
  key_.clear();
  doc_.visit_items(frames, [&](ValueId f) {
    char bytes[sizeof f];
    std::memcpy(bytes, &f, sizeof f);
    key_.append(bytes, sizeof f);
    return true;
  });
  auto [it, added] = by_frames_.try_emplace(key_);
  if (added) {
    python_.clear();
    c_.clear();
    doc_.visit_items(frames, [&](ValueId id) {
      const Frame& f = frame(id);
      if (f.text.empty()) return true;
      std::string& column = f.python ? python_ : c_;
      if (!column.empty()) column += '\n';
      column += f.text;
      return true;
    });
    it->second = Ids{intern_(python_), intern_(c_)};
  }
  return it->second;
}

}  // namespace memtap::torch_snapshot
