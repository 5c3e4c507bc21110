// A bounded list of what a process had of one kind (steps, marks, ranges), in time order,
// that thins evenly instead of dropping from one end: past `cap` entries only every second
// one of those kept stays, then every fourth, and so on, so that a long run is covered from
// end to end, only thinner. Shared by step_marks.h and range_lanes.h.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

namespace memtap {

template <class T>
struct ThinnedTrack {
  std::vector<T> kept;  // every `stride`-th by count, in time order
  uint64_t seen = 0;    // every one of the kind the process had
  uint64_t stride = 1;  // 1: every one is kept
};

// Entries of a track as indexes [first, last).
struct TrackSpan {
  size_t first = 0;
  size_t last = 0;
};

// Counts `m` and keeps it when it is on the stride. `time_of(entry)` is what the track is
// ordered by; an entry older than the last kept is put in its place.
template <class T, class TimeOf>
void keep_thinned(ThinnedTrack<T>& track, const T& m, size_t cap, TimeOf time_of) {
  // Counted from 0, so the first of a kind is always kept, and with it every stride-th.
  const uint64_t index = track.seen++;
  if (index % track.stride != 0) return;
  if (track.kept.size() >= std::max<size_t>(cap, 2)) {
    // Full: keep every second one of those kept (those whose index is a multiple of the
    // doubled stride), and from now on only those.
    size_t out = 0;
    for (size_t i = 0; i < track.kept.size(); i += 2) track.kept[out++] = track.kept[i];
    track.kept.resize(out);
    track.stride *= 2;
    if (index % track.stride != 0) return;
  }
  const int64_t t = time_of(m);
  if (track.kept.empty() || time_of(track.kept.back()) <= t) {
    track.kept.push_back(m);
  } else {
    const auto place = std::upper_bound(track.kept.begin(), track.kept.end(), t,
                                        [&](int64_t a, const T& b) { return a < time_of(b); });
    track.kept.insert(place, m);
  }
}

}  // namespace memtap
