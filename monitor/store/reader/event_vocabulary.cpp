// msMemScope's event words mapped onto the event model (see event_vocabulary.h).
#include "monitor/store/reader/event_vocabulary.h"

namespace memtap::reader {
namespace {

bool is_separator(char c) {
  return c == ' ' || c == '_' || c == '-';
}

// Whether `text` spells `word` (upper case, no separators), ignoring case and separators.
bool spells(std::string_view text, std::string_view word) {
  size_t w = 0;
  for (char c : text) {
    if (is_separator(c)) continue;
    if (c >= 'a' && c <= 'z') c = char(c - 'a' + 'A');
    if (w == word.size() || c != word[w]) return false;
    ++w;
  }
  return w == word.size();
}

struct Word {
  std::string_view word;
  MemEventKind kind;
};

MemEventKind kind_of(std::string_view event_type, std::initializer_list<Word> words) {
  for (const Word& entry : words) {
    if (spells(event_type, entry.word)) return entry.kind;
  }
  return MemEventKind::kOther;
}

}  // namespace

Layer layer_from_text(std::string_view text) {
  // The common words first, spelled as msMemScope and memtap write them: no loop needed.
  if (text == "HOST") return Layer::kHost;
  if (text == "PTA") return Layer::kPta;
  if (text == "HAL") return Layer::kHal;
  if (spells(text, "HOST")) return Layer::kHost;
  if (spells(text, "HOSTPINNED")) return Layer::kHostPinned;
  if (spells(text, "HAL")) return Layer::kHal;
  if (spells(text, "PTA")) return Layer::kPta;
  if (spells(text, "PTAWORKSPACE")) return Layer::kPtaWorkspace;
  if (spells(text, "ATB")) return Layer::kAtb;
  if (spells(text, "MINDSPORE")) return Layer::kMindspore;
  return Layer::kOther;
}

EventClass classify_event(std::string_view event, std::string_view event_type) {
  using K = MemEventKind;
  if (event == "MALLOC" || spells(event, "MALLOC"))
    return {K::kMalloc, layer_from_text(event_type)};
  if (event == "FREE" || spells(event, "FREE")) return {K::kFree, layer_from_text(event_type)};
  // memtap's: a pool block whose FREE was pending went back to the pool (Event Type: its pool).
  if (spells(event, "FREECOMPLETED")) return {K::kFreeCompleted, layer_from_text(event_type)};
  if (spells(event, "ACCESS")) return {K::kAccess, Layer::kOther};
  if (spells(event, "OPLAUNCH")) {
    // ATB_START/ATB_END are the same operator boundaries for ATB operators.
    return {kind_of(event_type, {{"ATENSTART", K::kOpStart},
                                 {"ATENEND", K::kOpEnd},
                                 {"ATBSTART", K::kOpStart},
                                 {"ATBEND", K::kOpEnd}}),
            Layer::kOther};
  }
  if (spells(event, "KERNELLAUNCH")) {
    // KERNEL_START/KERNEL_END time a kernel's execution, not its launch: not counted as
    // launches, kept as kOther.
    if (event_type.empty() || spells(event_type, "KERNELLAUNCH")) {
      return {K::kKernelLaunch, Layer::kOther};
    }
    return {K::kOther, Layer::kOther};
  }
  if (spells(event, "MSTX")) {
    return {
        kind_of(event_type,
                {{"MARK", K::kMark}, {"RANGESTART", K::kRangeStart}, {"RANGEEND", K::kRangeEnd}}),
        Layer::kOther};
  }
  if (spells(event, "SYSTEM")) {
    return {
        kind_of(event_type,
                {{"STARTTRACE", K::kTraceStart}, {"STOPTRACE", K::kTraceStop}, {"STEP", K::kStep}}),
        Layer::kOther};
  }
  if (spells(event, "SNAPSHOT")) {
    // memtap's SNAPSHOT of a device's framework pool says its layer; msMemScope's say SNAPSHOT.
    return {K::kSnapshot, spells(event_type, "PTA") ? Layer::kPta : Layer::kOther};
  }
  if (spells(event, "OOMDETAIL")) {
    // OOM_RECENT_ALLOC (msMemScope's newest blocks at an OOM) is kept, not analysed.
    if (spells(event_type, "OOMTOPALLOC")) return {K::kOomTopAlloc, Layer::kOther};
    if (spells(event_type, "OOMRECENTALLOC")) return {K::kOther, Layer::kOther};
    return {K::kOom, Layer::kOther};
  }
  return {K::kOther, Layer::kOther};
}

}  // namespace memtap::reader
