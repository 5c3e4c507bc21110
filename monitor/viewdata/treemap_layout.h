// The squarified treemap layout (Bruls, Huizing, van Wijk, 2000): rectangles whose areas are
// proportional to their values and whose sides are as close to square as a greedy row-by-row
// placement makes them, so labels fit. Plain geometry, no Qt: the breakdown draws it.
#pragma once

#include <vector>

namespace memtap::viewdata {

struct TreemapRect {
  double x = 0, y = 0, w = 0, h = 0;
};

// One rectangle per value, in the same order, tiling `area` (values largest first lay out
// best; zero and negative values get empty rectangles).
std::vector<TreemapRect> squarify(const std::vector<double>& values, TreemapRect area);

}  // namespace memtap::viewdata
