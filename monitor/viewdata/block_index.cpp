// See block_index.h. This file owns the index's thread and the queue it reads: batches of
// events (copied by add() on the engine's thread, with the texts of the string ids they
// bring for the first time), queries and the end of input, in the order they were given.
// The thread pairs the events (block_pairing.h), stores the blocks (block_store.h) and
// answers the queries (block_index_queries.h).
#include "monitor/viewdata/block_index.h"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <limits>
#include <mutex>
#include <thread>

#include "monitor/viewdata/block_index_queries.h"
#include "monitor/viewdata/block_pairing.h"
#include "monitor/viewdata/block_store.h"

namespace memtap::viewdata {

namespace {

class Index final : public BlockIndex {
 public:
  Index(const BlockIndexOptions& options, std::unique_ptr<BlockStore> store)
      : max_queued_(options.max_queued_events),
        wait_for_room_(options.wait_for_room),
        pairing_(options.promote_after_ns),
        store_(std::move(store)),
        queries_(*store_, pairing_) {
    if (store_->failed()) status_.error = store_->error();
    thread_ = std::thread([this] { run(); });
  }

  ~Index() override {
    {
      std::lock_guard lock(mutex_);
      stop_ = true;
    }
    wake_.notify_all();
    thread_.join();
  }

  void add(const MemEvent* events, size_t count, const StringTable& strings) override {
    // Only this thread adds to the queue, so the room seen now can only grow meanwhile.
    const size_t queued = queued_.load(std::memory_order_acquire);
    size_t room = queued < max_queued_ ? max_queued_ - queued : 0;
    if (wait_for_room_) {
      wait_for_room(events, count);
      room = std::numeric_limits<size_t>::max();  // a batch larger than the queue goes whole
    }
    Item item;
    uint64_t dropped = 0;
    int64_t dropped_from = 0, dropped_to = 0;
    for (size_t i = 0; i < count; ++i) {
      const MemEvent& e = events[i];
      const bool is_free = e.kind == MemEventKind::kFree;
      const bool completed = e.kind == MemEventKind::kFreeCompleted;
      if (!is_free && !completed && e.kind != MemEventKind::kMalloc) continue;
      if (room == 0) {
        if (dropped++ == 0) dropped_from = dropped_to = e.ts_ns;
        dropped_from = std::min(dropped_from, e.ts_ns);
        dropped_to = std::max(dropped_to, e.ts_ns);
        continue;
      }
      --room;
      IndexEvent& q = item.events.emplace_back();
      q.ts_ns = e.ts_ns;
      q.addr = e.addr;
      q.pid = e.pid;
      q.device = e.device;
      q.slot = slot_of(e.layer, e.is_mmap);
      q.is_free = is_free;
      q.free_pending = is_free && e.free_pending;
      q.free_completed = completed;
      if (is_free || completed) continue;
      q.size_bytes = e.size_bytes;
      q.allocation_id = e.allocation_id;
      q.tid = e.tid;
      q.name = copy_text(e.name, strings, &item);
      q.owner = copy_text(e.owner, strings, &item);
      q.stack_python = copy_text(e.stack_python, strings, &item);
      q.stack_c = copy_text(e.stack_c, strings, &item);
    }
    const size_t accepted = item.events.size();
    if (accepted + dropped == 0) return;
    {
      std::lock_guard lock(mutex_);
      status_.events_added += accepted + dropped;
      if (dropped != 0) {
        const bool first = status_.events_dropped == 0;
        status_.events_dropped += dropped;
        status_.dropped_from_ns =
            first ? dropped_from : std::min(status_.dropped_from_ns, dropped_from);
        status_.dropped_to_ns = first ? dropped_to : std::max(status_.dropped_to_ns, dropped_to);
      }
      if (accepted != 0 || !item.strings.empty()) {
        status_.queued_events += accepted;
        queued_.fetch_add(accepted, std::memory_order_release);
        items_.push_back(std::move(item));
      }
    }
    wake_.notify_one();
  }

  void finish_input() override {
    Item item;
    item.finish = true;
    push(std::move(item));
  }

  void post(BlockQuery query) override {
    Item item;
    item.query = std::move(query);
    push(std::move(item));
  }

  BlockIndexStatus status() const override {
    std::lock_guard lock(mutex_);
    return status_;
  }

 private:
  struct Item {
    std::vector<IndexEvent> events;
    std::vector<std::pair<uint32_t, std::string>> strings;  // texts new to the index
    BlockQuery query;
    bool finish = false;
  };

  // The id, with its text added to the item the first time the index meets it. Ids the
  // table does not have are taken as no text.
  uint32_t copy_text(uint32_t id, const StringTable& strings, Item* item) {
    if (id == 0 || id >= strings.size()) return 0;
    if (id >= sent_.size()) sent_.resize(std::max<size_t>(id + 1, sent_.size() * 2), 0);
    if (!sent_[id]) {
      sent_[id] = 1;
      item->strings.emplace_back(id, strings.get(id));
    }
    return id;
  }

  // Until the queue has room for the events' MALLOCs and FREEs (or is empty, for a batch
  // larger than it).
  void wait_for_room(const MemEvent* events, size_t count) {
    size_t n = 0;
    for (size_t i = 0; i < count; ++i)
      n += events[i].kind == MemEventKind::kMalloc || events[i].kind == MemEventKind::kFree ||
           events[i].kind == MemEventKind::kFreeCompleted;
    std::unique_lock lock(mutex_);
    room_.wait(lock, [&] {
      return stop_ || status_.queued_events == 0 || status_.queued_events + n <= max_queued_;
    });
  }

  void push(Item item) {
    {
      std::lock_guard lock(mutex_);
      items_.push_back(std::move(item));
    }
    wake_.notify_one();
  }

  void run() {
    pthread_setname_np(pthread_self(), "memtap-blocks");
    std::unique_lock lock(mutex_);
    for (;;) {
      wake_.wait(lock, [&] { return stop_ || !items_.empty(); });
      if (stop_) return;
      Item item = std::move(items_.front());
      items_.pop_front();
      lock.unlock();
      process(item);
      lock.lock();
      const size_t n = item.events.size();
      status_.events_indexed += n;
      status_.queued_events -= n;
      queued_.fetch_sub(n, std::memory_order_release);
      status_.blocks = pairing_.blocks();
      status_.unmatched_frees = pairing_.unmatched_frees();
      status_.pending_frees = pairing_.pending_frees();
      status_.indexed_until_ns = pairing_.newest_ns();
      if (status_.error.empty() && store_->failed()) status_.error = store_->error();
      if (n != 0 && wait_for_room_) room_.notify_all();
    }
  }

  void process(Item& item) {
    for (const auto& [id, text] : item.strings) store_->add_string(id, text);
    for (const IndexEvent& e : item.events) pairing_.add(e, *store_);
    events_ += item.events.size();
    if (item.finish) {
      pairing_.store_all(*store_);
      store_->commit();
    }
    if (item.query) {
      queries_.sync(events_);
      item.query(queries_);
    }
  }

  const size_t max_queued_;
  const bool wait_for_room_;
  std::vector<uint8_t> sent_;  // add()'s: string ids whose text was copied

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable room_;  // wait_for_room: the thread took events
  std::deque<Item> items_;        // guarded by mutex_
  BlockIndexStatus status_;       // guarded by mutex_
  bool stop_ = false;             // guarded by mutex_
  std::atomic<size_t> queued_{0};

  // The index thread's.
  BlockPairing pairing_;
  std::unique_ptr<BlockStore> store_;
  IndexQueries queries_;
  uint64_t events_ = 0;
  std::thread thread_;
};

}  // namespace

bool pool_had_blocks(BlockQueries& q, uint32_t pid, int32_t device, int64_t until_ns) {
  BlockFilter f;
  f.pid = pid;
  f.device = device;
  f.t1_ns = until_ns;  // live at some time up to then: allocated at or before it
  f.layer = Layer::kPta;
  return q.largest(f, 1).matching_blocks > 0;
}

std::unique_ptr<BlockIndex> BlockIndex::create(const BlockIndexOptions& options,
                                               std::string* error) {
  auto store = BlockStore::create(options.path, options.max_file_bytes, error);
  if (!store) return nullptr;
  return std::make_unique<Index>(options, std::move(store));
}

}  // namespace memtap::viewdata
