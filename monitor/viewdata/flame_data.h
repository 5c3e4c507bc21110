// The Python call-stack flame chart's data, as the window draws it: boxes (spans) with a
// thread, a depth (0: outermost), a function and a time span, for one process and one time
// range. They come from msMemScope's tracer slices (`python_trace_<pid>`: each a call, from
// its start to its return) or, where a recording has none, from the Python call stacks of its
// allocations (`Call Stack(Python)`): each allocation's stack is a sample at its time, and
// consecutive samples of a thread that share their outer frames make one span per frame.
//
// flame_reader.h reads them from the recording; this file holds the plain results and what is
// computed on them alone (nesting depths, sample merging, search).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "monitor/model/python_frame.h"

namespace memtap::viewdata {

// One function: a FuncInfo line "file(line): function" split (monitor/model/python_frame.h).
// For trace slices `line` is the one the slice names; for allocation stacks it is 0 here (the
// line is the span's, a call site that changes as the caller runs, so it does not split the
// caller's span).
using FlameFunction = PythonFrame;

// "file(12): function" -> {file, 12, function}; a line that does not parse is all function.
inline FlameFunction parse_func_info(std::string_view text) {
  return parse_python_frame(text);
}

struct FlameSpan {
  int64_t start_ns = 0;
  int64_t end_ns = 0;
  uint32_t thread_id = 0;
  int depth = 0;          // 0: the outermost frame of its thread
  uint32_t function = 0;  // index in FlameData::functions
  int line = 0;           // the frame's line (allocation stacks: the first sample's)
  uint32_t samples = 0;   // allocation stacks: samples merged into it; trace slices: 0
};

// What the spans of a range come from. memtap's tracer takes the thread's profile hook, so
// its allocations carry no Python stack while it traces: a recording has slices for some
// stretches and stacks for the rest, and the chart shows both.
enum class FlameSource {
  kNone,              // nothing in the range (see FlameData::has_trace / has_stacks)
  kTrace,             // python_trace_<pid> slices
  kAllocationStacks,  // the allocations' Call Stack(Python), sampled
  kTraceAndStacks,    // slices, and stacks where the thread was not traced
};

struct FlameData {
  uint32_t pid = 0;
  int64_t t0_ns = 0;  // the range asked for
  int64_t t1_ns = 0;
  FlameSource source = FlameSource::kNone;
  std::vector<FlameFunction> functions;
  std::vector<FlameSpan> spans;   // each thread's spans together, by depth and start
  std::vector<uint32_t> threads;  // the threads with spans, in the order they are drawn
  // Spans of the range left out beyond the bound (the narrowest); spans narrower than a
  // pixel are never read.
  bool truncated = false;
  uint64_t samples = 0;  // allocation stacks: the samples read (one per pixel at most)
  // Whether the process has any trace slices / allocation stacks at all (as far as indexed):
  // the empty state says which is missing.
  bool has_trace = false;
  bool has_stacks = false;
  // The reader indexes a large recording a slice of it per call: until `indexed`, the
  // answer covers only the part read so far (`indexed_fraction` of it).
  bool indexed = true;
  double indexed_fraction = 1;
  std::string error;  // the recording could not be read: one line naming it
};

// The deepest depth + 1 of each thread's spans, in `threads` order.
std::vector<int> thread_depths(const FlameData& data);

// Trace slices of one process: sets each span's depth from how the thread's slices nest (a
// slice inside another is one deeper), orders them as FlameData::spans are, and fills
// `threads`. Spans only partly nested (a clock step) count as nested in the one they start
// in.
void nest_trace_spans(FlameData* data);

// An allocation's stack at a time: frames outermost first, each a function (an index in
// FlameData::functions) and its line.
struct FlameSample {
  int64_t ts_ns = 0;
  uint32_t thread_id = 0;
  std::vector<std::pair<uint32_t, int>> frames;
};

// Spans from samples in time order: each sample covers [ts, ts + min_width_ns); the frame at
// depth d of consecutive samples of a thread is one span while the frames from 0 to d stay
// the same functions; a sample without frames ends the thread's spans. Appends to data->spans and
// fills `threads`.
void merge_samples(const std::vector<FlameSample>& samples, int64_t min_width_ns, FlameData* data);

// Empties the samples that fall inside an outermost trace slice of their thread (data's
// spans of depth 0): where a thread was traced, the trace says more than its samples. An
// empty sample stays, as a break: spans of samples before and after it do not join across
// the traced stretch.
void drop_traced_samples(const FlameData& data, std::vector<FlameSample>* samples);

// Keeps the `max_spans` widest spans (a parent is never narrower than its child, so every
// span kept still has its parents); sets `truncated` when some were dropped.
void bound_spans(FlameData* data, size_t max_spans);

// The spans whose function name contains `needle` (case-insensitive), and the time they
// cover: per thread, the union of their intervals (a recursive function is not counted
// twice), summed over threads.
struct FlameMatches {
  std::vector<size_t> spans;  // indexes in FlameData::spans
  int64_t total_ns = 0;
};
FlameMatches search_spans(const FlameData& data, std::string_view needle);

}  // namespace memtap::viewdata
