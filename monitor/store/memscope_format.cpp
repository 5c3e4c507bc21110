// The text of a DumpRow's columns in msMemScope's format (see memscope_format.h).
#include "monitor/store/memscope_format.h"

#include <charconv>
#include <cstring>

namespace memtap {
namespace {

constexpr std::string_view kAttrAllocationId = "{\"allocation_id\":\"";
constexpr std::string_view kAttrAddr = "\",\"addr\":\"";
constexpr std::string_view kAttrSize = "\",\"size\":\"";
constexpr std::string_view kAttrKindMmap = "\",\"kind\":\"mmap";
constexpr std::string_view kAttrInheritedFrom = "\",\"inherited_from\":\"";
constexpr std::string_view kAttrEnd = "\"}";
constexpr std::string_view kAttrAppReserved = "{\"app_reserved\":\"";
constexpr std::string_view kAttrTotal = "\",\"total\":\"";
constexpr size_t kU64DigitsMax = 20;
constexpr size_t kU32DigitsMax = 10;

// If this fails, a row with every optional key and the widest numbers would not fit.
static_assert(kAttrTextMax >= kAttrAllocationId.size() + kU64DigitsMax + kAttrAddr.size() +
                                  kPtrTextMax + kAttrSize.size() + kU64DigitsMax +
                                  kAttrKindMmap.size() + kAttrInheritedFrom.size() + kU32DigitsMax +
                                  kAttrEnd.size());

// Appends into a buffer that static_assert above has proven large enough.
struct TextCursor {
  char* at;

  void put(std::string_view text) {
    std::memcpy(at, text.data(), text.size());
    at += text.size();
  }
  void put_decimal(uint64_t value) { at = std::to_chars(at, at + kU64DigitsMax, value).ptr; }
};

}  // namespace

std::string_view dump_event_text(DumpEvent event) {
  switch (event) {
    case DumpEvent::kMalloc:
      return "MALLOC";
    case DumpEvent::kFree:
      return "FREE";
    case DumpEvent::kSystem:
      return "SYSTEM";
    case DumpEvent::kSnapshot:
      return "SNAPSHOT";
  }
  return "N/A";  // a value outside the enum: keep the column non-empty rather than crash
}

std::string_view dump_event_type_text(DumpEventType type) {
  switch (type) {
    case DumpEventType::kHost:
      return "HOST";
    case DumpEventType::kStartTrace:
      return "START_TRACE";
    case DumpEventType::kStopTrace:
      return "STOP_TRACE";
    case DumpEventType::kSnapshot:
      return "SNAPSHOT";
  }
  return "N/A";
}

std::string_view dump_device_id_text(DumpEvent event) {
  return event == DumpEvent::kSystem ? "N/A" : "cpu";
}

std::string_view format_ptr_hex(uint64_t ptr, PtrText& out) {
  static constexpr char kDigits[] = "0123456789abcdef";
  out[0] = '0';
  out[1] = 'x';
  for (size_t i = kPtrTextMax; i > 2; --i) {
    out[i - 1] = kDigits[ptr & 0xf];
    ptr >>= 4;
  }
  return {out.data(), kPtrTextMax};
}

std::string_view dump_ptr_text(const DumpRow& row, PtrText& out) {
  if (row.event == DumpEvent::kSystem || row.event == DumpEvent::kSnapshot) return "N/A";
  return format_ptr_hex(row.ptr, out);
}

std::string_view dump_attr_text(const DumpRow& row, AttrText& out) {
  if (row.event == DumpEvent::kSystem) return "";
  TextCursor cursor{out.data()};
  if (row.event == DumpEvent::kSnapshot) {
    // Host memory samples: what the process holds (RSS) and what it may hold.
    cursor.put(kAttrAppReserved);
    cursor.put_decimal(row.size_bytes);
    if (row.total_bytes != 0) {
      cursor.put(kAttrTotal);
      cursor.put_decimal(row.total_bytes);
    }
    cursor.put(kAttrEnd);
    return {out.data(), size_t(cursor.at - out.data())};
  }
  cursor.put(kAttrAllocationId);
  cursor.put_decimal(row.allocation_id);
  cursor.put(kAttrAddr);
  PtrText ptr;
  cursor.put(format_ptr_hex(row.ptr, ptr));
  cursor.put(kAttrSize);
  cursor.put_decimal(row.size_bytes);
  if (row.is_mmap) cursor.put(kAttrKindMmap);
  if (row.inherited_from_pid != 0) {
    cursor.put(kAttrInheritedFrom);
    cursor.put_decimal(row.inherited_from_pid);
  }
  cursor.put(kAttrEnd);
  return {out.data(), static_cast<size_t>(cursor.at - out.data())};
}

}  // namespace memtap
