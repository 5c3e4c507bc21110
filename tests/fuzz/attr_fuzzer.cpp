// Fuzzes the Attr column's parser (attr_parser.h): the input is one Attr text, split into
// pairs and then decoded as the Attr of rows of each kind whose keys mean something
// different (a block, a snapshot, an OOM, an access), as a database or CSV row would be.
//
// Every pair must point into the text or into the scratch space as it is at the end: a view
// left behind in scratch space that moved would be read later as freed memory.
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

#include "monitor/store/reader/attr_parser.h"
#include "monitor/store/reader/dump_row_decoder.h"
#include "tests/fuzz/fuzz_support.h"

using namespace memtap;
using namespace memtap::reader;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  std::vector<AttrPair> pairs;
  std::string scratch;
  std::string error;
  if (split_attr(text, &pairs, &scratch, &error)) {
    if (!error.empty()) fuzz::fail("split_attr succeeded with an error", error);
    // attr_parser.h: views point into the text or into the scratch string.
    const auto inside = [](std::string_view view, std::string_view whole) {
      return view.data() >= whole.data() &&
             view.data() + view.size() <= whole.data() + whole.size();
    };
    for (const AttrPair& pair : pairs) {
      for (std::string_view view : {pair.key, pair.value}) {
        if (!view.empty() && !inside(view, text) && !inside(view, scratch)) {
          fuzz::fail("a pair points outside the text and the scratch space");
        }
      }
    }
  } else if (error.rfind("offset ", 0) != 0 || error.find('\n') != std::string::npos) {
    fuzz::fail("split_attr's error is not one line starting with the offset", error);
  }

  StringTable strings;
  DumpRowDecoder decoder(&strings);
  for (const char* event : {"MALLOC", "FREE", "SNAPSHOT", "OOM_DETAIL", "ACCESS", "SYSTEM"}) {
    DumpFields row;
    row.event = event;
    row.event_type = std::string_view(event) == "SYSTEM" ? "START_TRACE" : "PTA";
    row.name = "N/A";
    row.device = "0";
    row.ptr = "N/A";
    row.attr = text;
    row.timestamp.type = NumberField::Type::kInteger;
    row.timestamp.integer = 1779862930000000000;
    MemEvent decoded;
    std::string problem;
    if (!decoder.decode(row, &decoded, &problem) &&
        (problem.empty() || problem.find('\n') != std::string::npos)) {
      fuzz::fail("a row was refused without a one-line problem", problem);
    }
    for (uint32_t id : {decoded.name, decoded.owner, decoded.stack_python, decoded.stack_c}) {
      if (id >= strings.size()) fuzz::fail("decoded row refers to a string that does not exist");
    }
  }
  return 0;
}
