// Fuzzes the PyTorch snapshot reading (monitor/store/reader/torch/): the plain-data pickle
// reader on the input's bytes, whatever they are (an error is one line naming its byte),
// and the whole file as `memtap report FILE` reads it, held and streamed (the snapshot's
// layout, its events through the pool pairing, the time order).
//
// Seeds: the small snapshots of ../shared/data/torch_snapshots, and
// tests/fuzz/seeds/torch_snapshot (every layout and action, made by Python's pickle).
#include <cstdint>
#include <string>

#include "monitor/store/reader/torch/pickle_reader.h"
#include "tests/fuzz/fuzz_support.h"

using namespace memtap;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  pickle::Document doc;
  std::string error;
  if (!pickle::read_pickle(std::string(reinterpret_cast<const char*>(data), size), &doc, &error)) {
    if (error.rfind("byte ", 0) != 0) fuzz::fail("a pickle error does not name its byte", error);
    if (error.find('\n') != std::string::npos) fuzz::fail("a pickle error is not one line", error);
  } else if (doc.root() >= doc.value_count()) {
    fuzz::fail("the pickle's value is not in its document");
  }
  static const std::string path = fuzz::input_path("torch_snapshot", ".pickle");
  fuzz::write_input(path, data, size);
  fuzz::read_both_ways(path);
  fuzz::export_as_snapshot(path);
  return 0;
}
