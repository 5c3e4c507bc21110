// See device_curves.h.
#include "monitor/store/export/device_curves.h"

namespace memtap {

int64_t DeviceCurves::value(uint32_t pid, int32_t device, timeline::Curve curve) const {
  timeline::SeriesKey key;
  key.pid = pid;
  key.device = device < 0 ? kHostDevice : device;  // as the timeline files memory of no device
  key.curve = curve;
  const timeline::SeriesId id = timeline_.find(key);
  return id == timeline::kNoSeries ? 0 : timeline_.data(id).value();
}

CurvesNow DeviceCurves::now(uint32_t pid, int32_t device) const {
  return {value(pid, device, timeline::Curve::kAllocated),
          value(pid, device, timeline::Curve::kReserved),
          value(pid, device, timeline::Curve::kActive)};
}

}  // namespace memtap
