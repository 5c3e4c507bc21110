// Session with device events (protocol 3): HAL and HOST_PINNED blocks paired apart from the
// heap, each row on its device, streams, kernel launches, OOMs with the blocks live then,
// and a device's capacity. Whole row streams are compared, as in session_test.cpp.
#include <algorithm>
#include <string>
#include <vector>

#include "tests/unit/engine/session_support.h"

namespace memtap {
namespace {

using namespace session_test;  // NOLINT: the tests' own helpers

// Agent string ids of these tests.
constexpr uint32_t kCudaMalloc = 1;
constexpr uint32_t kCudaHostAlloc = 2;
constexpr uint32_t kEmptyOp = 3;
constexpr uint32_t kOwner = 4;
constexpr uint32_t kPyStack = 5;
constexpr uint32_t kCStack = 6;
constexpr uint32_t kKernel = 7;
const Strings kStrings = {
    {kCudaMalloc, "cudaMalloc"},     {kCudaHostAlloc, "cudaHostAlloc"},
    {kEmptyOp, "aten::empty"},       {kOwner, "model"},
    {kPyStack, "train.py(3): step"}, {kCStack, "libtorch.so(malloc+0x1) [0x1]"},
    {kKernel, "sgemm_128x64"}};

Ev ev_dmalloc(uint64_t ts, uint16_t device, uint64_t addr, uint64_t size,
              uint32_t api = kCudaMalloc) {
  return {ts, Kind::DEVICE_MALLOC, addr, size, api, device};
}
Ev ev_dfree(uint64_t ts, uint16_t device, uint64_t addr) {
  return {ts, Kind::DEVICE_FREE, addr, 0, 0, device};
}
Ev ev_pmalloc(uint64_t ts, uint64_t addr, uint64_t size) {
  return {ts, Kind::PINNED_MALLOC, addr, size, kCudaHostAlloc, 0};
}
Ev ev_pfree(uint64_t ts, uint64_t addr) {
  return {ts, Kind::PINNED_FREE, addr, 0, 0, 0};
}
Ev ev_stream(uint64_t ts, uint16_t device, uint64_t stream) {
  return {ts, Kind::DEVICE_STREAM, stream, 0, 0, device};
}

struct Device {
  Block block;
  int32_t device;  // kDumpNoDevice for pinned blocks
};

DumpRow device_row(DumpEvent event, DumpEventType type, uint64_t ts_ns, uint32_t pid, uint32_t tid,
                   Device d) {
  DumpRow r;
  r.event = event;
  r.event_type = type;
  r.device = d.device;
  r.timestamp_ns = epoch(ts_ns);
  r.process_id = pid;
  r.thread_id = tid;
  r.ptr = d.block.ptr;
  r.size_bytes = d.block.size_bytes;
  r.allocation_id = d.block.allocation_id;
  return r;
}
DumpRow hal_malloc(uint64_t ts, uint32_t tid, Device d, uint32_t name) {
  DumpRow r = device_row(DumpEvent::kMalloc, DumpEventType::kHal, ts, kPid, tid, d);
  r.name = name;
  return r;
}
DumpRow hal_free(uint64_t ts, uint32_t tid, Device d) {
  return device_row(DumpEvent::kFree, DumpEventType::kHal, ts, kPid, tid, d);
}
DumpRow pinned_malloc(uint64_t ts, uint32_t tid, Block b, uint32_t name) {
  DumpRow r =
      device_row(DumpEvent::kMalloc, DumpEventType::kHostPinned, ts, kPid, tid, {b, kDumpNoDevice});
  r.name = name;
  return r;
}
DumpRow pinned_free(uint64_t ts, uint32_t tid, Block b) {
  return device_row(DumpEvent::kFree, DumpEventType::kHostPinned, ts, kPid, tid,
                    {b, kDumpNoDevice});
}
DumpRow with_stream(DumpRow r, uint64_t stream) {
  r.has_stream = true;
  r.stream = stream;
  return r;
}

class DeviceSessionTest : public SessionTest {
 protected:
  // The session id the strings of kStrings got (they are interned in that order, first use
  // of each in the test's first batch).
  uint32_t id_of(const std::string& text) const {
    for (uint32_t id = 0; id < strings.size(); ++id)
      if (strings[id] == text) return id;
    ADD_FAILURE() << "no string " << text;
    return 0;
  }
};

TEST_F(DeviceSessionTest, HalPinnedAndHeapBlocksAtOneAddressPairApartAndFreesTakeTheBlocksDevice) {
  feed(hello(kPid, kInst));
  // The stand-in CUDA libraries hand out device memory at host addresses: one address, three
  // layers. Device 1 is current when the device-0 block is freed, and the reverse.
  feed(batch_with(
      kPid, kInst, 1, kFar, kStrings,
      {{7,
        {ev_dmalloc(2000, 0, 0x1000, 100), ev_malloc(2010, 0x1000, 8), ev_pmalloc(2020, 0x1000, 64),
         ev_dmalloc(2030, 1, 0x2000, 200), ev_free(2040, 0x1000), ev_dfree(2050, 1, 0x1000),
         ev_pfree(2060, 0x1000), ev_dfree(2070, 0, 0x2000), ev_dfree(2080, 1, 0x3000)}}}));
  const uint32_t cuda_malloc = id_of("cudaMalloc");
  const uint32_t host_alloc = id_of("cudaHostAlloc");
  EXPECT_EQ(rows, (std::vector<DumpRow>{
                      start_row(kPid),
                      hal_malloc(2000, 7, {{0x1000, 100, 1}, 0}, cuda_malloc),
                      malloc_row(2010, kPid, 7, {0x1000, 8, 2}),
                      pinned_malloc(2020, 7, {0x1000, 64, 3}, host_alloc),
                      hal_malloc(2030, 7, {{0x2000, 200, 4}, 1}, cuda_malloc),
                      free_row(2040, kPid, 7, {0x1000, 8, 2}),
                      hal_free(2050, 7, {{0x1000, 100, 1}, 0}),
                      pinned_free(2060, 7, {0x1000, 64, 3}),
                      hal_free(2070, 7, {{0x2000, 200, 4}, 1}),
                      // Nothing live there: the device current at the call, no size, no id.
                      hal_free(2080, 7, {{0x3000, 0, 0}, 1}),
                  }));
  EXPECT_EQ(process(kPid).unmatched_frees, 1u);
  EXPECT_EQ(process(kPid).lost_frees, 0u);
}

TEST_F(DeviceSessionTest, DeviceMallocOverALiveBlockClosesIt) {
  feed(hello(kPid, kInst));
  feed(batch_with(kPid, kInst, 1, kFar, kStrings,
                  {{7, {ev_dmalloc(2000, 0, 0x1000, 100), ev_dmalloc(2100, 0, 0x1000, 50)}}}));
  const uint32_t cuda_malloc = id_of("cudaMalloc");
  EXPECT_EQ(rows, (std::vector<DumpRow>{
                      start_row(kPid),
                      hal_malloc(2000, 7, {{0x1000, 100, 1}, 0}, cuda_malloc),
                      hal_free(2100, 7, {{0x1000, 100, 1}, 0}),
                      hal_malloc(2100, 7, {{0x1000, 50, 2}, 0}, cuda_malloc),
                  }));
  EXPECT_EQ(process(kPid).lost_frees, 1u);
}

TEST_F(DeviceSessionTest, AStreamRecordAppliesToItsThreadsNextDeviceEventOnly) {
  feed(hello(kPid, kInst));
  feed(batch_with(
      kPid, kInst, 1, kFar, kStrings,
      {{7,
        {ev_stream(2000, 0, 0x55), ev_malloc(2010, 0x9000, 8),  // a heap malloc: not for it
         ev_dmalloc(2030, 0, 0x1000, 100),                      // cudaMallocAsync: on 0x55
         ev_dmalloc(2040, 0, 0x2000, 100),                      // cudaMalloc: none
         ev_stream(2050, 0, 0), ev_dfree(2060, 0, 0x1000)}},    // cudaFreeAsync on stream 0
       {8, {ev_dmalloc(2020, 0, 0x3000, 100)}}}));              // another thread: none
  const uint32_t cuda_malloc = id_of("cudaMalloc");
  EXPECT_EQ(rows, (std::vector<DumpRow>{
                      start_row(kPid),
                      malloc_row(2010, kPid, 7, {0x9000, 8, 1}),
                      hal_malloc(2020, 8, {{0x3000, 100, 2}, 0}, cuda_malloc),
                      with_stream(hal_malloc(2030, 7, {{0x1000, 100, 3}, 0}, cuda_malloc), 0x55),
                      hal_malloc(2040, 7, {{0x2000, 100, 4}, 0}, cuda_malloc),
                      with_stream(hal_free(2060, 7, {{0x1000, 100, 3}, 0}), 0),
                  }));
}

TEST_F(DeviceSessionTest, DeviceAndPinnedMallocsTakeOperatorOwnerAndStacksAsHeapMallocsDo) {
  feed(hello(kPid, kInst));
  feed(batch_with(
      kPid, kInst, 1, kFar, kStrings,
      {{7,
        {ev_ctx(2000, Kind::OWNER_PUSH, kOwner), ev_ctx(2010, Kind::OP_START, kEmptyOp),
         ev_ctx(2020, Kind::PYTHON_STACK, kPyStack), ev_ctx(2030, Kind::C_STACK, kCStack),
         ev_dmalloc(2040, 2, 0x1000, 100), ev_pmalloc(2050, 0x2000, 64),
         ev_ctx(2060, Kind::OP_END, kEmptyOp), ev_dmalloc(2070, 2, 0x3000, 100),
         ev_ctx(2080, Kind::OWNER_POP), ev_dfree(2090, 2, 0x1000)}}}));
  const uint32_t op = id_of("aten::empty");
  const uint32_t owner = id_of("model");
  DumpRow in_op = hal_malloc(2040, 7, {{0x1000, 100, 1}, 2}, op);
  in_op.owner = owner;
  in_op.stack_python = id_of("train.py(3): step");
  in_op.stack_c = id_of("libtorch.so(malloc+0x1) [0x1]");
  DumpRow pinned = pinned_malloc(2050, 7, {0x2000, 64, 2}, op);  // the stacks are used up
  pinned.owner = owner;
  DumpRow outside_op = hal_malloc(2070, 7, {{0x3000, 100, 3}, 2}, id_of("cudaMalloc"));
  outside_op.owner = owner;
  DumpRow freed = hal_free(2090, 7, {{0x1000, 100, 1}, 2});
  freed.owner = owner;  // the block's owner, though the thread has none now
  std::vector<DumpRow> blocks;
  for (const DumpRow& r : rows)
    if (r.event == DumpEvent::kMalloc || r.event == DumpEvent::kFree) blocks.push_back(r);
  EXPECT_EQ(blocks, (std::vector<DumpRow>{in_op, pinned, outside_op, freed}));
  EXPECT_EQ(rows.size(), 1 + 2 + blocks.size());  // START_TRACE, the two OP_LAUNCH rows
}

TEST_F(DeviceSessionTest, KernelLaunchIsARowOfItsDeviceWithItsStream) {
  feed(hello(kPid, kInst));
  // A deviceStream before it is used up by it; the launch's own stream is the one written.
  feed(batch_with(kPid, kInst, 1, kFar, kStrings,
                  {{7,
                    {ev_stream(2000, 1, 0x55), Ev{2010, Kind::KERNEL_LAUNCH, 0x77, 0, kKernel, 1},
                     ev_dmalloc(2020, 1, 0x1000, 100)}}}));
  DumpRow kernel;
  kernel.event = DumpEvent::kKernelLaunch;
  kernel.event_type = DumpEventType::kKernelLaunch;
  kernel.device = 1;
  kernel.timestamp_ns = epoch(2010);
  kernel.process_id = kPid;
  kernel.thread_id = 7;
  kernel.name = id_of("sgemm_128x64");
  EXPECT_EQ(rows, (std::vector<DumpRow>{
                      start_row(kPid),
                      with_stream(kernel, 0x77),
                      hal_malloc(2020, 7, {{0x1000, 100, 1}, 1}, id_of("cudaMalloc")),
                  }));
}

TEST_F(DeviceSessionTest, OomNamesTheLargestBlocksLiveOnItsDeviceInItsProcess) {
  feed(hello(kPid, kInst));
  feed(hello(kPid2, kInst2));
  // Device 0 of kPid: twelve blocks, sizes 1000 + 10 * i, two of them equal in size; one
  // large block freed before the OOM. Not listed: device 1's block, kPid2's block on
  // device 0, a pinned block and a heap block, however large.
  std::vector<Ev> events;
  uint64_t ts = 2000;
  for (uint64_t i = 0; i < 12; ++i) {
    const uint64_t size = i == 11 ? 1050 : 1000 + 10 * i;  // blocks 5 and 11: 1050 bytes
    events.push_back(ev_dmalloc(ts++, 0, 0x10000 + 0x1000 * i, size));
  }
  events.push_back(ev_dmalloc(ts++, 0, 0x90000, 1 << 20));
  events.push_back(ev_dfree(ts++, 0, 0x90000));
  events.push_back(ev_dmalloc(ts++, 1, 0xa0000, 1 << 21));
  events.push_back(ev_pmalloc(ts++, 0xb0000, 1 << 22));
  events.push_back(ev_malloc(ts++, 0xc0000, 1 << 23));
  events.push_back(ev_ctx(ts++, Kind::PYTHON_STACK, kPyStack));
  const uint64_t oom_ts = ts++;
  events.push_back(Ev{oom_ts, Kind::DEVICE_OOM, 0x9, uint64_t{1} << 30, kCudaMalloc, 0});
  feed(batch_with(kPid, kInst, 1, 1'000'000, kStrings, {{7, events}}));
  // Just before the OOM, so that kPid's blocks keep ids 1..12.
  feed(batch(kPid2, kInst2, 1, kFar, {{9, {ev_dmalloc(oom_ts - 1, 0, 0xd0000, 1 << 24, 0)}}}));
  feed(batch(kPid, kInst, 2, kFar, {}));

  std::vector<DumpRow> oom;
  for (const DumpRow& r : rows)
    if (r.event == DumpEvent::kOomDetail) oom.push_back(r);
  DumpRow trigger;
  trigger.event = DumpEvent::kOomDetail;
  trigger.event_type = DumpEventType::kOomTrigger;
  trigger.device = 0;
  trigger.timestamp_ns = epoch(oom_ts);
  trigger.process_id = kPid;
  trigger.thread_id = 7;
  trigger.size_bytes = uint64_t{1} << 30;
  trigger.name = id_of("cudaMalloc");
  trigger.stack_python = id_of("train.py(3): step");
  std::vector<DumpRow> want{with_stream(trigger, 0x9)};
  // Largest first; the two of 1050 bytes by allocation id (block 5 is id 6, block 11 id 12).
  for (const uint64_t i : {10, 9, 8, 7, 6, 5, 11, 4, 3, 2}) {
    const uint64_t size = i == 11 ? 1050 : 1000 + 10 * i;
    DumpRow top = device_row(DumpEvent::kOomDetail, DumpEventType::kOomTopAlloc, oom_ts, kPid, 7,
                             {{0x10000 + 0x1000 * i, size, i + 1}, 0});
    top.name = id_of("cudaMalloc");
    want.push_back(top);
  }
  EXPECT_EQ(oom, want);
  // The OOM rows come right after each other, in the process's order.
  const auto first = std::find(rows.begin(), rows.end(), want[0]);
  ASSERT_NE(first, rows.end());
  EXPECT_TRUE(std::equal(want.begin(), want.end(), first));
}

TEST_F(DeviceSessionTest, OomWithNothingLiveIsATriggerAlone) {
  feed(hello(kPid, kInst));
  feed(batch_with(kPid, kInst, 1, kFar, kStrings,
                  {{7, {Ev{2000, Kind::DEVICE_OOM, 0, 4096, kCudaMalloc, 3}}}}));
  ASSERT_EQ(rows.size(), 2u);
  EXPECT_EQ(rows[1].event, DumpEvent::kOomDetail);
  EXPECT_EQ(rows[1].event_type, DumpEventType::kOomTrigger);
  EXPECT_EQ(rows[1].device, 3);
  EXPECT_EQ(rows[1].size_bytes, 4096u);
}

TEST_F(DeviceSessionTest, DeviceInfoIsAStartTraceOfTheDeviceWithItsFreeAndTotalBytes) {
  feed(hello(kPid, kInst));
  feed(batch_with(kPid, kInst, 1, kFar, kStrings,
                  {{7, {Ev{2000, Kind::DEVICE_INFO, 3000, 8000, 0, 1}}}}));
  DumpRow info = system_row(DumpEventType::kStartTrace, kPid, 2000);
  info.thread_id = 7;
  info.device = 1;
  info.size_bytes = 3000;
  info.total_bytes = 8000;
  EXPECT_EQ(rows, (std::vector<DumpRow>{start_row(kPid), info}));
}

TEST_F(DeviceSessionTest, DeviceInfoWithMoreFreeThanTotalOrATotalPast2To63IsRejected) {
  feed(hello(kPid, kInst));
  const std::string more_free = feed_rejected(
      batch(kPid, kInst, 1, kFar, {{7, {Ev{2000, Kind::DEVICE_INFO, 9000, 8000, 0, 0}}}}));
  EXPECT_NE(more_free.find("batch.threads[0].events[0].addr: device free bytes 9000 above its "
                           "total 8000"),
            std::string::npos)
      << more_free;
  const std::string huge = feed_rejected(batch(
      kPid, kInst, 1, kFar, {{7, {Ev{2000, Kind::DEVICE_INFO, 0, uint64_t{1} << 63, 0, 0}}}}));
  EXPECT_NE(huge.find(".sizeBytes: device total"), std::string::npos) << huge;
}

TEST_F(DeviceSessionTest, ADeviceOnAHostEventIsNotCarried) {
  feed(hello(kPid, kInst));
  Ev host = ev_malloc(2000, 0x1000, 8);
  host.device = 5;
  feed(batch(kPid, kInst, 1, kFar, {{7, {host}}}));
  EXPECT_EQ(rows,
            (std::vector<DumpRow>{start_row(kPid), malloc_row(2000, kPid, 7, {0x1000, 8, 1})}));
}

TEST_F(DeviceSessionTest, AForkChildInheritsNoDeviceOrPinnedBlocks) {
  feed(hello(kPid, kInst));
  feed(batch_with(kPid, kInst, 1, kFar, kStrings,
                  {{7,
                    {ev_dmalloc(2000, 0, 0x1000, 100), ev_pmalloc(2010, 0x2000, 64),
                     ev_malloc(2020, 0x3000, 8), ev_fork(2030, kChild)}}}));
  feed(hello(kChild, kChildInst, {.ppid = kPid, .forked_from_pid = kPid, .mono_ns = 2030}));
  feed(batch(
      kChild, kChildInst, 1, kFar,
      {{kChild, {ev_dfree(2040, 0, 0x1000), ev_pfree(2050, 0x2000), ev_free(2060, 0x3000)}}}));
  EXPECT_EQ(process(kChild).inherited_blocks, 1u);  // the heap block only
  EXPECT_EQ(process(kChild).unmatched_frees, 2u);
}

}  // namespace
}  // namespace memtap
