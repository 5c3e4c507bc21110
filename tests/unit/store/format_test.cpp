// The column texts of a DumpRow, independent of SQLite.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>
#include <string_view>

#include "monitor/store/memscope_format.h"

namespace memtap {
namespace {

DumpRow malloc_row() {
  DumpRow row;
  row.event = DumpEvent::kMalloc;
  row.event_type = DumpEventType::kHost;
  row.ptr = 0x000012c080000000;
  row.size_bytes = 6356992;
  row.allocation_id = 4;
  return row;
}

// Attr without an owner (the owner case has its own tests).
std::string_view attr_of(const DumpRow& row, AttrText& buffer) {
  static std::string spill;
  return dump_attr_text(row, {}, buffer, spill);
}

TEST(MemscopeFormat, EventAndTypeNames) {
  EXPECT_EQ(dump_event_text(DumpEvent::kMalloc), "MALLOC");
  EXPECT_EQ(dump_event_text(DumpEvent::kFree), "FREE");
  EXPECT_EQ(dump_event_text(DumpEvent::kSystem), "SYSTEM");
  EXPECT_EQ(dump_event_type_text(DumpEventType::kHost), "HOST");
  EXPECT_EQ(dump_event_type_text(DumpEventType::kStartTrace), "START_TRACE");
  EXPECT_EQ(dump_event_type_text(DumpEventType::kStopTrace), "STOP_TRACE");
}

TEST(MemscopeFormat, ContextEventsAreSpelledAsMsMemScopeWritesThem) {
  EXPECT_EQ(dump_event_text(DumpEvent::kMstx), "MSTX");
  EXPECT_EQ(dump_event_text(DumpEvent::kOpLaunch), "OP_LAUNCH");
  EXPECT_EQ(dump_event_type_text(DumpEventType::kStep), "STEP");
  EXPECT_EQ(dump_event_type_text(DumpEventType::kMark), "Mark");
  EXPECT_EQ(dump_event_type_text(DumpEventType::kRangeStart), "Range_start");
  EXPECT_EQ(dump_event_type_text(DumpEventType::kRangeEnd), "Range_end");
  EXPECT_EQ(dump_event_type_text(DumpEventType::kAtenStart), "ATEN_START");
  EXPECT_EQ(dump_event_type_text(DumpEventType::kAtenEnd), "ATEN_END");
  EXPECT_EQ(dump_device_id_text(DumpEvent::kMstx), "N/A");
  EXPECT_EQ(dump_device_id_text(DumpEvent::kOpLaunch), "N/A");
  StepText step;
  EXPECT_EQ(format_step_text(42, step), "42");
  EXPECT_EQ(format_step_text(std::numeric_limits<uint64_t>::max(), step), "18446744073709551615");
  DumpRow mark;
  mark.event = DumpEvent::kMstx;
  mark.event_type = DumpEventType::kMark;
  AttrText buffer;
  PtrText ptr;
  EXPECT_EQ(attr_of(mark, buffer), "");
  EXPECT_EQ(dump_ptr_text(mark, ptr), "N/A");
}

TEST(MemscopeFormat, OwnerFollowsTheSizeAndBeforeKindAndInheritedFrom) {
  DumpRow row = malloc_row();
  AttrText buffer;
  std::string spill;
  const std::string owner = format_owner_attr("model@activations");
  EXPECT_EQ(dump_attr_text(row, owner, buffer, spill),
            R"({"allocation_id":"4","addr":"0x000012c080000000","size":"6356992",)"
            R"("owner":"model@activations"})");
  row.is_mmap = true;
  row.inherited_from_pid = 7;
  EXPECT_EQ(dump_attr_text(row, owner, buffer, spill),
            R"({"allocation_id":"4","addr":"0x000012c080000000","size":"6356992",)"
            R"("owner":"model@activations","kind":"mmap","inherited_from":"7"})");
  // A label far longer than the fixed buffer.
  const std::string long_label(1000, 'x');
  const std::string_view attr = dump_attr_text(row, format_owner_attr(long_label), buffer, spill);
  EXPECT_NE(attr.find(long_label), std::string_view::npos);
  EXPECT_EQ(attr.substr(attr.size() - 2), "\"}");
}

TEST(MemscopeFormat, OwnerIsEscapedAsAJsonString) {
  EXPECT_EQ(format_owner_attr("a\"b\\c\nd\x01"), R"(","owner":"a\"b\\c\nd\u0001)");
}

TEST(MemscopeFormat, DeviceIsCpuForHostMemoryAndNaForSystem) {
  EXPECT_EQ(dump_device_id_text(DumpEvent::kMalloc), "cpu");
  EXPECT_EQ(dump_device_id_text(DumpEvent::kFree), "cpu");
  EXPECT_EQ(dump_device_id_text(DumpEvent::kSystem), "N/A");
}

TEST(MemscopeFormat, PtrIsSixteenLowerCaseHexDigits) {
  PtrText buffer;
  EXPECT_EQ(format_ptr_hex(0, buffer), "0x0000000000000000");
  EXPECT_EQ(format_ptr_hex(0xABCDEF, buffer), "0x0000000000abcdef");
  EXPECT_EQ(format_ptr_hex(std::numeric_limits<uint64_t>::max(), buffer), "0xffffffffffffffff");
  EXPECT_EQ(format_ptr_hex(0x8000000000000001, buffer), "0x8000000000000001");
}

TEST(MemscopeFormat, PtrIsNaForSystemRows) {
  DumpRow row;
  row.event = DumpEvent::kSystem;
  row.ptr = 0x1234;  // ignored: SYSTEM has no address
  PtrText buffer;
  EXPECT_EQ(dump_ptr_text(row, buffer), "N/A");
}

TEST(MemscopeFormat, AttrOfMallocMatchesMsMemScope) {
  AttrText buffer;
  EXPECT_EQ(attr_of(malloc_row(), buffer),
            R"({"allocation_id":"4","addr":"0x000012c080000000","size":"6356992"})");
}

TEST(MemscopeFormat, AttrAddsKindThenInheritedFrom) {
  DumpRow row = malloc_row();
  row.event = DumpEvent::kFree;
  row.is_mmap = true;
  AttrText buffer;
  EXPECT_EQ(attr_of(row, buffer),
            R"({"allocation_id":"4","addr":"0x000012c080000000","size":"6356992","kind":"mmap"})");
  row.inherited_from_pid = 4242;
  EXPECT_EQ(attr_of(row, buffer),
            R"({"allocation_id":"4","addr":"0x000012c080000000","size":"6356992",)"
            R"("kind":"mmap","inherited_from":"4242"})");
  row.is_mmap = false;
  EXPECT_EQ(attr_of(row, buffer),
            R"({"allocation_id":"4","addr":"0x000012c080000000","size":"6356992",)"
            R"("inherited_from":"4242"})");
}

TEST(MemscopeFormat, AttrAtItsLongestFitsTheBuffer) {
  DumpRow row = malloc_row();
  row.ptr = row.size_bytes = row.allocation_id = std::numeric_limits<uint64_t>::max();
  row.is_mmap = true;
  row.inherited_from_pid = std::numeric_limits<uint32_t>::max();
  AttrText buffer;
  EXPECT_EQ(attr_of(row, buffer),
            R"({"allocation_id":"18446744073709551615","addr":"0xffffffffffffffff",)"
            R"("size":"18446744073709551615","kind":"mmap","inherited_from":"4294967295"})");
}

TEST(MemscopeFormat, AttrIsEmptyTextForSystemRows) {
  DumpRow row;
  row.event = DumpEvent::kSystem;
  row.event_type = DumpEventType::kStartTrace;
  AttrText buffer;
  const std::string_view attr = attr_of(row, buffer);
  EXPECT_TRUE(attr.empty());
  EXPECT_NE(attr.data(), nullptr);  // a null pointer would be bound as SQL NULL, not ''
}

TEST(MemscopeFormat, SnapshotRowCarriesAppReservedAndTotal) {
  DumpRow row;
  row.event = DumpEvent::kSnapshot;
  row.event_type = DumpEventType::kSnapshot;
  row.size_bytes = 123456789;
  row.total_bytes = 25769803776;
  AttrText attr;
  PtrText ptr;
  EXPECT_EQ(dump_event_text(row.event), "SNAPSHOT");
  EXPECT_EQ(dump_event_type_text(row.event_type), "SNAPSHOT");
  EXPECT_EQ(dump_device_id_text(row.event), "cpu");
  EXPECT_EQ(dump_ptr_text(row, ptr), "N/A");
  EXPECT_EQ(attr_of(row, attr), R"({"app_reserved":"123456789","total":"25769803776"})");
  row.total_bytes = 0;  // unknown capacity: the key is left out rather than written as 0
  EXPECT_EQ(attr_of(row, attr), R"({"app_reserved":"123456789"})");
}

// A row about a device says its ordinal; pinned blocks are host memory.
TEST(MemscopeFormat, DeviceRowsSayTheirDevice) {
  DeviceText text;
  DumpRow hal = malloc_row();
  hal.event_type = DumpEventType::kHal;
  hal.device = 3;
  EXPECT_EQ(dump_device_id_text(hal, text), "3");
  hal.device = 65535;
  EXPECT_EQ(dump_device_id_text(hal, text), "65535");
  DumpRow pinned = malloc_row();
  pinned.event_type = DumpEventType::kHostPinned;
  EXPECT_EQ(dump_device_id_text(pinned, text), "cpu");
  DumpRow kernel;
  kernel.event = DumpEvent::kKernelLaunch;
  kernel.event_type = DumpEventType::kKernelLaunch;
  EXPECT_EQ(dump_device_id_text(kernel, text), "N/A");  // no device given
}

// The widest device block (its stream with it) fits the buffer without an owner.
TEST(MemscopeFormat, AWideDeviceBlockWithItsStreamFitsTheBuffer) {
  DumpRow row = malloc_row();
  row.event_type = DumpEventType::kHal;
  row.ptr = row.size_bytes = row.allocation_id = row.stream = ~uint64_t{0};
  row.has_stream = true;
  AttrText buffer;
  const std::string_view attr = attr_of(row, buffer);
  EXPECT_EQ(attr.data(), buffer.data());
  EXPECT_EQ(attr, R"({"allocation_id":"18446744073709551615","addr":"0xffffffffffffffff",)"
                  R"("size":"18446744073709551615","stream":"18446744073709551615"})");
  row.event_type = DumpEventType::kHost;  // heap blocks have no stream, whatever the flag says
  EXPECT_EQ(attr_of(row, buffer).find("stream"), std::string_view::npos);
}

// OOM_TRIGGER with msMemScope's keys; the API is text, escaped and of any length.
TEST(MemscopeFormat, OomTriggerNamesItsApiAsJson) {
  DumpRow row;
  row.event = DumpEvent::kOomDetail;
  row.event_type = DumpEventType::kOomTrigger;
  row.size_bytes = 1 << 30;
  row.stream = 7;
  AttrText buffer;
  std::string spill;
  const std::string api = json_string_content("cu\"Mem\"Alloc_v2" + std::string(300, 'x'));
  EXPECT_EQ(dump_attr_text(row, {}, buffer, spill, api),
            R"({"func":"cu\"Mem\"Alloc_v2)" + std::string(300, 'x') +
                R"(","req_size":"1073741824","size":"1073741824","stream":"7"})");
}

// The framework pool's blocks (PTA) as msMemScope writes them: the pool after the event,
// total before used, after the owner; memtap adds pending and the stream.
TEST(MemscopeFormat, PoolBlockRowsSayTheirPoolAfterTheEvent) {
  DumpRow row = malloc_row();
  row.event_type = DumpEventType::kPta;
  row.device = 1;
  row.ptr = 0xa000;
  row.size_bytes = 512;
  row.allocation_id = 1;
  row.pool_used = 512;
  row.pool_total = 2097152;
  row.has_stream = true;
  row.stream = 85;
  AttrText buffer;
  std::string spill;
  DeviceText device;
  PtrText ptr;
  EXPECT_EQ(dump_event_type_text(row.event_type), "PTA");
  EXPECT_EQ(dump_device_id_text(row, device), "1");
  EXPECT_EQ(dump_attr_text(row, format_owner_attr("model"), buffer, spill),
            R"({"allocation_id":"1","addr":"0x000000000000a000","size":"512","owner":"model",)"
            R"("total":"2097152","used":"512","stream":"85"})");
  row.event = DumpEvent::kFree;
  row.pool_used = 0;
  row.pool_total = -1;  // no pool state yet: no total
  row.free_pending = true;
  EXPECT_EQ(attr_of(row, buffer), R"({"allocation_id":"1","addr":"0x000000000000a000",)"
                                  R"("size":"512","used":"0","pending":"1","stream":"85"})");
  EXPECT_EQ(dump_ptr_text(row, ptr), "0x000000000000a000");
  row.event = DumpEvent::kMalloc;  // pending is a FREE's only
  EXPECT_EQ(attr_of(row, buffer).find("pending"), std::string_view::npos);
  row.event_type = DumpEventType::kHal;  // device blocks have no pool figures
  row.pool_total = 7;
  EXPECT_EQ(attr_of(row, buffer), R"({"allocation_id":"1","addr":"0x000000000000a000",)"
                                  R"("size":"512","stream":"85"})");
}

TEST(MemscopeFormat, AWidePoolBlockFitsTheBuffer) {
  DumpRow row = malloc_row();
  row.event = DumpEvent::kFree;
  row.event_type = DumpEventType::kPta;
  row.ptr = row.size_bytes = row.allocation_id = row.stream = ~uint64_t{0};
  row.pool_used = row.pool_total = std::numeric_limits<int64_t>::max();
  row.free_pending = row.has_stream = true;
  AttrText buffer;
  const std::string_view attr = attr_of(row, buffer);
  EXPECT_EQ(attr.data(), buffer.data());
  EXPECT_EQ(attr, R"({"allocation_id":"18446744073709551615","addr":"0xffffffffffffffff",)"
                  R"("size":"18446744073709551615","total":"9223372036854775807",)"
                  R"("used":"9223372036854775807","pending":"1","stream":"18446744073709551615"})");
}

TEST(MemscopeFormat, FreeCompletedAndAPoolSnapshotNameTheirDevice) {
  DumpRow done;
  done.event = DumpEvent::kFreeCompleted;
  done.event_type = DumpEventType::kPta;
  done.device = 0;
  done.ptr = 0xb000;
  done.size_bytes = 1024;
  done.allocation_id = 9;  // not written: the Ptr says which block
  AttrText buffer;
  PtrText ptr;
  DeviceText device;
  EXPECT_EQ(dump_event_text(done.event), "FREE_COMPLETED");
  EXPECT_EQ(dump_device_id_text(done, device), "0");
  EXPECT_EQ(dump_ptr_text(done, ptr), "0x000000000000b000");
  EXPECT_EQ(attr_of(done, buffer), R"({"size":"1024"})");
  DumpRow state;
  state.event = DumpEvent::kSnapshot;
  state.event_type = DumpEventType::kPta;
  state.device = 3;
  state.pool_used = 1536;
  state.pool_total = 2097152;
  EXPECT_EQ(dump_device_id_text(state, device), "3");
  EXPECT_EQ(dump_ptr_text(state, ptr), "N/A");
  EXPECT_EQ(attr_of(state, buffer), R"({"allocated":"1536","reserved":"2097152"})");
  // A sampled state with the pool's own peaks: msMemScope's keys, after the figures.
  state.has_pool_peaks = true;
  state.size_bytes = 4096;
  state.total_bytes = 4194304;
  EXPECT_EQ(attr_of(state, buffer), R"({"allocated":"1536","reserved":"2097152",)"
                                    R"("max_allocated":"4096","max_reserved":"4194304"})");
  state.pool_used = state.pool_total = std::numeric_limits<int64_t>::max();
  state.size_bytes = state.total_bytes = std::numeric_limits<uint64_t>::max();
  EXPECT_EQ(attr_of(state, buffer),
            R"({"allocated":"9223372036854775807","reserved":"9223372036854775807",)"
            R"("max_allocated":"18446744073709551615","max_reserved":"18446744073709551615"})");
}

}  // namespace
}  // namespace memtap
