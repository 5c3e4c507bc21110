// See treemap_layout.h. Rows are laid along the shorter side of the space left; a value
// joins the current row while that does not make the row's worst aspect ratio worse.
#include "monitor/viewdata/treemap_layout.h"

#include <algorithm>
#include <cstddef>

namespace memtap::viewdata {
namespace {

// The worst aspect ratio of a row of areas summing to `sum` along a side of length `side`.
double worst(double min_area, double max_area, double sum, double side) {
  const double s2 = side * side, sum2 = sum * sum;
  return std::max(s2 * max_area / sum2, sum2 / (s2 * min_area));
}

}  // namespace

std::vector<TreemapRect> squarify(const std::vector<double>& values, TreemapRect area) {
  std::vector<TreemapRect> out(values.size(), TreemapRect{area.x, area.y, 0, 0});
  double total = 0;
  for (double v : values) total += std::max(v, 0.0);
  if (total <= 0 || area.w <= 0 || area.h <= 0) return out;
  const double scale = area.w * area.h / total;  // value -> area
  TreemapRect free = area;
  size_t i = 0;
  while (i < values.size()) {
    if (values[i] <= 0) {
      ++i;
      continue;
    }
    const bool horizontal = free.w >= free.h;  // the row stands along the shorter side
    const double side = horizontal ? free.h : free.w;
    size_t end = i;
    double sum = 0, lo = 0, hi = 0, current = 0;
    while (end < values.size()) {
      const double a = std::max(values[end], 0.0) * scale;
      if (a <= 0) {
        ++end;
        continue;
      }
      const double nlo = sum == 0 ? a : std::min(lo, a), nhi = std::max(hi, a);
      const double next = worst(nlo, nhi, sum + a, side);
      if (sum > 0 && next > current) break;
      sum += a;
      lo = nlo;
      hi = nhi;
      current = next;
      ++end;
    }
    const double thick = sum / side;  // the row's thickness
    double along = 0;
    for (size_t k = i; k < end; ++k) {
      const double a = std::max(values[k], 0.0) * scale;
      if (a <= 0) continue;
      const double len = a / thick;
      out[k] = horizontal ? TreemapRect{free.x, free.y + along, thick, len}
                          : TreemapRect{free.x + along, free.y, len, thick};
      along += len;
    }
    if (horizontal) {
      free.x += thick;
      free.w = std::max(0.0, free.w - thick);
    } else {
      free.y += thick;
      free.h = std::max(0.0, free.h - thick);
    }
    i = end;
  }
  return out;
}

}  // namespace memtap::viewdata
