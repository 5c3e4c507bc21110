// Events back to memtap's rows: every kind of row memtap's writer makes, read as the reader
// and the live path read it (event_from_row), comes back as a row the writer spells exactly
// as it spelled the original; events memtap's rows cannot say are refused, not mangled.
#include "monitor/store/export/event_dump_row.h"

#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "monitor/engine/row_events.h"
#include "monitor/store/memscope_format.h"

namespace memtap {
namespace {

// The columns the writer makes of a row, with its strings by the row's ids.
std::vector<std::string> columns(const DumpRow& row, const std::vector<std::string>& strings) {
  const auto text = [&](uint32_t id) { return id < strings.size() ? strings[id] : std::string(); };
  StepText step;
  DeviceText device;
  PtrText ptr;
  AttrText attr;
  std::string spill, owner;
  if (row.owner != 0) owner = format_owner_attr(text(row.owner));
  const std::string func = json_string_content(text(row.name));
  return {std::string(dump_event_text(row.event)),
          std::string(dump_event_type_text(row.event_type)),
          std::string(dump_name_text(row, text(row.name), step)),
          std::to_string(row.timestamp_ns),
          std::to_string(row.process_id),
          std::to_string(row.thread_id),
          std::string(dump_device_id_text(row, device)),
          std::string(dump_ptr_text(row, ptr)),
          std::string(dump_attr_text(row, owner, attr, spill, func)),
          text(row.stack_python),
          text(row.stack_c)};
}

DumpRow base(DumpEvent event, DumpEventType type) {
  DumpRow row;
  row.event = event;
  row.event_type = type;
  row.timestamp_ns = 1795759223146777183;
  row.process_id = 4711;
  row.thread_id = 4712;
  return row;
}

std::vector<DumpRow> every_kind_of_row() {
  std::vector<DumpRow> rows;
  DumpRow r = base(DumpEvent::kMalloc, DumpEventType::kHost);
  r.ptr = 0x55fbaac5f210;
  r.size_bytes = 37;
  r.allocation_id = 1;
  r.owner = 1;
  r.stack_python = 2;
  r.stack_c = 3;
  rows.push_back(r);
  r.event = DumpEvent::kFree;
  r.is_mmap = true;
  rows.push_back(r);
  r = base(DumpEvent::kMalloc, DumpEventType::kHal);
  r.device = 1;
  r.ptr = 0x7fc3d0800000;
  r.size_bytes = 2 << 20;
  r.allocation_id = 9;
  r.name = 4;
  r.has_stream = true;
  r.stream = 140478995535264;
  rows.push_back(r);
  r.event_type = DumpEventType::kHostPinned;
  r.device = kDumpNoDevice;
  rows.push_back(r);
  r = base(DumpEvent::kMalloc, DumpEventType::kPta);
  r.device = 0;
  r.ptr = 0x7fc3d0600000;
  r.size_bytes = 524288;
  r.allocation_id = 12;
  r.owner = 1;
  r.pool_used = 1572864;
  r.pool_total = 4194304;
  r.has_stream = true;
  r.stream = 7;
  rows.push_back(r);
  r.event = DumpEvent::kFree;
  r.free_pending = true;
  r.pool_total = -1;
  rows.push_back(r);
  r = base(DumpEvent::kFreeCompleted, DumpEventType::kPta);
  r.device = 0;
  r.ptr = 0x7fc3d0600000;
  r.size_bytes = 524288;
  rows.push_back(r);
  r = base(DumpEvent::kKernelLaunch, DumpEventType::kKernelLaunch);
  r.device = 0;
  r.name = 4;
  r.has_stream = true;
  r.stream = 7;
  rows.push_back(r);
  r = base(DumpEvent::kOomDetail, DumpEventType::kOomTrigger);
  r.device = 0;
  r.name = 4;
  r.size_bytes = 1 << 30;
  r.has_stream = true;
  r.stack_python = 2;
  rows.push_back(r);
  r = base(DumpEvent::kOomDetail, DumpEventType::kOomTopAlloc);
  r.device = 0;
  r.name = 4;
  r.ptr = 0x7fc3d0600000;
  r.size_bytes = 5 << 20;
  r.allocation_id = 3;
  r.owner = 1;
  rows.push_back(r);
  r = base(DumpEvent::kSnapshot, DumpEventType::kSnapshot);
  r.size_bytes = 10788864;
  r.total_bytes = 25276514304;
  rows.push_back(r);
  r = base(DumpEvent::kSnapshot, DumpEventType::kPta);
  r.device = 0;
  r.pool_used = 1048576;
  r.pool_total = 4194304;
  rows.push_back(r);
  r.has_pool_peaks = true;  // a sampled state with the pool's own peaks
  r.size_bytes = 3 << 20;
  r.total_bytes = 8 << 20;
  rows.push_back(r);
  rows.push_back(base(DumpEvent::kSystem, DumpEventType::kStartTrace));
  r = base(DumpEvent::kSystem, DumpEventType::kStartTrace);
  r.device = 0;
  r.size_bytes = 1 << 28;
  r.total_bytes = 1 << 29;
  rows.push_back(r);
  rows.push_back(base(DumpEvent::kSystem, DumpEventType::kStopTrace));
  r = base(DumpEvent::kSystem, DumpEventType::kStep);
  r.step = 3;
  rows.push_back(r);
  for (DumpEventType type :
       {DumpEventType::kMark, DumpEventType::kRangeStart, DumpEventType::kRangeEnd}) {
    r = base(DumpEvent::kMstx, type);
    r.name = 5;
    rows.push_back(r);
  }
  for (DumpEventType type : {DumpEventType::kAtenStart, DumpEventType::kAtenEnd}) {
    r = base(DumpEvent::kOpLaunch, type);
    r.name = 6;
    r.device = 0;
    rows.push_back(r);
  }
  return rows;
}

TEST(EventDumpRow, EveryRowMemtapWritesComesBackSpelledTheSame) {
  // Session strings by id; the table's ids differ from them, as a reader's would.
  const std::vector<std::string> session = {"",
                                            "model@layer1",
                                            "train.py(12): step",
                                            "libtorch.so(at::empty+0x1c) [0x7f00]",
                                            "cudaMalloc",
                                            "phase \"one\"",
                                            "aten::mm"};
  StringTable table;
  table.intern("something else first");
  RowStrings strings(&table);
  for (uint32_t id = 1; id < session.size(); ++id) strings.add(id, session[id]);
  std::vector<std::string> by_table_id(table.size());
  for (uint32_t id = 0; id < table.size(); ++id) by_table_id[id] = table.get(id);

  for (const DumpRow& row : every_kind_of_row()) {
    const MemEvent event = event_from_row(row, strings);
    by_table_id.resize(table.size());  // a step's number is interned as it is read
    for (uint32_t id = 0; id < table.size(); ++id) by_table_id[id] = table.get(id);
    DumpRow back;
    ASSERT_TRUE(dump_row_from_event(event, table, &back))
        << dump_event_text(row.event) << " " << dump_event_type_text(row.event_type);
    EXPECT_EQ(columns(back, by_table_id), columns(row, session))
        << dump_event_text(row.event) << " " << dump_event_type_text(row.event_type);
  }
}

TEST(EventDumpRow, EventsMemtapsRowsCannotSayAreRefused) {
  StringTable table;
  DumpRow row;
  MemEvent e;
  e.kind = MemEventKind::kAccess;
  EXPECT_FALSE(dump_row_from_event(e, table, &row));
  e.kind = MemEventKind::kOther;
  EXPECT_FALSE(dump_row_from_event(e, table, &row));
  e.kind = MemEventKind::kMalloc;
  for (Layer layer : {Layer::kAtb, Layer::kMindspore, Layer::kPtaWorkspace, Layer::kOther}) {
    e.layer = layer;
    EXPECT_FALSE(dump_row_from_event(e, table, &row)) << layer_name(layer);
  }
  e.layer = Layer::kHal;
  EXPECT_TRUE(dump_row_from_event(e, table, &row));
  // A device's SNAPSHOT that is not its pool's (msMemScope's, a memory_record APP row).
  e.kind = MemEventKind::kSnapshot;
  e.layer = Layer::kOther;
  e.device = 0;
  EXPECT_FALSE(dump_row_from_event(e, table, &row));
}

}  // namespace
}  // namespace memtap
