// Session with the framework pool (protocols 4 and 5, layer PTA): blocks paired in a table
// of their own, Attr used/total on their rows, a FREE whose completion follows at once folded
// into it (also when the sender cut the batch between the two), a pending FREE and its later
// FREE_COMPLETED row, the pool's state as a SNAPSHOT of its device (with the pool's own peaks
// where they came before it), and an OOM naming the device's largest tensors. Whole row
// streams are compared, as in session_test.cpp.
#include <algorithm>
#include <string>
#include <vector>

#include "monitor/engine/device_pairing.h"
#include "tests/unit/engine/session_support.h"

namespace memtap {
namespace {

using namespace session_test;  // NOLINT: the tests' own helpers

// Agent string ids of these tests.
constexpr uint32_t kEmptyOp = 1;
constexpr uint32_t kOwner = 2;
constexpr uint32_t kPyStack = 3;
constexpr uint32_t kCudaMalloc = 4;
const Strings kStrings = {{kEmptyOp, "aten::empty"},
                          {kOwner, "model"},
                          {kPyStack, "train.py(3): step"},
                          {kCudaMalloc, "cudaMalloc"}};

constexpr uint64_t kMiB = uint64_t{1} << 20;

std::vector<Ev> cat(std::initializer_list<std::vector<Ev>> parts) {
  std::vector<Ev> all;
  for (const auto& part : parts) all.insert(all.end(), part.begin(), part.end());
  return all;
}

// What memtap_pool_* write: a deviceStream record, then the block's event just after it.
std::vector<Ev> pool_block(Kind kind, uint64_t ts, uint16_t device, uint64_t addr, uint64_t size,
                           uint64_t stream) {
  return {{ts, Kind::DEVICE_STREAM, stream, 0, 0, device}, {ts + 1, kind, addr, size, 0, device}};
}
std::vector<Ev> pool_alloc(uint64_t ts, uint16_t device, uint64_t addr, uint64_t size,
                           uint64_t stream = 0) {
  return pool_block(Kind::POOL_MALLOC, ts, device, addr, size, stream);
}
std::vector<Ev> pool_free(uint64_t ts, uint16_t device, uint64_t addr, uint64_t stream = 0) {
  return pool_block(Kind::POOL_FREE, ts, device, addr, 0, stream);
}
std::vector<Ev> pool_completed(uint64_t ts, uint16_t device, uint64_t addr, uint64_t stream = 0) {
  return pool_block(Kind::POOL_FREE_COMPLETED, ts, device, addr, 0, stream);
}
Ev pool_state(uint64_t ts, uint16_t device, uint64_t allocated, uint64_t reserved) {
  return {ts, Kind::POOL_STATE, allocated, reserved, 0, device};
}
Ev pool_peaks(uint64_t ts, uint16_t device, uint64_t max_allocated, uint64_t max_reserved) {
  return {ts, Kind::POOL_PEAKS, max_allocated, max_reserved, 0, device};
}

// A PTA row's who, when and where.
DumpRow pta_row(DumpEvent event, uint64_t ts, uint32_t pid, uint32_t tid, int32_t device) {
  DumpRow r;
  r.event = event;
  r.event_type = DumpEventType::kPta;
  r.device = device;
  r.timestamp_ns = epoch(ts);
  r.process_id = pid;
  r.thread_id = tid;
  return r;
}
DumpRow pta(DumpEvent event, uint64_t ts, uint32_t tid, int32_t device, Block b, int64_t used,
            int64_t total, uint64_t stream = 0) {
  DumpRow r = pta_row(event, ts, kPid, tid, device);
  r.ptr = b.ptr;
  r.size_bytes = b.size_bytes;
  r.allocation_id = b.allocation_id;
  r.has_stream = true;
  r.stream = stream;
  r.pool_used = used;
  r.pool_total = total;
  return r;
}
DumpRow pending(DumpRow r) {
  r.free_pending = true;
  return r;
}
// A row the session made up for an event that was lost: no deviceStream went before it.
DumpRow synthetic(DumpRow r) {
  r.has_stream = false;
  r.stream = 0;
  return r;
}
DumpRow completed(uint64_t ts, uint32_t tid, int32_t device, uint64_t ptr, uint64_t size,
                  uint32_t pid = kPid) {
  DumpRow r = pta_row(DumpEvent::kFreeCompleted, ts, pid, tid, device);
  r.ptr = ptr;
  r.size_bytes = size;
  return r;
}
DumpRow snapshot(uint64_t ts, uint32_t tid, int32_t device, int64_t allocated, int64_t reserved) {
  DumpRow r = pta_row(DumpEvent::kSnapshot, ts, kPid, tid, device);
  r.pool_used = allocated;
  r.pool_total = reserved;
  return r;
}

DumpRow with_peaks(DumpRow r, uint64_t max_allocated, uint64_t max_reserved) {
  r.has_pool_peaks = true;
  r.size_bytes = max_allocated;
  r.total_bytes = max_reserved;
  return r;
}

class PoolSessionTest : public SessionTest {
 protected:
  uint32_t id_of(const std::string& text) const {
    for (uint32_t id = 0; id < strings.size(); ++id)
      if (strings[id] == text) return id;
    ADD_FAILURE() << "no string " << text;
    return 0;
  }
  // The rows of `layer` events (MALLOC, FREE, FREE_COMPLETED, SNAPSHOT of PTA).
  std::vector<DumpRow> pta_rows() const {
    std::vector<DumpRow> out;
    for (const DumpRow& r : rows)
      if (r.event_type == DumpEventType::kPta) out.push_back(r);
    return out;
  }
};

TEST_F(PoolSessionTest, BlocksArePtaRowsWithUsedTotalAndAFreeCompletedAtOnceFoldsIntoItsFree) {
  feed(hello(kPid, kInst));
  feed(batch_with(
      kPid, kInst, 1, kFar, kStrings,
      {{7, cat({{pool_state(2000, 0, 0, 2 * kMiB), Ev{2002, Kind::OWNER_PUSH, 0, 0, kOwner},
                 Ev{2003, Kind::OP_START, 0, 0, kEmptyOp},
                 Ev{2004, Kind::PYTHON_STACK, 0, 0, kPyStack}},
                pool_alloc(2010, 0, 0xa000, 512, 0x55),
                {Ev{2015, Kind::OP_END, 0, 0, kEmptyOp}},
                pool_alloc(2020, 0, 0xb000, 1024),
                pool_free(2030, 0, 0xa000, 0x55),
                pool_completed(2032, 0, 0xa000, 0x55),  // at once: folded
                pool_free(2040, 0, 0xb000),             // its thread does more first
                {ev_malloc(2050, 0xa000, 64)},
                pool_completed(2060, 0, 0xb000)})}}));
  const uint32_t op = id_of("aten::empty");
  const uint32_t owner = id_of("model");
  DumpRow in_op = pta(DumpEvent::kMalloc, 2011, 7, 0, {0xa000, 512, 1}, 512, 2 * kMiB, 0x55);
  in_op.name = op;
  in_op.owner = owner;
  in_op.stack_python = id_of("train.py(3): step");
  DumpRow outside = pta(DumpEvent::kMalloc, 2021, 7, 0, {0xb000, 1024, 2}, 1536, 2 * kMiB);
  outside.owner = owner;  // no operator open: no name (no API either)
  DumpRow folded = pta(DumpEvent::kFree, 2031, 7, 0, {0xa000, 512, 1}, 1024, 2 * kMiB, 0x55);
  folded.owner = owner;
  DumpRow later = pending(pta(DumpEvent::kFree, 2041, 7, 0, {0xb000, 1024, 2}, 0, 2 * kMiB));
  later.owner = owner;
  DumpRow heap = malloc_row(2050, kPid, 7, {0xa000, 64, 3});  // a heap block at a pool address
  heap.owner = owner;
  std::vector<DumpRow> want{snapshot(2000, 7, 0, 0, 2 * kMiB),  in_op, outside, folded, later,
                            completed(2061, 7, 0, 0xb000, 1024)};
  EXPECT_EQ(pta_rows(), want);
  EXPECT_NE(std::find(rows.begin(), rows.end(), heap), rows.end());
  EXPECT_EQ(rows.size(), 1 + want.size() + 2 + 1);  // START_TRACE, OP_LAUNCH x2, heap
  EXPECT_EQ(process(kPid).unmatched_frees, 0u);
  EXPECT_EQ(process(kPid).lost_frees, 0u);
}

// PyTorch completes a block freed while another stream used it in the thread's next
// allocator call: the completion can then be the thread's very next pool event, as in a free
// that completes at once, but it comes later than one free call takes. A completion that
// comes more than kPoolFreeFoldNs (10 ms) after its free is not folded: the block was Active
// meanwhile. One within it is the same call's, preempted in between (a busy machine) or slowed
// by PyTorch gathering a stack per trace entry (its snapshots: up to 346 us).
TEST_F(PoolSessionTest, ACompletionNextButLaterThanOneFreeCallIsPending) {
  constexpr int64_t kFold = kPoolFreeFoldNs;
  feed(hello(kPid, kInst));
  feed(batch(
      kPid, kInst, 1, 3 * kFold,
      {{7, cat({pool_alloc(2000, 0, 0x1000, 100), pool_free(3000, 0, 0x1000),
                pool_completed(3000 + kFold + 2, 0, 0x1000),  // 2 ns too late
                pool_alloc(kFold + 30'000, 0, 0x2000, 100), pool_free(kFold + 31'000, 0, 0x2000),
                pool_completed(2 * kFold + 31'000, 0, 0x2000),  // just in time
                pool_alloc(2 * kFold + 40'000, 0, 0x3000, 100),
                pool_free(2 * kFold + 41'000, 0, 0x3000),
                pool_completed(2 * kFold + 391'000, 0, 0x3000)})}}));  // 350 us
  EXPECT_EQ(pta_rows(),
            (std::vector<DumpRow>{
                pta(DumpEvent::kMalloc, 2001, 7, 0, {0x1000, 100, 1}, 100, -1),
                pending(pta(DumpEvent::kFree, 3001, 7, 0, {0x1000, 100, 1}, 0, -1)),
                completed(3001 + kFold + 2, 7, 0, 0x1000, 100),
                pta(DumpEvent::kMalloc, kFold + 30'001, 7, 0, {0x2000, 100, 2}, 100, -1),
                pta(DumpEvent::kFree, kFold + 31'001, 7, 0, {0x2000, 100, 2}, 0, -1),
                pta(DumpEvent::kMalloc, 2 * kFold + 40'001, 7, 0, {0x3000, 100, 3}, 100, -1),
                pta(DumpEvent::kFree, 2 * kFold + 41'001, 7, 0, {0x3000, 100, 3}, 0, -1)}));
}

// Each device has its pool: used and total are the device's, and a FREE takes the device of
// its block. Total is unknown (-1) until the device's first poolState.
TEST_F(PoolSessionTest, UsedAndTotalArePerDevice) {
  feed(hello(kPid, kInst));
  feed(batch(kPid, kInst, 1, kFar,
             {{7, cat({pool_alloc(2000, 0, 0x1000, 100),
                       pool_alloc(2010, 1, 0x2000, 300),
                       {pool_state(2020, 1, 300, 4096)},
                       pool_alloc(2030, 0, 0x3000, 50),
                       pool_free(2040, 1, 0x1000),
                       pool_completed(2042, 1, 0x1000),
                       pool_alloc(2050, 1, 0x4000, 200)})}}));
  EXPECT_EQ(pta_rows(), (std::vector<DumpRow>{
                            pta(DumpEvent::kMalloc, 2001, 7, 0, {0x1000, 100, 1}, 100, -1),
                            pta(DumpEvent::kMalloc, 2011, 7, 1, {0x2000, 300, 2}, 300, -1),
                            snapshot(2020, 7, 1, 300, 4096),
                            pta(DumpEvent::kMalloc, 2031, 7, 0, {0x3000, 50, 3}, 150, -1),
                            // Freed while device 1 is current: the block's device 0.
                            pta(DumpEvent::kFree, 2041, 7, 0, {0x1000, 100, 1}, 50, -1),
                            pta(DumpEvent::kMalloc, 2051, 7, 1, {0x4000, 200, 4}, 500, 4096)}));
}

// memtap.step()'s samples: the pool's own peaks go right before the state they belong to,
// and that device's next SNAPSHOT carries them, also when the sender cut the batch between
// the two or another device's state came first; a state without peaks before it has none.
TEST_F(PoolSessionTest, PeaksGoIntoTheirDevicesNextPoolStateRow) {
  feed(hello(kPid, kInst));
  feed(batch(kPid, kInst, 1, kFar,
             {{7,
               {pool_peaks(2000, 0, 3 * kMiB, 8 * kMiB), pool_state(2001, 0, kMiB, 4 * kMiB),
                pool_state(2010, 0, 2 * kMiB, 4 * kMiB),  // no peaks before it
                pool_peaks(2020, 1, 500, 900), pool_peaks(2021, 0, 5 * kMiB, 9 * kMiB),
                pool_state(2022, 0, kMiB, 6 * kMiB)}}}));
  feed(batch(kPid, kInst, 2, kFar, {{7, {pool_state(2030, 1, 100, 600)}}}));
  EXPECT_EQ(pta_rows(), (std::vector<DumpRow>{
                            with_peaks(snapshot(2001, 7, 0, kMiB, 4 * kMiB), 3 * kMiB, 8 * kMiB),
                            snapshot(2010, 7, 0, 2 * kMiB, 4 * kMiB),
                            with_peaks(snapshot(2022, 7, 0, kMiB, 6 * kMiB), 5 * kMiB, 9 * kMiB),
                            with_peaks(snapshot(2030, 7, 1, 100, 600), 500, 900)}));
}

// Peaks are per process: another process's state does not take them.
TEST_F(PoolSessionTest, PeaksAreHeldPerProcess) {
  feed(hello(kPid, kInst));
  feed(hello(kPid + 1, kInst + 1));
  feed(batch(kPid, kInst, 1, kFar, {{7, {pool_peaks(2000, 0, 30, 80)}}}));
  feed(batch(kPid + 1, kInst + 1, 1, kFar, {{8, {pool_state(2001, 0, 10, 40)}}}));
  feed(batch(kPid, kInst, 2, kFar, {{7, {pool_state(2002, 0, 20, 40)}}}));
  std::vector<DumpRow> snapshots;
  for (const DumpRow& r : pta_rows()) snapshots.push_back(r);
  ASSERT_EQ(snapshots.size(), 2u);
  EXPECT_EQ(snapshots[0].process_id, kPid + 1);
  EXPECT_FALSE(snapshots[0].has_pool_peaks);
  EXPECT_EQ(snapshots[1], with_peaks(snapshot(2002, 7, 0, 20, 40), 30, 80));
}

// The sender may drain the thread between a poolFree and its completion: the release waits
// at the FREE until the process's next batch says what the thread did next, so that the
// rows do not depend on where the batches were cut, and stay in time order.
TEST_F(PoolSessionTest, AFreeItsBatchEndsWithWaitsForTheNextBatchToFold) {
  feed(hello(kPid, kInst));
  feed(hello(kPid2, kInst2));
  feed(batch(kPid, kInst, 1, 2100,
             {{7, cat({pool_alloc(2000, 0, 0x1000, 100), pool_free(2010, 0, 0x1000)})}}));
  feed(batch(kPid2, kInst2, 1, kFar, {{9, {ev_malloc(2050, 0x9000, 8)}}}));
  // Out: the MALLOC; held: the FREE, and everything after it.
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[2].event, DumpEvent::kMalloc);
  EXPECT_EQ(session.held_events(), 2u);  // the FREE, kPid2's malloc
  feed(batch(kPid, kInst, 2, kFar, {{7, pool_completed(2100, 0, 0x1000)}}));
  ASSERT_EQ(rows.size(), 5u);
  EXPECT_EQ(rows[3], pta(DumpEvent::kFree, 2011, 7, 0, {0x1000, 100, 1}, 0, -1));
  EXPECT_EQ(rows[4].process_id, kPid2);
  EXPECT_EQ(process(kPid).unmatched_frees, 0u);
}

// The same events cut into two batches at every place give the rows of one batch.
TEST_F(PoolSessionTest, RowsDoNotDependOnWhereTheBatchesWereCut) {
  const std::vector<Ev> events = cat({pool_alloc(2000, 0, 0x1000, 100),
                                      pool_alloc(2010, 0, 0x2000, 200),
                                      pool_free(2020, 0, 0x1000),
                                      pool_completed(2022, 0, 0x1000),
                                      pool_free(2030, 0, 0x2000),
                                      {ev_malloc(2040, 0x9000, 8)},
                                      pool_completed(2050, 0, 0x2000),
                                      pool_free(2060, 0, 0x3000),  // matches nothing
                                      pool_completed(2062, 0, 0x3000)});
  std::vector<DumpRow> whole;
  {
    Session one([&](const DumpRow* r, size_t n) { whole.insert(whole.end(), r, r + n); });
    const Bytes h = hello(kPid, kInst);
    const Bytes b = batch(kPid, kInst, 1, kFar, {{7, events}});
    ASSERT_TRUE(one.ingest(h.data(), h.size()).ok);
    ASSERT_TRUE(one.ingest(b.data(), b.size()).ok);
  }
  // START_TRACE, two MALLOCs, a FREE folded, a FREE pending, the heap MALLOC, the pending
  // one's FREE_COMPLETED, the unmatched FREE (folded).
  ASSERT_EQ(whole.size(), 8u);
  EXPECT_FALSE(whole[3].free_pending);
  EXPECT_TRUE(whole[4].free_pending);
  EXPECT_EQ(whole[6].event, DumpEvent::kFreeCompleted);
  EXPECT_FALSE(whole[7].free_pending);
  for (size_t cut = 1; cut < events.size(); ++cut) {
    SCOPED_TRACE("cut before event " + std::to_string(cut));
    std::vector<DumpRow> split;
    Session two([&](const DumpRow* r, size_t n) { split.insert(split.end(), r, r + n); });
    const std::vector<Ev> first(events.begin(), events.begin() + cut);
    const std::vector<Ev> second(events.begin() + cut, events.end());
    for (const Bytes& m :
         {hello(kPid, kInst), batch(kPid, kInst, 1, events[cut].ts_ns, {{7, first}}),
          batch(kPid, kInst, 2, kFar, {{7, second}})}) {
      ASSERT_TRUE(two.ingest(m.data(), m.size()).ok);
    }
    EXPECT_EQ(split, whole);
  }
}

// A FREE left open is decided by its thread's next event (another event first: pending), or
// by the process's watermark once it is past the 10 ms the completion had to come within
// (a batch that says nothing of the thread need not have drained it again: a batch cut at
// its record limit, or of text alone). Then the completion is a row of its own.
TEST_F(PoolSessionTest, AFreeWhoseCompletionCannotComeInTimeAnyMoreIsPending) {
  feed(hello(kPid, kInst));
  feed(batch(kPid, kInst, 1, 2020,
             {{7, cat({pool_alloc(2000, 0, 0x1000, 100), pool_free(2010, 0, 0x1000)})},
              {8, cat({pool_alloc(2001, 0, 0x2000, 200), pool_free(2011, 0, 0x2000)})}}));
  // Thread 7 said nothing, and the watermark is not 10 ms past its FREE: still open.
  feed(batch(kPid, kInst, 2, 2100, {{8, {ev_malloc(2030, 0x9000, 8)}}}));
  EXPECT_EQ(pta_rows().size(), 2u) << "the release waits at thread 7's FREE";
  feed(batch(kPid, kInst, 3, kPoolFreeFoldNs + 2012, {}));  // 1 ns past it: pending
  feed(batch(kPid, kInst, 4, 2 * kPoolFreeFoldNs,
             {{7, pool_completed(kPoolFreeFoldNs + 30'000, 0, 0x1000)},
              {8, pool_completed(kPoolFreeFoldNs + 30'010, 0, 0x2000)}}));
  EXPECT_EQ(pta_rows(), (std::vector<DumpRow>{
                            pta(DumpEvent::kMalloc, 2001, 7, 0, {0x1000, 100, 1}, 100, -1),
                            pta(DumpEvent::kMalloc, 2002, 8, 0, {0x2000, 200, 2}, 300, -1),
                            pending(pta(DumpEvent::kFree, 2011, 7, 0, {0x1000, 100, 1}, 200, -1)),
                            pending(pta(DumpEvent::kFree, 2012, 8, 0, {0x2000, 200, 2}, 0, -1)),
                            completed(kPoolFreeFoldNs + 30'001, 7, 0, 0x1000, 100),
                            completed(kPoolFreeFoldNs + 30'011, 8, 0, 0x2000, 200),
                        }));
}

// A batch that says nothing of the thread (cut at the sender's record limit before it
// reached that thread's buffer again) leaves the FREE open: its completion, in the batch
// after, still folds.
TEST_F(PoolSessionTest, ABatchWithoutTheThreadsEventsLeavesItsFreeOpen) {
  feed(hello(kPid, kInst));
  feed(batch(kPid, kInst, 1, 2020,
             {{7, cat({pool_alloc(2000, 0, 0x1000, 100), pool_free(2010, 0, 0x1000)})}}));
  feed(batch(kPid, kInst, 2, 2020, {{8, {ev_malloc(2015, 0x9000, 8)}}}));
  feed(batch(kPid, kInst, 3, kFar, {{7, pool_completed(2013, 0, 0x1000)}}));
  EXPECT_EQ(pta_rows(),
            (std::vector<DumpRow>{pta(DumpEvent::kMalloc, 2001, 7, 0, {0x1000, 100, 1}, 100, -1),
                                  pta(DumpEvent::kFree, 2011, 7, 0, {0x1000, 100, 1}, 0, -1)}));
}

// A batch with only the deviceStream record of the completion leaves the FREE waiting: the
// completion itself comes in the batch after.
TEST_F(PoolSessionTest, AStreamRecordAloneDecidesNothing) {
  feed(hello(kPid, kInst));
  const std::vector<Ev> done = pool_completed(2100, 0, 0x1000);
  feed(batch(kPid, kInst, 1, 2100,
             {{7, cat({pool_alloc(2000, 0, 0x1000, 100), pool_free(2010, 0, 0x1000)})}}));
  feed(batch(kPid, kInst, 2, 2101, {{7, {done[0]}}}));
  EXPECT_EQ(pta_rows().size(), 1u);  // the MALLOC; the FREE still waits
  feed(batch(kPid, kInst, 3, kFar, {{7, {done[1]}}}));
  EXPECT_EQ(pta_rows(),
            (std::vector<DumpRow>{pta(DumpEvent::kMalloc, 2001, 7, 0, {0x1000, 100, 1}, 100, -1),
                                  pta(DumpEvent::kFree, 2011, 7, 0, {0x1000, 100, 1}, 0, -1)}));
}

// A process that ends (Bye, or killed) after a FREE sends nothing more: the FREE is pending.
TEST_F(PoolSessionTest, AFreeWaitsNoLongerThanItsProcess) {
  feed(hello(kPid, kInst));
  feed(batch(kPid, kInst, 1, 2100,
             {{7, cat({pool_alloc(2000, 0, 0x1000, 100), pool_free(2010, 0, 0x1000)})}}));
  feed(hello(kPid2, kInst2));
  feed(batch(kPid2, kInst2, 1, 2100,
             {{9, cat({pool_alloc(2000, 0, 0x1000, 100), pool_free(2010, 0, 0x1000)})}}));
  feed(bye(kPid, kInst, 2, 2200));
  session.forget_process(kPid2);
  const std::vector<DumpRow> frees = [&] {
    std::vector<DumpRow> out;
    for (const DumpRow& r : pta_rows())
      if (r.event == DumpEvent::kFree) out.push_back(r);
    return out;
  }();
  ASSERT_EQ(frees.size(), 2u);
  EXPECT_TRUE(frees[0].free_pending);
  EXPECT_TRUE(frees[1].free_pending);
  EXPECT_EQ(session.held_events(), 0u);
}

TEST_F(PoolSessionTest, UnmatchedFreesAndCompletionsAreCountedAndLostOnesClosed) {
  feed(hello(kPid, kInst));
  feed(batch(kPid, kInst, 1, kFar,
             {{7, cat({pool_free(2000, 2, 0x1000),  // nothing there: pending all the same
                       {ev_malloc(2005, 0x9000, 8)},
                       pool_completed(2010, 2, 0x1000),
                       pool_completed(2020, 2, 0x1000),  // no block pending there: no row
                       pool_alloc(2030, 0, 0x2000, 100),
                       pool_alloc(2040, 0, 0x2000, 50),  // its FREE was lost
                       pool_free(2050, 0, 0x2000),
                       {ev_malloc(2055, 0x9100, 8)},
                       pool_alloc(2060, 0, 0x2000, 70)})}}));  // its completion was lost
  EXPECT_EQ(pta_rows(), (std::vector<DumpRow>{
                            pending(pta(DumpEvent::kFree, 2001, 7, 2, {0x1000, 0, 0}, 0, -1)),
                            completed(2011, 7, 2, 0x1000, 0),
                            pta(DumpEvent::kMalloc, 2031, 7, 0, {0x2000, 100, 2}, 100, -1),
                            synthetic(pta(DumpEvent::kFree, 2041, 7, 0, {0x2000, 100, 2}, 0, -1)),
                            pta(DumpEvent::kMalloc, 2041, 7, 0, {0x2000, 50, 3}, 50, -1),
                            pending(pta(DumpEvent::kFree, 2051, 7, 0, {0x2000, 50, 3}, 0, -1)),
                            completed(2061, 7, 0, 0x2000, 50),
                            pta(DumpEvent::kMalloc, 2061, 7, 0, {0x2000, 70, 5}, 70, -1),
                        }));
  EXPECT_EQ(process(kPid).unmatched_frees, 2u);  // the FREE, the second completion
  EXPECT_EQ(process(kPid).lost_frees, 2u);
}

// Synthetic rows carry no stream, whatever the stream of the MALLOC that closed them.
TEST_F(PoolSessionTest, SyntheticRowsOfAMallocKeepItsStampButNotItsStream) {
  feed(hello(kPid, kInst));
  feed(
      batch(kPid, kInst, 1, kFar,
            {{7, cat({pool_alloc(2000, 0, 0x2000, 100, 5), pool_alloc(2010, 0, 0x2000, 50, 6)})}}));
  const std::vector<DumpRow> got = pta_rows();
  ASSERT_EQ(got.size(), 3u);
  EXPECT_FALSE(got[1].has_stream);
  EXPECT_EQ(got[2].stream, 6u);
}

// An OOM on a device with pool blocks lists its largest tensors (owner, name, stacks as
// their MALLOC had them), not the driver segments that hold them; a device without any
// lists its HAL blocks as before.
TEST_F(PoolSessionTest, OomListsTheDevicesLargestPoolBlocksElseItsHalBlocks) {
  feed(hello(kPid, kInst));
  std::vector<Ev> events{Ev{1990, Kind::DEVICE_MALLOC, 0x100000, 64 * kMiB, kCudaMalloc, 0},
                         Ev{1991, Kind::DEVICE_MALLOC, 0x900000, 64 * kMiB, kCudaMalloc, 1},
                         Ev{1992, Kind::OWNER_PUSH, 0, 0, kOwner},
                         Ev{1993, Kind::OP_START, 0, 0, kEmptyOp}};
  uint64_t ts = 2000;
  for (uint64_t i = 0; i < 12; ++i) {
    if (i == 3) events.push_back(Ev{ts++, Kind::PYTHON_STACK, 0, 0, kPyStack});
    events = cat({events, pool_alloc(ts, 0, 0x100000 + 0x10000 * i, 1000 + 10 * i)});
    ts += 2;
  }
  events = cat({events, pool_free(ts, 0, 0x100000 + 0x10000 * 11)});  // the largest, freed
  ts += 2;
  events = cat({events, {Ev{ts, Kind::DEVICE_OOM, 0, uint64_t{1} << 30, kCudaMalloc, 0}}});
  const uint64_t oom0 = ts++;
  events.push_back(Ev{ts, Kind::DEVICE_OOM, 0, uint64_t{1} << 30, kCudaMalloc, 1});
  const uint64_t oom1 = ts;
  feed(batch_with(kPid, kInst, 1, kFar, kStrings, {{7, events}}));

  std::vector<DumpRow> tops0, tops1;
  for (const DumpRow& r : rows) {
    if (r.event_type != DumpEventType::kOomTopAlloc) continue;
    (r.device == 0 ? tops0 : tops1).push_back(r);
  }
  ASSERT_EQ(tops0.size(), 10u);
  for (size_t k = 0; k < tops0.size(); ++k) {
    const uint64_t i = 10 - k;  // blocks 10, 9, ..., 1: largest first; 11 was freed
    SCOPED_TRACE("block " + std::to_string(i));
    EXPECT_EQ(tops0[k].timestamp_ns, epoch(oom0));
    EXPECT_EQ(tops0[k].ptr, 0x100000 + 0x10000 * i);
    EXPECT_EQ(tops0[k].size_bytes, 1000 + 10 * i);
    EXPECT_EQ(tops0[k].allocation_id, i + 3);  // after the two HAL blocks
    EXPECT_EQ(tops0[k].owner, id_of("model"));
    EXPECT_EQ(tops0[k].name, id_of("aten::empty"));
    EXPECT_EQ(tops0[k].stack_python, i == 3 ? id_of("train.py(3): step") : 0u);
  }
  ASSERT_EQ(tops1.size(), 1u);
  EXPECT_EQ(tops1[0].timestamp_ns, epoch(oom1));
  EXPECT_EQ(tops1[0].ptr, 0x900000u);
  EXPECT_EQ(tops1[0].size_bytes, 64 * kMiB);
  EXPECT_EQ(tops1[0].name, id_of("cudaMalloc"));
}

// A pool's figures and block sizes are int64 downstream: past 2^63 the message is refused.
TEST_F(PoolSessionTest, PoolSizesAndFiguresPast2To63AreRejected) {
  feed(hello(kPid, kInst));
  const uint64_t huge = uint64_t{1} << 63;
  const std::string block = feed_rejected(
      batch(kPid, kInst, 1, kFar, {{7, {Ev{2000, Kind::POOL_MALLOC, 0x1000, huge, 0, 0}}}}));
  EXPECT_NE(block.find("events[0].sizeBytes: pool block of"), std::string::npos) << block;
  const std::string allocated =
      feed_rejected(batch(kPid, kInst, 1, kFar, {{7, {pool_state(2000, 0, huge, 0)}}}));
  EXPECT_NE(allocated.find(".addr: pool allocated bytes"), std::string::npos) << allocated;
  const std::string reserved =
      feed_rejected(batch(kPid, kInst, 1, kFar, {{7, {pool_state(2000, 0, 0, huge)}}}));
  EXPECT_NE(reserved.find(".sizeBytes: pool reserved bytes"), std::string::npos) << reserved;
  const std::string max_allocated =
      feed_rejected(batch(kPid, kInst, 1, kFar, {{7, {pool_peaks(2000, 0, huge, 0)}}}));
  EXPECT_NE(max_allocated.find(".addr: pool max allocated bytes"), std::string::npos)
      << max_allocated;
  const std::string max_reserved =
      feed_rejected(batch(kPid, kInst, 1, kFar, {{7, {pool_peaks(2000, 0, 0, huge)}}}));
  EXPECT_NE(max_reserved.find(".sizeBytes: pool max reserved bytes"), std::string::npos)
      << max_reserved;
  // Just below: taken.
  feed(batch(
      kPid, kInst, 1, kFar,
      {{7, {pool_peaks(1999, 0, huge - 1, huge - 1), pool_state(2000, 0, huge - 1, huge - 1)}}}));
  EXPECT_EQ(pta_rows(),
            (std::vector<DumpRow>{with_peaks(
                snapshot(2000, 7, 0, int64_t(huge - 1), int64_t(huge - 1)), huge - 1, huge - 1)}));
}

// A device's live PTA bytes are a sum of block sizes: past 2^63 - 1 Attr used says 2^63 - 1,
// and it comes back down exactly as the blocks go (three blocks near 2^63 would wrap 64 bits,
// and a saturated sum would say too little once some of them are freed).
TEST_F(PoolSessionTest, LivePoolBytesPast2To63AreClampedAndNeverWrap) {
  feed(hello(kPid, kInst));
  const uint64_t big = (uint64_t{1} << 63) - 1;
  feed(batch(kPid, kInst, 1, kFar,
             {{7, cat({pool_alloc(2000, 0, 0x1000, big), pool_alloc(2010, 0, 0x2000, big),
                       pool_alloc(2020, 0, 0x3000, big), pool_free(2030, 0, 0x1000),
                       pool_completed(2032, 0, 0x1000), pool_free(2040, 0, 0x2000),
                       pool_completed(2042, 0, 0x2000), pool_free(2050, 0, 0x3000),
                       pool_completed(2052, 0, 0x3000)})}}));
  std::vector<int64_t> used;
  for (const DumpRow& r : pta_rows()) used.push_back(r.pool_used);
  const auto kMax = int64_t(big);
  EXPECT_EQ(used, (std::vector<int64_t>{kMax, kMax, kMax, kMax, kMax, 0}));
}

TEST_F(PoolSessionTest, AForkChildInheritsNoPoolBlock) {
  feed(hello(kPid, kInst));
  feed(batch(kPid, kInst, 1, kFar,
             {{7, cat({pool_alloc(2000, 0, 0x1000, 100), {ev_fork(2030, kChild)}})}}));
  feed(hello(kChild, kChildInst, {.ppid = kPid, .forked_from_pid = kPid, .mono_ns = 2030}));
  feed(batch(kChild, kChildInst, 1, kFar,
             {{kChild, cat({pool_free(2040, 0, 0x1000), pool_completed(2042, 0, 0x1000)})}}));
  EXPECT_EQ(process(kChild).unmatched_frees, 1u);
}

}  // namespace
}  // namespace memtap
