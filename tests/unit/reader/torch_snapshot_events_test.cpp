// What each part of a PyTorch snapshot becomes (monitor/store/reader/torch/snapshot_events.h),
// on snapshots Python pickles from dict literals here: the pool's blocks and their pending
// frees, segments as HAL blocks (a partial unmap keeps the rest), pool states, OOMs with
// their largest blocks, annotations, owners, names and stacks, what was there before the
// trace, made-up times, and entries or files that cannot be read.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "tests/unit/reader/reader_test_support.h"
#include "tests/unit/reader/torch_snapshot_test_support.h"

namespace memtap {
namespace {

using test::read_error;
using test::read_ok;

// A PyTorch-style traceback: C++ frames around Python ones, innermost first.
constexpr const char* kFrames =
    "[{'filename': '?\?', 'line': 0, 'name': 'torch::unwind::unwind()'},"
    " {'filename': 'CUDACachingAllocator.cpp', 'line': 0, 'name': 'malloc'},"
    " {'filename': '/w/model.py', 'line': 12, 'name': 'forward'},"
    " {'filename': '<eval_with_key>.3', 'line': 5, 'name': 'fx'},"
    " {'filename': '/w/train.py', 'line': 40, 'name': '<module>'}]";

// `expr` (a Python expression of plain data, which may use FRAMES) pickled by Python.
std::string python_pickle(const test::TempDir& dir, const std::string& name,
                          const std::string& expr, int protocol = 4) {
  const std::string script = dir.file(name + ".py");
  const std::string out = dir.file(name);
  std::ofstream(script) << "import pickle, sys\nFRAMES = " << kFrames << "\nobj = " << expr
                        << "\nopen(sys.argv[1], 'wb').write(pickle.dumps(obj, protocol=" << protocol
                        << "))\n";
  test::command_output(test::kPython + " " + script + " " + out);
  return out;
}

std::vector<MemEvent> of_kind(const Recording& rec, MemEventKind kind, Layer layer = Layer::kPta) {
  std::vector<MemEvent> out;
  for (const MemEvent& e : rec.events) {
    const bool block = e.kind == MemEventKind::kMalloc || e.kind == MemEventKind::kFree;
    if (e.kind == kind && (!block || e.layer == layer)) out.push_back(e);
  }
  return out;
}

std::string text(const Recording& rec, uint32_t id) {
  return rec.strings.get(id);
}

// A segment, blocks with owners, names and stacks, a free folded into its completion, two
// that waited (one behind another block's completion, one completed 193 us later), and the
// pool at the dump.
TEST(TorchSnapshotEvents, PoolBlocksSegmentsAndPendingFrees) {
  MEMTAP_SKIP_WITHOUT_PYTHON();
  test::TempDir dir;
  const Recording rec = read_ok(python_pickle(dir, "pool.pickle", R"({
  'segments': [{'device': 0, 'address': 0x1000000, 'total_size': 2097152,
                'allocated_size': 1024, 'active_size': 1024, 'requested_size': 1000,
                'stream': 0, 'segment_type': 'small', 'segment_pool_id': (0, 0),
                'is_expandable': False, 'frames': [],
                'blocks': [{'address': 0x1000000, 'size': 1024, 'requested_size': 1000,
                            'state': 'active_allocated', 'frames': []},
                           {'address': 0x1000400, 'size': 2096128, 'requested_size': 0,
                            'state': 'inactive', 'frames': []}]}],
  'device_traces': [[
    {'action': 'segment_alloc', 'addr': 0x1000000, 'size': 2097152, 'stream': 0,
     'time_us': 1000000, 'frames': FRAMES},
    {'action': 'alloc', 'addr': 0x1000000, 'size': 1000, 'stream': 0, 'time_us': 1000001,
     'frames': FRAMES, 'user_metadata': 'encoder', 'compile_context': 'N/A'},
    {'action': 'alloc', 'addr': 0x1000400, 'size': 512, 'stream': 7, 'time_us': 1000002,
     'frames': [], 'user_metadata': '', 'compile_context': 'torch/_dynamo [0/0]'},
    {'action': 'free_requested', 'addr': 0x1000400, 'size': 512, 'stream': 7,
     'time_us': 1000003, 'frames': []},
    {'action': 'free_completed', 'addr': 0x1000400, 'size': 512, 'stream': 7,
     'time_us': 1000003, 'frames': []},
    {'action': 'alloc', 'addr': 0x1000600, 'size': 256, 'stream': 0, 'time_us': 1000004,
     'frames': []},
    {'action': 'free_requested', 'addr': 0x1000600, 'size': 256, 'stream': 0,
     'time_us': 1000005, 'frames': []},
    {'action': 'alloc', 'addr': 0x1000800, 'size': 128, 'stream': 0, 'time_us': 1000006,
     'frames': []},
    {'action': 'free_requested', 'addr': 0x1000800, 'size': 128, 'stream': 0,
     'time_us': 1000007, 'frames': []},
    {'action': 'free_completed', 'addr': 0x1000600, 'size': 256, 'stream': 0,
     'time_us': 1000008, 'frames': []},
    {'action': 'free_completed', 'addr': 0x1000800, 'size': 128, 'stream': 0,
     'time_us': 1000200, 'frames': []},
  ]],
  'allocator_settings': {}, 'external_annotations': []})"));
  EXPECT_FALSE(rec.torch_snapshot.synthetic_time);
  EXPECT_EQ(rec.torch_snapshot.blocks_before_trace, 0u);
  EXPECT_EQ(rec.torch_snapshot.segments_before_trace, 0u);
  EXPECT_EQ(rec.events.front().ts_ns, 1000000000);
  EXPECT_EQ(rec.events.back().ts_ns, 1000200000);

  const std::vector<MemEvent> hal = of_kind(rec, MemEventKind::kMalloc, Layer::kHal);
  ASSERT_EQ(hal.size(), 1u);
  EXPECT_EQ(hal[0].addr, 0x1000000u);
  EXPECT_EQ(hal[0].size_bytes, 2097152u);
  EXPECT_EQ(text(rec, hal[0].name), "cudaMalloc");

  const std::vector<MemEvent> mallocs = of_kind(rec, MemEventKind::kMalloc);
  ASSERT_EQ(mallocs.size(), 4u);
  const MemEvent& first = mallocs[0];
  EXPECT_EQ(first.device, 0);
  EXPECT_EQ(first.size_bytes, 1000u);
  EXPECT_EQ(text(rec, first.owner), "encoder");
  EXPECT_EQ(first.name, 0u);  // compile_context N/A
  EXPECT_EQ(text(rec, first.stack_python),
            "/w/model.py(12): forward\n<eval_with_key>.3(5): fx\n/w/train.py(40): <module>");
  EXPECT_EQ(text(rec, first.stack_c),
            "?\?(torch::unwind::unwind())\nCUDACachingAllocator.cpp(malloc)");
  EXPECT_EQ(first.pool_used, 1000);
  EXPECT_EQ(first.pool_total, 2097152);  // the segment's pool state came first
  EXPECT_NE(first.allocation_id, 0u);
  EXPECT_EQ(text(rec, mallocs[1].name), "torch/_dynamo [0/0]");
  EXPECT_EQ(mallocs[1].stream, 7u);
  EXPECT_NE(mallocs[1].allocation_id, first.allocation_id);

  const std::vector<MemEvent> frees = of_kind(rec, MemEventKind::kFree);
  ASSERT_EQ(frees.size(), 3u);
  EXPECT_EQ(frees[0].addr, 0x1000400u);
  EXPECT_FALSE(frees[0].free_pending);  // its completion came with it
  EXPECT_EQ(frees[0].size_bytes, 512u);
  EXPECT_EQ(frees[0].allocation_id, mallocs[1].allocation_id);
  EXPECT_TRUE(frees[1].free_pending);  // another block's alloc came between
  EXPECT_TRUE(frees[2].free_pending);  // the next completion is another block's
  const std::vector<MemEvent> completions = of_kind(rec, MemEventKind::kFreeCompleted);
  ASSERT_EQ(completions.size(), 2u);
  EXPECT_EQ(completions[0].addr, 0x1000600u);
  EXPECT_EQ(completions[1].addr, 0x1000800u);
  EXPECT_EQ(completions[1].size_bytes, 128u);

  // Pool states: the trace's start, after the segment came, and the dump's.
  const std::vector<MemEvent> states = of_kind(rec, MemEventKind::kSnapshot);
  ASSERT_EQ(states.size(), 3u);
  EXPECT_EQ(states[0].snap_reserved, 0);
  EXPECT_EQ(states[1].snap_reserved, 2097152);
  EXPECT_EQ(states[2].snap_reserved, 2097152);
  EXPECT_EQ(states[2].snap_allocated, 1024);  // the allocator's block sizes
  EXPECT_EQ(states[2].ts_ns, 1000200000);
  for (const MemEvent& e : rec.events) {
    EXPECT_EQ(e.pid, 0u);
    EXPECT_EQ(e.device, 0);
  }
  ASSERT_EQ(rec.processes.size(), 1u);
}

// Expandable segments map pages and unmap ranges that need not match what was mapped:
// the pages a release leaves stay HAL blocks of their own.
TEST(TorchSnapshotEvents, PartialUnmapKeepsTheRestOfTheRanges) {
  MEMTAP_SKIP_WITHOUT_PYTHON();
  test::TempDir dir;
  // M: a MiB, as a lambda's argument.
  const Recording rec = read_ok(python_pickle(dir, "map.pickle", "(lambda M: " + std::string(R"({
  'segments': [
    {'device': 2, 'address': 0x40000000, 'total_size': 2 * M, 'allocated_size': 0,
     'stream': 0, 'is_expandable': True, 'frames': [],
     'blocks': [{'address': 0x40000000, 'size': 2 * M, 'state': 'inactive'}]},
    {'device': 2, 'address': 0x40000000 + 6 * M, 'total_size': 2 * M, 'allocated_size': 0,
     'stream': 0, 'is_expandable': True, 'frames': [],
     'blocks': [{'address': 0x40000000 + 6 * M, 'size': 2 * M, 'state': 'inactive'}]}],
  'device_traces': [[], [], [
    {'action': 'segment_map', 'addr': 0x40000000, 'size': 4 * M, 'stream': 0, 'time_us': 10},
    {'action': 'segment_map', 'addr': 0x40000000 + 4 * M, 'size': 4 * M, 'stream': 0,
     'time_us': 11},
    {'action': 'segment_unmap', 'addr': 0x40000000 + 2 * M, 'size': 4 * M, 'stream': 0,
     'time_us': 12}]]})") + ")(1 << 20)"));
  std::vector<std::string> hal;
  for (const MemEvent& e : rec.events) {
    if (e.layer != Layer::kHal) continue;
    ASSERT_EQ(e.device, 2);
    hal.push_back((e.kind == MemEventKind::kMalloc ? "MALLOC " : "FREE ") +
                  std::to_string((e.addr - 0x40000000) >> 20) + "M " +
                  std::to_string(e.size_bytes >> 20) + "M");
  }
  EXPECT_EQ(hal, (std::vector<std::string>{"MALLOC 0M 4M", "MALLOC 4M 4M", "FREE 0M 4M",
                                           "MALLOC 0M 2M", "FREE 4M 4M", "MALLOC 6M 2M"}));
  EXPECT_EQ(text(rec, of_kind(rec, MemEventKind::kMalloc, Layer::kHal)[0].name), "cuMemMap");
  const std::vector<MemEvent> states = of_kind(rec, MemEventKind::kSnapshot);
  ASSERT_EQ(states.size(), 5u);  // start, three changes, the dump
  EXPECT_EQ(states[3].snap_reserved, 4 << 20);
  EXPECT_EQ(states[4].snap_reserved, 4 << 20);
  EXPECT_EQ(rec.torch_snapshot.segments_before_trace, 0u);
}

// An OOM names the bytes asked for and the device's largest live blocks then.
TEST(TorchSnapshotEvents, OomWithTheBlocksLiveThen) {
  MEMTAP_SKIP_WITHOUT_PYTHON();
  test::TempDir dir;
  const Recording rec = read_ok(python_pickle(dir, "oom.pickle", R"({
  'segments': [],
  'device_traces': [[
    {'action': 'segment_alloc', 'addr': 0x2000000, 'size': 20 << 20, 'stream': 0, 'time_us': 5},
    {'action': 'alloc', 'addr': 0x2000000, 'size': 2 << 20, 'stream': 0, 'time_us': 6,
     'frames': FRAMES},
    {'action': 'alloc', 'addr': 0x2200000, 'size': 8 << 20, 'stream': 0, 'time_us': 7},
    {'action': 'oom', 'device_free': 1 << 20, 'size': 30 << 20, 'stream': 5, 'time_us': 8,
     'frames': FRAMES}]]})"));
  const std::vector<MemEvent> ooms = of_kind(rec, MemEventKind::kOom);
  ASSERT_EQ(ooms.size(), 1u);
  EXPECT_EQ(ooms[0].size_bytes, 30u << 20);
  EXPECT_EQ(ooms[0].stream, 5u);
  EXPECT_EQ(ooms[0].device, 0);
  EXPECT_EQ(text(rec, ooms[0].name), "CUDACachingAllocator");
  EXPECT_EQ(text(rec, ooms[0].stack_python).rfind("/w/model.py(12): forward", 0), 0u);
  const std::vector<MemEvent> top = of_kind(rec, MemEventKind::kOomTopAlloc);
  ASSERT_EQ(top.size(), 2u);
  EXPECT_EQ(top[0].addr, 0x2200000u);  // largest first
  EXPECT_EQ(top[0].size_bytes, 8u << 20);
  EXPECT_EQ(top[1].addr, 0x2000000u);
  EXPECT_NE(top[1].stack_python, 0u);
  EXPECT_EQ(top[0].ts_ns, ooms[0].ts_ns);
}

// External annotations, torch 2.3's user_defined entries and annotate entries: MSTX ranges
// and marks of no device, at their times.
TEST(TorchSnapshotEvents, AnnotationsAreRangesAndMarks) {
  MEMTAP_SKIP_WITHOUT_PYTHON();
  test::TempDir dir;
  const Recording rec = read_ok(python_pickle(dir, "notes.pickle", R"({
  'segments': [],
  'device_traces': [[
    {'action': 'user_defined', 'addr': 0, 'size': 0, 'stream': 0, 'time_us': 20,
     'frames': [{'name': 'START', 'filename': '## forward ##', 'line': 0}]},
    {'action': 'alloc', 'addr': 0x3000000, 'size': 64, 'stream': 0, 'time_us': 21},
    {'action': 'user_defined', 'addr': 0, 'size': 0, 'stream': 0, 'time_us': 22,
     'frames': [{'name': 'END', 'filename': '## forward ##', 'line': 0}]},
    {'action': 'annotate', 'addr': 0, 'size': 0, 'stream': 0, 'time_us': 23,
     'user_metadata': 'checkpoint saved'}]],
  'external_annotations': [
    {'stage': 'START', 'name': 'ProfilerStep#1', 'device': 0, 'time_us': 10},
    {'stage': 'END', 'name': 'ProfilerStep#1', 'device': 0, 'time_us': 30}]})"));
  std::vector<std::string> marks;
  for (const MemEvent& e : rec.events) {
    const char* what = e.kind == MemEventKind::kRangeStart ? "start "
                       : e.kind == MemEventKind::kRangeEnd ? "end "
                       : e.kind == MemEventKind::kMark     ? "mark "
                                                           : nullptr;
    if (what == nullptr) continue;
    EXPECT_EQ(e.device, kNoDevice);
    marks.push_back(what + text(rec, e.name) + " " + std::to_string(e.ts_ns / 1000));
  }
  EXPECT_EQ(marks, (std::vector<std::string>{"start ProfilerStep#1 10", "start ## forward ## 20",
                                             "end ## forward ## 22", "mark checkpoint saved 23",
                                             "end ProfilerStep#1 30"}));
}

// The trace is a ring buffer: blocks and segments it frees or the dump holds without its
// having allocated them were there when it began.
TEST(TorchSnapshotEvents, WhatWasThereBeforeTheTraceIsAllocatedAtItsStart) {
  MEMTAP_SKIP_WITHOUT_PYTHON();
  test::TempDir dir;
  const Recording rec = read_ok(python_pickle(dir, "before.pickle", R"({
  'segments': [{'device': 0, 'address': 0x5000000, 'total_size': 4 << 20,
                'allocated_size': 3 << 20, 'stream': 0, 'is_expandable': False,
                'frames': FRAMES,
                'blocks': [{'address': 0x5000000, 'size': 1 << 20, 'requested_size': 1000000,
                            'state': 'active_allocated', 'frames': FRAMES},
                           {'address': 0x5100000, 'size': 1 << 20, 'requested_size': 2000,
                            'state': 'active_pending_free', 'frames': []},
                           {'address': 0x5200000, 'size': 1 << 20, 'requested_size': 0,
                            'state': 'inactive', 'frames': []},
                           {'address': 0x5300000, 'size': 1 << 20, 'requested_size': 100,
                            'state': 'active_allocated', 'frames': []}]}],
  'device_traces': [[
    {'action': 'free_requested', 'addr': 0x5200000, 'size': 4096, 'stream': 0,
     'time_us': 50},
    {'action': 'free_completed', 'addr': 0x5200000, 'size': 4096, 'stream': 0,
     'time_us': 50},
    {'action': 'alloc', 'addr': 0x5300000, 'size': 100, 'stream': 0, 'time_us': 60}]]})"));
  const TorchSnapshotFacts& f = rec.torch_snapshot;
  EXPECT_EQ(f.blocks_before_trace, 3u);
  EXPECT_EQ(f.blocks_before_trace_freed, 1u);
  EXPECT_EQ(f.segments_before_trace, 1u);
  const std::vector<MemEvent> mallocs = of_kind(rec, MemEventKind::kMalloc);
  ASSERT_EQ(mallocs.size(), 4u);
  // Those of before the trace, at its start, under their owner; the freed one first (the
  // trace is read first), with the size its free gives.
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(mallocs[i].ts_ns, 50000) << i;
    EXPECT_EQ(text(rec, mallocs[i].owner), kBeforeTraceOwner) << i;
  }
  EXPECT_EQ(mallocs[0].addr, 0x5200000u);
  EXPECT_EQ(mallocs[0].size_bytes, 4096u);
  EXPECT_EQ(mallocs[1].addr, 0x5000000u);
  EXPECT_EQ(mallocs[1].size_bytes, 1000000u);  // requested, as the trace's sizes are
  EXPECT_NE(mallocs[1].stack_python, 0u);
  EXPECT_EQ(mallocs[2].addr, 0x5100000u);
  EXPECT_EQ(mallocs[3].owner, 0u);
  const std::vector<MemEvent> frees = of_kind(rec, MemEventKind::kFree);
  ASSERT_EQ(frees.size(), 2u);
  EXPECT_EQ(frees[0].addr, 0x5100000u);  // pending since before the trace
  EXPECT_TRUE(frees[0].free_pending);
  EXPECT_EQ(frees[1].addr, 0x5200000u);
  EXPECT_EQ(text(rec, frees[1].owner), kBeforeTraceOwner);
  const std::vector<MemEvent> segments = of_kind(rec, MemEventKind::kMalloc, Layer::kHal);
  ASSERT_EQ(segments.size(), 1u);
  EXPECT_EQ(segments[0].size_bytes, 4u << 20);
  EXPECT_EQ(text(rec, segments[0].owner), kBeforeTraceOwner);
  EXPECT_EQ(segments[0].ts_ns, 50000);
}

// torch 2.0 wrote no time_us: the entries get made-up times in order, and the external
// annotations (which have times of their own) cannot be placed among them.
TEST(TorchSnapshotEvents, MadeUpTimesWithoutTimeUs) {
  MEMTAP_SKIP_WITHOUT_PYTHON();
  test::TempDir dir;
  const std::string path = python_pickle(dir, "old.pickle", R"({
  'segments': [],
  'device_traces': [[
    {'action': 'segment_alloc', 'addr': 0x6000000, 'size': 2 << 20, 'stream': 0},
    {'action': 'alloc', 'addr': 0x6000000, 'size': 512, 'stream': 0},
    {'action': 'free_requested', 'addr': 0x6000000, 'size': 512, 'stream': 0},
    {'action': 'free_completed', 'addr': 0x6000000, 'size': 512, 'stream': 0}],
    [{'action': 'alloc', 'addr': 0x7000000, 'size': 64, 'stream': 0}]],
  'external_annotations': [{'stage': 'START', 'name': 'x', 'device': 0, 'time_us': 3}]})",
                                         2);
  const Recording rec = read_ok(path);
  EXPECT_TRUE(rec.torch_snapshot.synthetic_time);
  std::vector<std::pair<int32_t, int64_t>> pta;
  for (const MemEvent& e : rec.events) {
    if (e.layer == Layer::kPta && e.kind != MemEventKind::kSnapshot) {
      pta.emplace_back(e.device, e.ts_ns);
    }
  }
  // Entry i of each device at 1 s + (i + 1) ms.
  EXPECT_EQ(pta, (std::vector<std::pair<int32_t, int64_t>>{
                     {1, 1001000000}, {0, 1002000000}, {0, 1003000000}}));
  EXPECT_EQ(rec.rows_skipped, 1u);
  EXPECT_EQ(rec.warning, path +
                             ": 1 of 6 rows skipped; the first, external_annotations[0]: no "
                             "time to place it at: the trace has no time_us");
}

// An entry that cannot be read is skipped and named; a file where none can be is an error.
TEST(TorchSnapshotEvents, EntriesThatCannotBeReadAreSkippedAndNamed) {
  MEMTAP_SKIP_WITHOUT_PYTHON();
  test::TempDir dir;
  const std::string some = python_pickle(dir, "some.pickle", R"({'segments': [],
  'device_traces': [[
    {'action': 'alloc', 'addr': 0x1000, 'size': 'big', 'stream': 0, 'time_us': 1},
    {'action': 'teleport', 'addr': 0x1000, 'size': 1, 'stream': 0, 'time_us': 2},
    {'action': 'alloc', 'addr': 0x2000, 'size': 8, 'stream': 0, 'time_us': 3},
    {'action': 'alloc', 'addr': -1, 'size': 8, 'stream': 0, 'time_us': 4},
    7]]})");
  const Recording rec = read_ok(some);
  EXPECT_EQ(rec.rows_read, 5u);
  EXPECT_EQ(rec.rows_skipped, 4u);
  EXPECT_EQ(rec.warning, some +
                             ": 4 of 5 rows skipped; the first, device_traces[0][0]: 'size' is a "
                             "str, expected an int");
  EXPECT_EQ(of_kind(rec, MemEventKind::kMalloc).size(), 1u);

  const std::string none = python_pickle(dir, "none.pickle", R"({'device_traces': [[
    {'action': 'teleport', 'addr': 0x1000, 'size': 1, 'stream': 0, 'time_us': 2}]]})");
  EXPECT_EQ(read_error(none), none +
                                  ": none of the 1 rows could be read; the first, "
                                  "device_traces[0][0]: 'action' 'teleport' is not one memtap "
                                  "knows");
  const std::string segment = python_pickle(dir, "segment.pickle", R"([{'device': 0,
    'address': 0x1000, 'total_size': 'x', 'blocks': []}])");
  EXPECT_EQ(read_error(segment), segment +
                                     ": none of the 1 rows could be read; the first, "
                                     "segments[0]: 'total_size' is a str, expected an int");
}

TEST(TorchSnapshotEvents, APickleThatIsNoSnapshotSaysWhatItHolds) {
  MEMTAP_SKIP_WITHOUT_PYTHON();
  test::TempDir dir;
  const std::string expected =
      "; expected a dict with 'segments' and 'device_traces' (torch.cuda.memory._dump_snapshot) "
      "or a list of segments (torch.cuda.memory_snapshot())";
  const std::string str = python_pickle(dir, "str.pickle", "'hello'");
  EXPECT_EQ(read_error(str),
            str + ": not a PyTorch memory snapshot: the pickle holds a str" + expected);
  const std::string dict = python_pickle(dir, "dict.pickle", "{'a': 1}");
  EXPECT_EQ(read_error(dict), dict +
                                  ": not a PyTorch memory snapshot: the pickle's dict has neither "
                                  "'segments' nor 'device_traces'" +
                                  expected);
  const std::string list = python_pickle(dir, "list.pickle", "[1, 2]");
  EXPECT_EQ(read_error(list),
            list + ": not a PyTorch memory snapshot: the pickle holds a list of something else" +
                expected);
}

// A pickle that would run a command if Python loaded it: refused at its GLOBAL, and the
// command never runs.
TEST(TorchSnapshotEvents, APickleThatWouldRunACommandIsRefused) {
  MEMTAP_SKIP_WITHOUT_PYTHON();
  test::TempDir dir;
  const std::string marker = dir.file("pwned");
  const std::string command = "touch " + marker;
  std::string bytes =
      "\x80\x02"
      "cposix\nsystem\nq";
  bytes += '\0';
  bytes += 'X';
  const uint32_t length = uint32_t(command.size());
  bytes.append(reinterpret_cast<const char*>(&length), 4);
  bytes += command + "q\x01\x85q\x02Rq\x03.";
  const std::string path = dir.file("snapshot.pickle");
  test::write_file(path, bytes);
  EXPECT_EQ(read_error(path), path +
                                  ": byte 2: refused opcode GLOBAL (0x63): it would import a name; "
                                  "memtap reads only plain data (dicts, lists, strings, numbers) "
                                  "from a pickle");
  EXPECT_FALSE(std::filesystem::exists(marker));
}

}  // namespace
}  // namespace memtap
