// See labels.h.
#include "monitor/viewdata/labels.h"

namespace memtap::viewdata {

const char* layer_label(Layer layer, bool is_mmap) {
  switch (layer) {
    case Layer::kHost:
      return is_mmap ? "HOST mmap" : "HOST";
    case Layer::kHostPinned:
      return "HOST_PINNED";
    case Layer::kHal:
      return "HAL";
    case Layer::kPta:
      return "PTA";
    case Layer::kPtaWorkspace:
      return "PTA_WORKSPACE";
    case Layer::kAtb:
      return "ATB";
    case Layer::kMindspore:
      return "MINDSPORE";
    case Layer::kOther:
      return "other layer";
  }
  return "?";
}

}  // namespace memtap::viewdata
