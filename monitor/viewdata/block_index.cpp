// See block_index.h. This file owns the index's thread and the queue it reads: batches of
// events (copied by add() on the engine's thread, with the texts of the string ids they
// bring for the first time), queries and the end of input, in the order they were given.
// The thread pairs the events (block_pairing.h), stores the blocks (block_store.h) and
// answers the queries (block_index_queries.h).
#include "monitor/viewdata/block_index.h"

#include <pthread.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <limits>
#include <mutex>
#include <optional>
#include <thread>

#include "common/clock.h"
#include "monitor/viewdata/block_index_queries.h"
#include "monitor/viewdata/block_pairing.h"
#include "monitor/viewdata/block_spool.h"
#include "monitor/viewdata/block_store.h"

namespace memtap::viewdata {

namespace {

class Index final : public BlockIndex {
 public:
  Index(const BlockIndexOptions& options, std::unique_ptr<BlockStore> store,
        std::unique_ptr<BlockSpool> spool, const std::string& spool_error)
      : max_queued_(options.max_queued_events),
        wait_for_room_(options.wait_for_room),
        spool_(std::move(spool)),
        pairing_(options.promote_after_ns),
        store_(std::move(store)),
        queries_(*store_, pairing_) {
    if (store_->failed()) status_.error = store_->error();
    status_.spool_error = spool_error;
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
    Item item;
    for (size_t i = 0; i < count; ++i) {
      const MemEvent& e = events[i];
      const bool is_free = e.kind == MemEventKind::kFree;
      const bool completed = e.kind == MemEventKind::kFreeCompleted;
      if (!is_free && !completed && e.kind != MemEventKind::kMalloc) continue;
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
    const size_t n = item.events.size();
    if (n == 0) return;
    // Where the events go, in the order they must be indexed: into the queue while it has
    // room and nothing waits on disk (only this thread adds, so the room seen now can only
    // grow meanwhile, and only this thread starts the spool); else, the whole batch, after
    // what waits on disk; else (no spool, or it failed) as many as the queue has room for,
    // and the rest dropped.
    size_t keep = n;
    if (wait_for_room_) {
      wait_for_room(n);
    } else {
      const size_t queued = queued_.load(std::memory_order_acquire);
      const size_t room = queued < max_queued_ ? max_queued_ - queued : 0;
      const bool behind_spool = spool_ != nullptr && spool_->unread_bytes() != 0;
      keep = behind_spool ? 0 : std::min(n, room);
    }
    std::string spool_error;
    bool spooled = false;
    if (keep < n && spool_ != nullptr)
      spooled = spool_->append(item.strings, item.events, &spool_error);
    const size_t dropped = spooled ? 0 : n - keep;
    int64_t from_ns = std::numeric_limits<int64_t>::max(), to_ns = 0;
    for (size_t i = spooled ? 0 : keep; i < n; ++i) {
      from_ns = std::min(from_ns, item.events[i].ts_ns);
      to_ns = std::max(to_ns, item.events[i].ts_ns);
    }
    if (spooled) {
      item.strings.clear();  // went with the batch
      item.events.clear();
    } else {
      // The texts go ahead either way: they are keyed by id, and later events may use them.
      item.events.resize(keep);
    }
    {
      std::lock_guard lock(mutex_);
      status_.events_added += n;
      if (spooled) {
        ++spooled_batches_;
        status_.spooled_events += n;
        status_.queued_events += n;
        spooled_to_ns_ = std::max(spooled_to_ns_, to_ns);
      }
      if (!spool_error.empty()) status_.spool_error = spool_error;
      if (dropped != 0) count_dropped(dropped, from_ns, to_ns);
      if (!item.events.empty() || !item.strings.empty()) {
        status_.queued_events += item.events.size();
        queued_.fetch_add(item.events.size(), std::memory_order_release);
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

  void pace_by(std::shared_ptr<const CpuShare> share) override {
    std::lock_guard lock(mutex_);
    share_ = std::move(share);
    pacer_.emplace(share_.get(), CpuPacer::Follows::kView);
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

  // Until the queue has room for `n` events (or is empty, for a batch larger than it).
  void wait_for_room(size_t n) {
    std::unique_lock lock(mutex_);
    room_.wait(lock, [&] {
      return stop_ || status_.queued_events == 0 || status_.queued_events + n <= max_queued_;
    });
  }

  // With mutex_ held.
  void count_dropped(uint64_t dropped, int64_t from_ns, int64_t to_ns) {
    const bool first = status_.events_dropped == 0;
    status_.events_dropped += dropped;
    status_.dropped_from_ns = first ? from_ns : std::min(status_.dropped_from_ns, from_ns);
    status_.dropped_to_ns = first ? to_ns : std::max(status_.dropped_to_ns, to_ns);
  }

  void push(Item item) {
    {
      std::lock_guard lock(mutex_);
      if (item.query) ++queries_waiting_;
      items_.push_back(std::move(item));
    }
    wake_.notify_one();
  }

  // Takes what is queued in memory first (queries, the end of input, and the events queued
  // before the spool began), then what waits on disk. So a view's query is answered from what
  // is indexed so far, behind a queue of at most max_queued_events, not behind a flood's
  // whole backlog; the end of input waits for the spool, which holds events given before it.
  void run() {
    pthread_setname_np(pthread_self(), "memtap-blocks");
    std::unique_lock lock(mutex_);
    for (;;) {
      wake_.wait(lock, [&] { return stop_ || !items_.empty() || spooled_batches_ != 0; });
      if (stop_) return;
      // While the program runs and the thread paces itself, a query goes first: behind a
      // paced queue of events every view would wait.
      auto next = items_.begin();
      if (queries_waiting_ != 0 && share_ && share_->limited.load(std::memory_order_relaxed)) {
        next =
            std::find_if(items_.begin(), items_.end(), [](const Item& i) { return bool(i.query); });
      }
      const bool query_first = next != items_.begin();
      const bool from_spool =
          !query_first && (items_.empty() || (items_.front().finish && spooled_batches_ != 0));
      Item item;
      uint64_t lost = 0;
      std::string spool_error;
      // Whether events wait behind this item, for a query's covered_until_ns().
      const bool backlog = status_.queued_events != 0;
      if (from_spool) {
        --spooled_batches_;
        lock.unlock();
        SpooledBatch batch;
        if (spool_->read(&batch, &lost, &spool_error) == BlockSpool::Read::kBatch) {
          item.strings = std::move(batch.strings);
          item.events = std::move(batch.events);
        }
      } else {
        item = std::move(*next);
        items_.erase(next);
        if (item.query) --queries_waiting_;
        lock.unlock();
      }
      process(item, backlog);
      lock.lock();
      const size_t n = item.events.size();
      status_.events_indexed += n;
      status_.queued_events -= n;
      if (from_spool) {
        status_.spooled_events -= n;
        if (!spool_error.empty()) {
          // A batch the spool could not give back is dropped, as a full queue's events are.
          status_.spool_error = spool_error;
          status_.spooled_events -= lost;
          status_.queued_events -= lost;
          count_dropped(lost, status_.indexed_until_ns, spooled_to_ns_);
        }
      } else {
        queued_.fetch_sub(n, std::memory_order_release);
      }
      status_.blocks = pairing_.blocks();
      status_.unmatched_frees = pairing_.unmatched_frees();
      status_.pending_frees = pairing_.pending_frees();
      status_.indexed_until_ns = pairing_.newest_ns();
      if (status_.error.empty() && store_->failed()) status_.error = store_->error();
      if (n != 0 && wait_for_room_) room_.notify_all();
      if (n != 0 && pacer_) pace(lock);
    }
  }

  // With mutex_ held: waits out what the thread owes its share (CpuPacer), a look at a time
  // (the share and the limit change while it waits: the program ends), and no longer once a
  // query waits: a view is not kept waiting for the program's sake, and what the query costs
  // is owed after it.
  void pace(std::unique_lock<std::mutex>& lock) {
    constexpr int64_t kLookNs = 25'000'000;
    for (;;) {
      const int64_t owed =
          pacer_->owed_wait_ns(monotonic_ns(), thread_cpu_ns(), pacer_->busy_probe());
      if (owed <= 0) return;
      ++status_.paced_waits;
      if (wake_.wait_for(lock, std::chrono::nanoseconds(std::min(owed, kLookNs)),
                         [&] { return stop_ || queries_waiting_ != 0; })) {
        return;
      }
    }
  }

  void process(Item& item, bool backlog) {
    for (const auto& [id, text] : item.strings) store_->add_string(id, text);
    for (const IndexEvent& e : item.events) pairing_.add(e, *store_);
    events_ += item.events.size();
    if (item.finish) {
      pairing_.store_all(*store_);
      store_->commit();
    }
    if (item.query) {
      queries_.sync(events_, backlog ? pairing_.newest_ns() : std::numeric_limits<int64_t>::max());
      item.query(queries_);
    }
  }

  const size_t max_queued_;
  const bool wait_for_room_;
  // Appended to by add(), read by the thread; null when there is none (a replay waits instead).
  const std::unique_ptr<BlockSpool> spool_;
  std::vector<uint8_t> sent_;  // add()'s: string ids whose text was copied

  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::condition_variable room_;  // wait_for_room: the thread took events
  std::deque<Item> items_;        // guarded by mutex_
  BlockIndexStatus status_;       // guarded by mutex_
  uint64_t spooled_batches_ = 0;  // guarded by mutex_: batches on disk the thread has not read
  int64_t spooled_to_ns_ = 0;     // guarded by mutex_: the newest event ever spooled
  bool stop_ = false;             // guarded by mutex_
  size_t queries_waiting_ = 0;    // guarded by mutex_: queries in items_
  // Guarded by mutex_: what the thread paces itself by (pace_by); none in a replay.
  std::shared_ptr<const CpuShare> share_;
  std::optional<CpuPacer> pacer_;
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
  // Without a spool the index still works, and drops in a flood, as it says.
  std::unique_ptr<BlockSpool> spool;
  std::string spool_error;
  if (!options.wait_for_room && options.max_spool_bytes != 0) {
    spool = BlockSpool::create(options.max_spool_bytes, &spool_error);
  }
  return std::make_unique<Index>(options, std::move(store), std::move(spool), spool_error);
}

}  // namespace memtap::viewdata
