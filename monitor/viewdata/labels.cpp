// See labels.h.
#include "monitor/viewdata/labels.h"

namespace memtap::viewdata {

const char* layer_label(Layer layer, bool is_mmap) {
  return layer_name(layer, is_mmap);
}

}  // namespace memtap::viewdata
