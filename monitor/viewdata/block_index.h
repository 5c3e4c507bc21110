// Every block of a session - where it lived (process, device, layer, address, size) and when
// (allocated, freed) - for the views that show blocks: the lifetime graph, the pool at an
// instant, the breakdown at an instant and the block table.
//
// The engine keeps only the live blocks and aggregates of the finished ones (its memory must
// not grow with the session), so the window keeps its own index of blocks, on disk: a
// temporary SQLite file, written and queried by one thread of its own. Events come in from
// the engine's thread (add(), an EventTap), in time order, and are paired there the way the
// engine pairs them: a FREE closes the live block at its (process, device, layer, address);
// a MALLOC over a live block closes the old one at that moment; a FREE that finds nothing
// is counted and ignored. A PTA block whose FREE said free_pending ends at that FREE too
// (its lifetime, as the engine counts it: monitor/engine/blocks/block_analyzer.h), and its
// wait for the other stream, up to its FREE_COMPLETED, is kept apart: the pool view draws
// such a block in a state of its own (BlockQueries::pending).
//
// Storage (why it is fast enough to keep up with a live session): a block gets its row
// once, when it is freed, in one multi-row INSERT with the other blocks freed around then,
// keyed by its block id (ids are given in allocation order, so most inserts land at the end
// of the table). Blocks that live longer than `promote_after_ns` of event time get their row
// early, with no free time, and it is updated when they are freed; those rows are in a
// second table, by lifetime class, so that "what was live at t" reads the rows allocated
// shortly before t and, of the longer-lived ones, those whose class reaches t, never the
// whole table (block_store.h, block_scan.h). The young blocks still live (allocated in the
// last promote_after_ns) are in memory only, and every query sees them too.
//
// Bounded: when events arrive faster than the index stores them, up to `max_queued_events`
// wait in memory; past that, in a live session, they wait on disk (block_spool.h), up to
// `max_spool_bytes`, and the index catches up once the flood is over. Only past that (or when
// the disk refuses them) are they dropped from the index (never from the recording or the
// engine) and counted, with the time span they covered, so the views can say what they miss.
// Queries are answered ahead of the events waiting on disk: a view shows what is indexed so
// far (indexed_until_ns) rather than wait for a flood's whole backlog.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <limits>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/cpu_share.h"
#include "monitor/model/mem_event.h"

namespace memtap::viewdata {

constexpr int64_t kStillLive = std::numeric_limits<int64_t>::max();  // free_ns of a live block

struct BlockIndexOptions {
  // The index's SQLite file; removed with the index. "" for a fresh file in $TMPDIR (/tmp).
  std::string path;
  int64_t promote_after_ns = 50'000'000;
  size_t max_queued_events = size_t{1} << 20;
  // A replay: add() waits for room rather than drop events (its file can be read no faster
  // than the index takes it). A live session must not wait: past the queue its events wait
  // on disk, and past that it drops them, and says so.
  bool wait_for_room = false;
  // The most that waits on disk (the spool holds a backlog, and is emptied whenever the index
  // catches up): at 64 bytes an event, 1 GiB holds a flood of 16 M events beyond the queue.
  // 0: no spool. The spool's file is in $TMPDIR, else /tmp (temp_dir.h).
  uint64_t max_spool_bytes = uint64_t{1} << 30;
  // The most the file may grow to (0: no limit); past it the index fails as on a full disk.
  uint64_t max_file_bytes = 0;
};

// One block. Text fields are the recording's text ("" where there was none).
struct BlockRow {
  int64_t id = 0;  // unique in the session, in allocation order (1, 2, ...)
  uint32_t pid = 0;
  int32_t device = kHostDevice;
  Layer layer = Layer::kHost;
  bool is_mmap = false;  // HOST anonymous mapping rather than heap
  uint64_t addr = 0;
  uint64_t size_bytes = 0;
  int64_t alloc_ns = 0;
  int64_t free_ns = kStillLive;  // kStillLive while it is live
  uint32_t tid = 0;              // the thread that allocated it
  uint64_t allocation_id = 0;
  std::string owner;
  std::string name;  // the operator it was allocated in
  std::string stack_python;
  std::string stack_c;
  // BlockQueries::pending's rows: when the pool took the block back after its free (which
  // was free_ns), kStillLive while it has not yet; 0 in every other answer.
  int64_t free_completed_ns = 0;
};

// Which blocks a query is about.
struct BlockFilter {
  uint32_t pid = 0;
  int32_t device = kHostDevice;
  // Blocks live at some moment of [t0_ns, t1_ns]: allocated at or before t1 and freed after
  // t0 (or never). t0 == t1: the blocks live at that instant.
  int64_t t0_ns = std::numeric_limits<int64_t>::min();
  int64_t t1_ns = std::numeric_limits<int64_t>::max();
  uint64_t min_size = 0;
  uint64_t max_size = std::numeric_limits<uint64_t>::max();
  // Case-insensitive substring of the owner, the name or either stack; "" for any block.
  std::string text;
  std::optional<Layer> layer;  // only this layer (HOST with is_mmap: see mmap_only)
  std::optional<bool> mmap;    // only mappings (true) or only heap blocks (false)
};

// The largest blocks matching a filter, and how much matched in all.
struct BlockSet {
  std::vector<BlockRow> blocks;  // largest first (ties: earlier allocation first), at most limit
  uint64_t matching_blocks = 0;  // all blocks the filter matched
  uint64_t matching_bytes = 0;
};

enum class BlockColumn : uint8_t {
  kId,
  kAddr,
  kSize,
  kAllocTime,
  kFreeTime,  // live blocks sort after every freed one (before, descending)
  kLifetime,  // live ones: up to the index's newest event
  kLayer,
  kOwner,
  kName,
  kThread,
  kAllocationId,
};

struct BlockPage {
  std::vector<BlockRow> rows;
  uint64_t total_rows = 0;  // rows the filter matched (the table's length)
  size_t offset = 0;
};

// Live blocks at an instant grouped by layer, owner and stack (the breakdown's tree).
struct BlockGroup {
  Layer layer = Layer::kHost;
  bool is_mmap = false;
  std::string owner;  // "" for blocks without one
  // The block's Python stack, else its C stack, else its name (keys.h's rule), "" for none.
  std::string stack;
  uint64_t bytes = 0;
  uint64_t blocks = 0;
};

struct BlockIndexStatus {
  uint64_t events_added = 0;    // MALLOC, FREE and FREE_COMPLETED events given to add()
  uint64_t events_indexed = 0;  // of those, paired and stored
  uint64_t blocks = 0;          // blocks known (stored or live in memory)
  uint64_t events_dropped = 0;  // not indexed: the queue and the spool were full (the
                                // recording has them)
  int64_t dropped_from_ns = 0;  // the time span those events covered (0 when none)
  int64_t dropped_to_ns = 0;
  uint64_t unmatched_frees = 0;  // FREEs of an address with no live block
  uint64_t pending_frees = 0;    // PTA frees that waited for another stream (free_pending)
  int64_t indexed_until_ns = 0;  // time of the newest event indexed
  size_t queued_events = 0;      // waiting to be indexed, in memory or on disk
  size_t spooled_events = 0;     // of those, on disk: the index is behind a flood
  uint64_t paced_waits = 0;      // waits to keep to the program's share of a core (pace_by)
  std::string spool_error;       // why events could not wait on disk (one line), "" if none
  std::string error;  // the index's file failed (disk full, ...): one line; queries give nothing
};

// The index as queries see it, on its thread. Every answer includes the young live blocks.
class BlockQueries {
 public:
  virtual ~BlockQueries() = default;
  // The `limit` largest blocks matching, and the count and bytes of all that match.
  virtual BlockSet largest(const BlockFilter& filter, size_t limit) = 0;
  // Rows [offset, offset + count) of the matching blocks sorted by `column`; the sorted
  // result is kept until a query with another filter or sort, so paging through it costs
  // one sort, not one per page. The first page (offset 0) asked after new events were
  // indexed sorts again, so that a table refreshed from its top shows them.
  virtual BlockPage page(const BlockFilter& filter, BlockColumn column, bool descending,
                         size_t offset, size_t count) = 0;
  // A block by id (nullopt if none has it).
  virtual std::optional<BlockRow> find(int64_t id) = 0;
  // Every block matching the filter (the pool view's live set at an instant); at most
  // `limit` of them, the largest, with *truncated set when there were more.
  virtual std::vector<BlockRow> all(const BlockFilter& filter, size_t limit, bool* truncated) = 0;
  // The blocks live at filter.t1_ns (t0 is ignored) that pass the filter, grouped by layer,
  // owner and stack; most bytes first.
  virtual std::vector<BlockGroup> live_groups(const BlockFilter& filter) = 0;
  // The PTA blocks of (filter.pid, filter.device) whose free was requested at or before
  // filter.t1_ns and that the pool took back after it (or not yet): freed, so in no "live"
  // answer, but not yet free in their segment. At most `limit`, in address order, with
  // free_completed_ns set. Other filter fields are ignored.
  virtual std::vector<BlockRow> pending(const BlockFilter& filter, size_t limit) = 0;
  // The (pid, device) pairs with blocks, in the order first seen.
  virtual std::vector<std::pair<uint32_t, int32_t>> scopes() = 0;
  // While events wait to be indexed (a live flood's backlog, answered ahead of), the time of
  // the newest event indexed: the answers know nothing later. INT64_MAX when none wait.
  virtual int64_t covered_until_ns() = 0;
};

// Whether the framework pool (PTA) of (pid, device) has had a block allocated at or before
// `until_ns`. The pool view takes a device's HAL blocks as its segments from the first one
// on; the breakdown counts the pool's blocks as Allocated, over the whole run, once it has
// had any, as the curves do.
bool pool_had_blocks(BlockQueries& q, uint32_t pid, int32_t device,
                     int64_t until_ns = std::numeric_limits<int64_t>::max());

using BlockQuery = std::function<void(BlockQueries&)>;

class BlockIndex {
 public:
  // nullptr with *error (one line) when its file cannot be made.
  static std::unique_ptr<BlockIndex> create(const BlockIndexOptions& options, std::string* error);
  virtual ~BlockIndex() = default;

  // From the engine's thread (an EventTap): takes what it needs of the MALLOC, FREE and
  // FREE_COMPLETED events (and of the new strings they refer to) and returns without waiting for
  // the index (unless options.wait_for_room).
  virtual void add(const MemEvent* events, size_t count, const StringTable& strings) = 0;
  // No more events will come (a replay has read its file): the index stores what it holds.
  virtual void finish_input() = 0;
  // Runs `query` on the index's thread after the events added before it are indexed (while
  // the index is paced, ahead of them: see pace_by).
  virtual void post(BlockQuery query) = 0;
  // A live session's index: from now on its thread keeps to the share of a core that a
  // thread serving only the window keeps to while the program runs (CpuShare::view_permille,
  // common/cpu_share.h), for the program comes first (under a program that kept both cores busy,
  // the unpaced index took 4.1 s of CPU in 18 s, more than any other thread of the window). While
  // the program runs, a query is answered ahead of the events waiting in memory, as it is of those
  // on disk: behind a paced queue every view would wait; covered_until_ns() says how far its answer
  // goes.
  virtual void pace_by(std::shared_ptr<const CpuShare> share) = 0;
  // Any thread.
  virtual BlockIndexStatus status() const = 0;
};

}  // namespace memtap::viewdata
