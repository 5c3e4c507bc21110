// memtap_example_native: a toy training loop in plain C++, the workload of scripts/demo.sh.
//
// It allocates the way a native training step does, so a recording of it shows the three
// shapes a memory profiler is for:
//   - per-step activations: a forward pass allocates one std::vector<float> per layer, the
//     backward pass frees them in reverse; the live heap saws up and down every step;
//   - a slow leak: a global "metrics cache" keeps a record for every few steps and is
//     never trimmed nor freed, so live bytes grow step after step and are still live at exit;
//   - a pool: gradient buffers come from a fixed-size block pool that allocates its slabs
//     once and then recycles blocks, so after warm-up it no longer touches malloc.
// It says where it is, as a training program can for memtap (agent/memtap_optional.h, no-ops
// without memtap): a step marker each step, owners on what it allocates (weights,
// activations, gradient pool, metrics cache) and the ranges forward, backward and optimizer.
// So the report names the leak's owner and how much it grows per step, and the peak's
// holders. It runs in well under a second and prints what it did.
#include <chrono>
#include <cmath>
#include <cstddef>
#include <cstdio>
#include <cstdlib>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "agent/memtap_optional.h"

namespace {

// The labels, interned once (0 without memtap: the calls below then do nothing).
struct Labels {
  uint32_t weights = memtap_optional_intern("weights");
  uint32_t activations = memtap_optional_intern("activations");
  uint32_t gradient_pool = memtap_optional_intern("gradient pool");
  uint32_t metrics_cache = memtap_optional_intern("metrics cache");
  uint32_t forward = memtap_optional_intern("forward");
  uint32_t backward = memtap_optional_intern("backward");
  uint32_t optimizer = memtap_optional_intern("optimizer");
};

// What is allocated in the scope carries the owner.
class Owner {
 public:
  explicit Owner(uint32_t id) { memtap_optional_owner_push(id); }
  ~Owner() { memtap_optional_owner_pop(); }
  Owner(const Owner&) = delete;
  Owner& operator=(const Owner&) = delete;
};

// The scope is a range of the run, a bar under memtap's curves.
class Range {
 public:
  explicit Range(uint32_t id) : id_(id) { memtap_optional_range_start(id_); }
  ~Range() { memtap_optional_range_end(id_); }
  Range(const Range&) = delete;
  Range& operator=(const Range&) = delete;

 private:
  uint32_t id_;
};

constexpr int kSteps = 300;
constexpr int kBatch = 16;
constexpr int kLayerWidths[] = {256, 512, 512, 256, 64};
constexpr int kLayers = sizeof(kLayerWidths) / sizeof(kLayerWidths[0]);
constexpr int kCacheEvery = 3;  // the leak: one cache record every 3 steps
constexpr size_t kCacheRecordFloats = 2048;

// A fixed-size block pool: slabs of kBlocksPerSlab blocks, a free list threaded through
// the free blocks. Owns its slabs; blocks go back to the free list, never to malloc.
class BlockPool {
 public:
  explicit BlockPool(size_t block_bytes) : block_bytes_(round_up(block_bytes)) {}

  void* acquire() {
    if (!free_list_) grow();
    FreeBlock* block = free_list_;
    free_list_ = block->next;
    in_use_++;
    return block;
  }

  void release(void* p) {
    auto* block = static_cast<FreeBlock*>(p);
    block->next = free_list_;
    free_list_ = block;
    in_use_--;
  }

  size_t slabs() const { return slabs_.size(); }
  size_t reserved_bytes() const { return slabs_.size() * kBlocksPerSlab * block_bytes_; }
  size_t in_use() const { return in_use_; }

 private:
  struct FreeBlock {
    FreeBlock* next;
  };
  static constexpr size_t kBlocksPerSlab = 16;

  static size_t round_up(size_t n) {
    const size_t a = alignof(std::max_align_t);
    n = n < sizeof(FreeBlock) ? sizeof(FreeBlock) : n;
    return (n + a - 1) / a * a;
  }

  void grow() {
    slabs_.emplace_back(new std::byte[kBlocksPerSlab * block_bytes_]);
    std::byte* base = slabs_.back().get();
    for (size_t i = 0; i < kBlocksPerSlab; i++) {
      auto* block = reinterpret_cast<FreeBlock*>(base + i * block_bytes_);
      block->next = free_list_;
      free_list_ = block;
    }
  }

  size_t block_bytes_;
  FreeBlock* free_list_ = nullptr;
  size_t in_use_ = 0;
  std::vector<std::unique_ptr<std::byte[]>> slabs_;
};

struct Layer {
  int in = 0;
  int out = 0;
  std::vector<float> weights;  // out x in
};

std::vector<Layer> make_model() {
  std::vector<Layer> layers;
  int in = kLayerWidths[0];
  for (int l = 1; l < kLayers; l++) {
    Layer layer{in, kLayerWidths[l], {}};
    layer.weights.resize(static_cast<size_t>(layer.in) * layer.out);
    for (size_t i = 0; i < layer.weights.size(); i++)
      layer.weights[i] = std::sin(0.37f * static_cast<float>(i));
    layers.push_back(std::move(layer));
    in = kLayerWidths[l];
  }
  return layers;
}

// One step's forward pass on a batch; returns a scalar "loss". Every activation is a fresh
// vector, as a framework without a caching allocator would do.
float train_step(const Labels& labels, const std::vector<Layer>& model, int step,
                 BlockPool& grad_pool, size_t* peak_activation_bytes) {
  std::optional<Range> phase(std::in_place, labels.forward);
  std::optional<Owner> owner(std::in_place, labels.activations);
  std::vector<std::vector<float>> activations;
  activations.emplace_back(static_cast<size_t>(kBatch) * kLayerWidths[0]);
  for (size_t i = 0; i < activations[0].size(); i++)
    activations[0][i] = std::cos(static_cast<float>(i + step));

  size_t live = activations[0].size() * sizeof(float);
  for (const Layer& layer : model) {
    const std::vector<float>& x = activations.back();
    std::vector<float> y(static_cast<size_t>(kBatch) * layer.out);
    // A thin slice of a matmul keeps the step cheap but the memory real.
    for (int b = 0; b < kBatch; b++)
      for (int o = 0; o < layer.out; o++)
        y[b * layer.out + o] = std::tanh(x[b * layer.in + o % layer.in] *
                                         layer.weights[static_cast<size_t>(o) * layer.in]);
    live += y.size() * sizeof(float);
    activations.push_back(std::move(y));
  }
  if (live > *peak_activation_bytes) *peak_activation_bytes = live;

  // "Backward": one gradient buffer per layer from the pool, returned at the end of the step.
  owner.reset();
  phase.emplace(labels.backward);
  std::vector<void*> grads;
  {
    Owner pool(labels.gradient_pool);  // its slabs, the first time round
    for (size_t l = 0; l < model.size(); l++) grads.push_back(grad_pool.acquire());
  }
  float loss = 0;
  for (float v : activations.back()) loss += v * v;
  for (void* g : grads) grad_pool.release(g);

  // Activations are freed here, newest first, as a backward pass would.
  while (!activations.empty()) activations.pop_back();
  return loss / (kBatch * kLayerWidths[kLayers - 1]);
}

}  // namespace

int main() {
  auto start = std::chrono::steady_clock::now();
  const Labels labels;

  std::vector<Layer> model;
  {
    Owner weights(labels.weights);
    model = make_model();
  }
  size_t weight_bytes = 0;
  for (const Layer& layer : model) weight_bytes += layer.weights.size() * sizeof(float);

  BlockPool grad_pool(64 * 1024);
  // The leak, as such leaks usually are: a process-wide cache nobody trims or deletes.
  auto* metrics_cache = new std::map<int, std::vector<float>>();
  size_t peak_activation_bytes = 0;
  float loss = 0;
  float first_loss = 0;

  for (int step = 0; step < kSteps; step++) {
    memtap_optional_step();
    loss = train_step(labels, model, step, grad_pool, &peak_activation_bytes);
    if (step == 0) first_loss = loss;
    if (step % kCacheEvery == 0) {
      Owner cache(labels.metrics_cache);
      (*metrics_cache)[step].assign(kCacheRecordFloats, loss);
    }
    // "Optimizer step": shrink the output layer a little, so the loss goes down.
    Range optimizer(labels.optimizer);
    for (float& w : model.back().weights) w *= 0.995f;
  }

  double ms =
      std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  size_t cache_bytes = metrics_cache->size() * kCacheRecordFloats * sizeof(float);
  std::printf("memtap_example_native: %d steps, batch %d, %d layers\n", kSteps, kBatch,
              kLayers - 1);
  std::printf("  weights            %zu KiB (allocated once)\n", weight_bytes / 1024);
  std::printf("  activations        %zu KiB peak per step (allocated and freed every step)\n",
              peak_activation_bytes / 1024);
  std::printf("  gradient pool      %zu slabs, %zu KiB reserved, %zu blocks in use at the end\n",
              grad_pool.slabs(), grad_pool.reserved_bytes() / 1024, grad_pool.in_use());
  std::printf("  metrics cache      %zu records, %zu KiB, still live at exit (a slow leak)\n",
              metrics_cache->size(), cache_bytes / 1024);
  std::printf("  loss %.4f -> %.4f in %.1f ms\n", first_loss, loss, ms);
  return 0;
}
