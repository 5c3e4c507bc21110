// A snapshot's structs from its pickle (see snapshot_layout.h).
#include "monitor/store/reader/torch/snapshot_layout.h"

#include <limits>

#include "monitor/store/reader/text_values.h"

namespace memtap::torch_snapshot {
namespace {

using pickle::Document;
using pickle::Kind;

// Reads the fields of one dict, remembering the first thing wrong with them.
class Fields {
 public:
  Fields(const Document& doc, ValueId dict) : doc_(doc), dict_(dict) {}

  // An unsigned integer (an address, a size). Absent: `fallback`, or a problem if required.
  uint64_t uint(const char* key, bool required, uint64_t fallback = 0) {
    const ValueId v = doc_.find(dict_, key);
    if (v == kNoValue) return missing(key, required, fallback);
    uint64_t value = 0;
    if (doc_.get_uint(v, &value)) return value;
    int64_t signed_value = 0;
    if (doc_.get_int(v, &signed_value)) {
      wrong(key, "a negative number, expected a size or an address");
    } else {
      wrong_type(key, v, "an int");
    }
    return fallback;
  }
  // A signed integer; a uint64 is kept as its bits (a stream handle).
  int64_t sint(const char* key, bool required, int64_t fallback) {
    const ValueId v = doc_.find(dict_, key);
    if (v == kNoValue) return int64_t(missing(key, required, uint64_t(fallback)));
    int64_t value = 0;
    uint64_t unsigned_value = 0;
    if (doc_.get_int(v, &value)) return value;
    if (doc_.get_uint(v, &unsigned_value)) return int64_t(unsigned_value);
    wrong_type(key, v, "an int");
    return fallback;
  }
  // A str; kNoValue when absent (or a problem if required).
  ValueId str(const char* key, bool required) {
    const ValueId v = doc_.find(dict_, key);
    if (v == kNoValue) {
      missing(key, required, 0);
      return kNoValue;
    }
    if (!doc_.is(v, Kind::kStr)) {
      wrong_type(key, v, "a str");
      return kNoValue;
    }
    return v;
  }
  // A list (frames, blocks); kNoValue when absent or None.
  ValueId list(const char* key) {
    const ValueId v = doc_.find(dict_, key);
    if (v == kNoValue || doc_.is(v, Kind::kNone)) return kNoValue;
    if (!doc_.is(v, Kind::kList) && !doc_.is(v, Kind::kTuple)) {
      wrong_type(key, v, "a list");
      return kNoValue;
    }
    return v;
  }
  bool boolean(const char* key) {
    const ValueId v = doc_.find(dict_, key);
    return v != kNoValue && doc_.get_bool(v);
  }

  bool ok() const { return problem_.empty(); }
  const std::string& problem() const { return problem_; }

 private:
  uint64_t missing(const char* key, bool required, uint64_t fallback) {
    if (required) wrong(key, "missing");
    return fallback;
  }
  void wrong_type(const char* key, ValueId v, const char* expected) {
    wrong(key, std::string("is a ") + pickle::kind_name(doc_.kind(v)) + ", expected " + expected);
  }
  void wrong(const char* key, const std::string& what) {
    if (problem_.empty()) problem_ = std::string("'") + key + "' " + what;
  }

  const Document& doc_;
  ValueId dict_;
  std::string problem_;
};

std::string place(const char* list, size_t i) {
  return std::string(list) + "[" + std::to_string(i) + "]";
}

// Each item of `list` as a row: one that is not a dict is skipped and counted, named by
// where_of(its index); `fn(item, where)` reads the others (`where()` names the item for a
// message: made only then, since a string per entry cost more than reading the entry).
// `fn` returns false to stop.
template <typename WhereOf, typename Fn>
void visit_dict_rows(const Document& doc, ValueId list, reader::RowProblems* problems,
                     const WhereOf& where_of, const Fn& fn) {
  size_t i = 0;
  doc.visit_items(list, [&](ValueId item) {
    const size_t index = i++;
    const auto where = [&] { return where_of(index); };
    ++problems->rows;
    if (!doc.is(item, Kind::kDict)) {
      reader::skip_row(
          problems, where(),
          std::string("is a ") + pickle::kind_name(doc.kind(item)) + ", expected a dict");
      return true;
    }
    return fn(item, where);
  });
}

// The segments (and their blocks) of `list`.
void read_segments(const Document& doc, ValueId list, Snapshot* out,
                   reader::RowProblems* problems) {
  const auto where_of = [](size_t index) { return place("segments", index); };
  visit_dict_rows(doc, list, problems, where_of, [&](ValueId item, const auto& where) {
    Fields f(doc, item);
    Segment s;
    const int64_t device = f.sint("device", true, 0);
    s.address = f.uint("address", true);
    s.total_size = f.uint("total_size", true);
    s.allocated_size = f.uint("allocated_size", false);
    s.active_size = f.uint("active_size", false);
    s.stream = uint64_t(f.sint("stream", false, 0));
    s.is_expandable = f.boolean("is_expandable");
    s.frames = f.list("frames");
    const ValueId blocks = f.list("blocks");
    if (f.ok() && (device < 0 || device > std::numeric_limits<int32_t>::max())) {
      reader::skip_row(problems, where(), "'device' " + std::to_string(device) + " is no device");
      return true;
    }
    if (!f.ok()) {
      reader::skip_row(problems, where(), f.problem());
      return true;
    }
    s.device = int32_t(device);
    s.first_block = uint32_t(out->blocks.size());
    uint64_t address = s.address;  // torch 2.0's blocks: each after the one before
    const auto block_where_of = [&](size_t block_index) {
      return where() + ".blocks[" + std::to_string(block_index) + "]";
    };
    visit_dict_rows(
        doc, blocks, problems, block_where_of, [&](ValueId block, const auto& block_where) {
          Fields bf(doc, block);
          Block k;
          k.size = bf.uint("size", true);
          k.address = bf.uint("address", false, address);
          k.requested_size = bf.uint("requested_size", false, k.size);
          const ValueId state = bf.str("state", true);
          k.frames = bf.list("frames");
          if (k.frames == kNoValue) {
            // torch 2.0: the frames of the block's last allocation in its history.
            const ValueId history = bf.list("history");
            ValueId last = kNoValue;
            doc.visit_items(history, [&](ValueId h) {
              last = h;
              return true;
            });
            if (doc.is(last, Kind::kDict)) k.frames = Fields(doc, last).list("frames");
          }
          if (bf.ok()) {
            const std::string_view text = doc.text(state);
            if (text == "active_allocated") {
              k.state = BlockState::kActiveAllocated;
            } else if (text == "active_pending_free") {
              k.state = BlockState::kActivePendingFree;
            } else if (text == "inactive") {
              k.state = BlockState::kInactive;
            } else {
              reader::skip_row(problems, block_where(),
                               "'state' " + reader::quote_for_message(text) +
                                   " is none of active_allocated, active_pending_free, inactive");
              address = k.address + k.size;
              return true;
            }
          } else {
            reader::skip_row(problems, block_where(), bf.problem());
            return true;
          }
          address = k.address + k.size;
          out->blocks.push_back(k);
          return true;
        });
    s.block_count = uint32_t(out->blocks.size() - s.first_block);
    out->segments.push_back(s);
    return true;
  });
}

bool parse_action(std::string_view text, Action* action) {
  static constexpr struct {
    const char* text;
    Action action;
  } kActions[] = {
      {"alloc", Action::kAlloc},
      {"free_requested", Action::kFreeRequested},
      {"free_completed", Action::kFreeCompleted},
      {"segment_alloc", Action::kSegmentAlloc},
      {"segment_free", Action::kSegmentFree},
      {"segment_map", Action::kSegmentMap},
      {"segment_unmap", Action::kSegmentUnmap},
      {"snapshot", Action::kSnapshot},
      {"oom", Action::kOom},
      {"annotate", Action::kAnnotate},
      {"user_defined", Action::kAnnotate},
  };
  for (const auto& a : kActions) {
    if (text == a.text) {
      *action = a.action;
      return true;
    }
  }
  return false;
}

Stage parse_stage(std::string_view text) {
  if (reader::equals_ignore_case(text, "START")) return Stage::kStart;
  if (reader::equals_ignore_case(text, "END")) return Stage::kEnd;
  return Stage::kMark;
}

// An annotation entry's text and stage: `name` and `stage` where it has them; else (the
// record_function entries of torch 2.3-2.4, action user_defined) its first frame's
// filename (the text) and name (START or END); else its user_metadata.
void read_annotation(const Document& doc, Fields* f, TraceEntry* e) {
  e->name = f->str("name", false);
  const ValueId stage = f->str("stage", false);
  if (stage != kNoValue) e->stage = parse_stage(doc.text(stage));
  if (e->name != kNoValue) return;
  ValueId first = kNoValue;
  doc.visit_items(e->frames, [&](ValueId frame) {
    first = frame;
    return false;
  });
  if (doc.is(first, Kind::kDict)) {
    Fields ff(doc, first);
    e->name = ff.str("filename", false);
    const ValueId frame_stage = ff.str("name", false);
    if (frame_stage != kNoValue) e->stage = parse_stage(doc.text(frame_stage));
    e->frames = kNoValue;  // the frame was the annotation, not a stack
  }
  if (e->name == kNoValue) e->name = e->user_metadata;
}

void read_traces(const Document& doc, ValueId traces, Snapshot* out,
                 reader::RowProblems* problems) {
  int32_t device = 0;
  doc.visit_items(traces, [&](ValueId trace) {
    const auto where_of = [&](size_t index) {
      return "device_traces[" + std::to_string(device) + "][" + std::to_string(index) + "]";
    };
    visit_dict_rows(doc, trace, problems, where_of, [&](ValueId entry, const auto& where) {
      Fields f(doc, entry);
      TraceEntry e;
      e.device = device;
      const ValueId action = f.str("action", true);
      if (!f.ok()) {
        reader::skip_row(problems, where(), f.problem());
        return true;
      }
      if (!parse_action(doc.text(action), &e.action)) {
        reader::skip_row(
            problems, where(),
            "'action' " + reader::quote_for_message(doc.text(action)) + " is not one memtap knows");
        return true;
      }
      const bool block = e.action != Action::kOom && e.action != Action::kAnnotate &&
                         e.action != Action::kSnapshot;
      e.addr = f.uint("addr", block);
      e.size = f.uint("size", e.action != Action::kAnnotate);
      e.stream = uint64_t(f.sint("stream", false, 0));
      e.time_us = f.sint("time_us", false, -1);
      e.device_free = f.uint("device_free", false);
      e.frames = f.list("frames");
      e.user_metadata = f.str("user_metadata", false);
      e.compile_context = f.str("compile_context", false);
      if (e.action == Action::kAnnotate) read_annotation(doc, &f, &e);
      if (!f.ok()) {
        reader::skip_row(problems, where(), f.problem());
        return true;
      }
      out->entries.push_back(e);
      return true;
    });
    ++device;
    return true;
  });
}

void read_annotations(const Document& doc, ValueId list, Snapshot* out,
                      reader::RowProblems* problems) {
  const auto where_of = [](size_t index) { return place("external_annotations", index); };
  visit_dict_rows(doc, list, problems, where_of, [&](ValueId item, const auto& where) {
    Fields f(doc, item);
    Annotation a;
    const int64_t device = f.sint("device", false, 0);
    a.name = f.str("name", true);
    const ValueId stage = f.str("stage", false);
    a.time_us = f.sint("time_us", false, -1);
    if (!f.ok()) {
      reader::skip_row(problems, where(), f.problem());
      return true;
    }
    a.device = device >= 0 && device <= std::numeric_limits<int32_t>::max() ? int32_t(device) : 0;
    a.stage = stage != kNoValue ? parse_stage(doc.text(stage)) : Stage::kMark;
    out->annotations.push_back(a);
    return true;
  });
}

std::string no_snapshot(const std::string& what) {
  return "not a PyTorch memory snapshot: " + what +
         "; expected a dict with 'segments' and 'device_traces' "
         "(torch.cuda.memory._dump_snapshot) or a list of segments "
         "(torch.cuda.memory_snapshot())";
}

}  // namespace

bool read_snapshot_layout(const Document& doc, Snapshot* out, reader::RowProblems* problems,
                          std::string* error) {
  *out = Snapshot{};
  const ValueId root = doc.root();
  if (doc.is(root, Kind::kList)) {
    // A bare list of segments: each a dict with an address (or it is no snapshot).
    bool segments = true;
    doc.visit_items(root, [&](ValueId item) {
      segments = doc.is(item, Kind::kDict) && doc.find(item, "address") != kNoValue &&
                 doc.find(item, "blocks") != kNoValue;
      return false;
    });
    if (!segments) {
      *error = no_snapshot("the pickle holds a list of something else");
      return false;
    }
    out->bare_list = true;
    out->has_segments = true;
    read_segments(doc, root, out, problems);
    return true;
  }
  if (!doc.is(root, Kind::kDict)) {
    *error = no_snapshot(std::string("the pickle holds a ") + pickle::kind_name(doc.kind(root)));
    return false;
  }
  const ValueId segments = doc.find(root, "segments");
  const ValueId traces = doc.find(root, "device_traces");
  if (segments == kNoValue && traces == kNoValue) {
    *error = no_snapshot("the pickle's dict has neither 'segments' nor 'device_traces'");
    return false;
  }
  for (const auto& [name, value] : {std::pair{"segments", segments}, {"device_traces", traces}}) {
    if (value != kNoValue && !doc.is(value, Kind::kList)) {
      *error = no_snapshot(std::string("its '") + name + "' is a " +
                           pickle::kind_name(doc.kind(value)) + ", not a list");
      return false;
    }
  }
  bool lists = true;
  doc.visit_items(traces, [&](ValueId trace) {
    lists = doc.is(trace, Kind::kList);
    return lists;
  });
  if (!lists) {
    *error = no_snapshot("its 'device_traces' is not a list of lists");
    return false;
  }
  out->has_segments = segments != kNoValue;
  read_segments(doc, segments, out, problems);
  read_traces(doc, traces, out, problems);
  const ValueId annotations = doc.find(root, "external_annotations");
  if (doc.is(annotations, Kind::kList)) read_annotations(doc, annotations, out, problems);
  return true;
}

}  // namespace memtap::torch_snapshot
