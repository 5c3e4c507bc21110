// A snapshot's frames as the recording's two call-stack columns.
//
// PyTorch records a traceback per trace entry and block as a list of {filename, line,
// name} dicts, innermost first, and with `stacks="all"` mixes the C++ unwinder's frames
// (filename `??`, a `.cpp`, or none) into the Python ones. msMemScope keeps them apart, so
// this does too: Python frames (a `.py` file, or a `<...>` one such as torch.fx's
// `<eval_with_key>.3`) become `Call Stack(Python)` as `file(line): function`, one a line,
// innermost first; the others `Call Stack(C)` as `file(function)`. Without the split every
// stack's first line would be `??(torch::unwind::unwind())`, and the report's "by stack"
// would put every block under it.
//
// A snapshot shares its frame dicts (the pickle's memo), and a million entries have a few
// thousand distinct stacks, so a stack's texts are made once per distinct sequence of frame
// dicts (each entry has a frames list of its own: a cache by list would only grow).
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <unordered_map>

#include "monitor/store/reader/torch/pickle_document.h"

namespace memtap::torch_snapshot {

// Whether a frame's file is Python's.
bool is_python_file(std::string_view filename);

class StackTexts {
 public:
  // `intern` gives a text's string id (0 for "").
  StackTexts(const pickle::Document& doc, std::function<uint32_t(std::string_view)> intern)
      : doc_(doc), intern_(std::move(intern)) {}

  struct Ids {
    uint32_t python = 0;
    uint32_t c = 0;
  };
  // The stacks of a frames list (kNoValue, or anything but a list: none).
  Ids of(pickle::ValueId frames);

 private:
  struct Frame {
    std::string text;
    bool python = false;
  };
  const Frame& frame(pickle::ValueId id);

  const pickle::Document& doc_;
  std::function<uint32_t(std::string_view)> intern_;
  std::unordered_map<std::string, Ids> by_frames_;  // key: the frames' ValueIds' bytes
  std::unordered_map<pickle::ValueId, Frame> frames_;
  std::string key_, python_, c_;  // scratch
};

}  // namespace memtap::torch_snapshot
