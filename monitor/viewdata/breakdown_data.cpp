// See breakdown_data.h.
#include "monitor/viewdata/breakdown_data.h"

#include <algorithm>
#include <map>

#include "monitor/engine/blocks/basis.h"
#include "monitor/engine/timeline/timeline.h"
#include "monitor/report/units.h"
#include "monitor/viewdata/findings.h"
#include "monitor/viewdata/labels.h"

namespace memtap::viewdata {
namespace {

void sort_and_fold(std::vector<BreakdownNode>& nodes, uint64_t total, const BreakdownLimits& l) {
  std::sort(nodes.begin(), nodes.end(), [](const BreakdownNode& a, const BreakdownNode& b) {
    return a.bytes != b.bytes ? a.bytes > b.bytes : a.label < b.label;
  });
  for (BreakdownNode& n : nodes) {
    n.share = total ? double(n.bytes) / double(total) : 0;
    sort_and_fold(n.children, total, l);
  }
  // Keep the largest; fold the rest when there are too many or they are too small to see.
  size_t keep = 0;
  const size_t max_keep = std::max<size_t>(l.max_children, 2) - 1;
  while (keep < nodes.size() && keep < max_keep && (keep == 0 || nodes[keep].share >= l.min_share))
    ++keep;
  if (nodes.size() - keep == 1) keep = nodes.size();  // one left: itself, not "other (1)"
  if (keep >= nodes.size()) return;
  BreakdownNode other;
  other.level = nodes[keep].level;
  other.layer = nodes[keep].layer;
  other.is_mmap = nodes[keep].is_mmap;
  other.folded = nodes.size() - keep;
  for (size_t i = keep; i < nodes.size(); ++i) {
    other.bytes += nodes[i].bytes;
    other.blocks += nodes[i].blocks;
  }
  other.label = "other (" + std::to_string(other.folded) + " smaller)";
  other.share = total ? double(other.bytes) / double(total) : 0;
  nodes.resize(keep);
  nodes.push_back(std::move(other));
}

bool is_pool_group(const BlockGroup& g) {
  return g.layer == Layer::kPta;
}

// Whether a group's blocks are Allocated (basis.h): the host's heap and pinned buffers; on a
// device its pool's blocks where it has a pool, else every layer.
bool allocated(const BlockGroup& g, int32_t device, bool pool) {
  if (device != kHostDevice && !pool) return true;
  return blocks::account_of(device, g.layer, g.is_mmap) == blocks::kPrimaryAccount;
}

size_t count(const std::vector<BreakdownNode>& nodes) {
  size_t n = nodes.size();
  for (const BreakdownNode& c : nodes) n += count(c.children);
  return n;
}

}  // namespace

BreakdownData breakdown_tree(const std::vector<BlockGroup>& groups, int32_t device,
                             const BreakdownLimits& limits, bool pool_seen) {
  BreakdownData d;
  d.device = device;
  const bool pool = pool_seen || std::any_of(groups.begin(), groups.end(), is_pool_group);
  // layer -> owner -> stack; the index's groups are already one per (layer, owner, stack).
  std::map<std::pair<int, bool>, std::map<std::string, std::vector<const BlockGroup*>>> tree;
  for (const BlockGroup& g : groups) {
    tree[{int(g.layer), g.is_mmap}][g.owner].push_back(&g);
    if (!allocated(g, device, pool)) continue;
    d.bytes += g.bytes;
    d.blocks += g.blocks;
  }
  for (const auto& [layer_key, owners] : tree) {
    BreakdownNode layer;
    layer.level = BreakdownNode::Level::kLayer;
    layer.layer = Layer(layer_key.first);
    layer.is_mmap = layer_key.second;
    layer.label = layer.full = layer_label(layer.layer, layer.is_mmap);
    for (const auto& [owner_name, stacks] : owners) {
      BreakdownNode owner;
      owner.level = BreakdownNode::Level::kOwner;
      owner.layer = layer.layer;
      owner.is_mmap = layer.is_mmap;
      owner.label = owner_name.empty() ? "(no owner)" : owner_name;
      owner.full = owner.label;
      owner.filter = owner_name;
      for (const BlockGroup* g : stacks) {
        BreakdownNode stack;
        stack.level = BreakdownNode::Level::kStack;
        stack.layer = layer.layer;
        stack.is_mmap = layer.is_mmap;
        stack.filter = filter_text(g->stack);
        stack.label = g->stack.empty() ? "(no stack)" : stack.filter;
        stack.full = g->stack.empty() ? stack.label : g->stack;
        stack.bytes = g->bytes;
        stack.blocks = g->blocks;
        owner.bytes += g->bytes;
        owner.blocks += g->blocks;
        owner.children.push_back(std::move(stack));
      }
      layer.bytes += owner.bytes;
      layer.blocks += owner.blocks;
      layer.children.push_back(std::move(owner));
    }
    const BlockGroup& first = *owners.begin()->second.front();
    (allocated(first, device, pool) ? d.layers : d.beside).push_back(std::move(layer));
  }
  // Layers are few (HOST, HOST mmap, PTA, ...): never folded.
  for (std::vector<BreakdownNode>* layers : {&d.layers, &d.beside}) {
    std::sort(layers->begin(), layers->end(),
              [](const BreakdownNode& a, const BreakdownNode& b) { return a.bytes > b.bytes; });
    for (BreakdownNode& layer : *layers) {
      layer.share = d.bytes ? double(layer.bytes) / double(d.bytes) : 0;
      sort_and_fold(layer.children, d.bytes, limits);
    }
  }
  return d;
}

BreakdownData compute_breakdown(BlockQueries& blocks, uint32_t pid, int32_t device, int64_t t_ns,
                                const BreakdownLimits& limits) {
  BlockFilter filter;
  filter.pid = pid;
  filter.device = device;
  filter.t0_ns = filter.t1_ns = t_ns;
  const std::vector<BlockGroup> groups = blocks.live_groups(filter);
  // The curves count a device's pool blocks as Allocated over the whole run once it has one
  // (curve_rules.h: the history is rewritten at the first), so before the first block and
  // after the last the whole is nothing, not the driver's segments. A PyTorch run that ends
  // with its tensors freed showed "Allocated 1.4 GiB" (the segments) under a curve at 0.
  const bool pool_seen = device != kHostDevice &&
                         std::none_of(groups.begin(), groups.end(), is_pool_group) &&
                         pool_had_blocks(blocks, pid, device);
  BreakdownData d = breakdown_tree(groups, device, limits, pool_seen);
  d.pid = pid;
  d.t_ns = t_ns;
  d.covered_until_ns = blocks.covered_until_ns();
  return d;
}

int64_t allocated_peak_ns(const EngineView& engine, uint32_t pid, int32_t device) {
  const timeline::ScopeSummary s = engine.analyzer.timeline().summary(pid, device);
  if (s.events == 0) return 0;
  const int64_t t = s.peak[size_t(timeline::Curve::kAllocated)].ts_ns;
  return t == kUnknown ? 0 : t;
}

std::string breakdown_heading(const BreakdownData& data, const std::string& when) {
  std::string text = "Allocated at " + when + ": ";
  if (data.bytes == 0) {
    text += "nothing";
  } else {
    text += bytes_text(double(data.bytes)) + " in " + count_text(data.blocks) +
            (data.blocks == 1 ? " block" : " blocks");
  }
  for (size_t i = 0; i < data.beside.size(); ++i) {
    text += i == 0 ? "; beside it: " : ", ";
    text += data.beside[i].label + " " + bytes_text(double(data.beside[i].bytes));
  }
  return text;
}

size_t breakdown_boxes(const BreakdownData& data) {
  return count(data.layers);
}

}  // namespace memtap::viewdata
