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
    case DumpEvent::kMstx:
      return "MSTX";
    case DumpEvent::kOpLaunch:
      return "OP_LAUNCH";
    case DumpEvent::kTraceSlice:
      break;  // no memscope_dump row
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
    case DumpEventType::kStep:
      return "STEP";
    case DumpEventType::kMark:
      return "Mark";
    case DumpEventType::kRangeStart:
      return "Range_start";
    case DumpEventType::kRangeEnd:
      return "Range_end";
    case DumpEventType::kAtenStart:
      return "ATEN_START";
    case DumpEventType::kAtenEnd:
      return "ATEN_END";
  }
  return "N/A";
}

std::string_view dump_device_id_text(DumpEvent event) {
  const bool host_memory =
      event == DumpEvent::kMalloc || event == DumpEvent::kFree || event == DumpEvent::kSnapshot;
  return host_memory ? "cpu" : "N/A";
}

std::string_view format_step_text(uint64_t step, StepText& out) {
  const auto end = std::to_chars(out.data(), out.data() + out.size(), step).ptr;
  return {out.data(), size_t(end - out.data())};
}

std::string format_owner_attr(std::string_view owner) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string text = "\",\"owner\":\"";
  text.reserve(text.size() + owner.size());
  for (const char c : owner) {
    switch (c) {
      case '"':
        text += "\\\"";
        break;
      case '\\':
        text += "\\\\";
        break;
      case '\n':
        text += "\\n";
        break;
      case '\t':
        text += "\\t";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          text += "\\u00";
          text += kHex[(c >> 4) & 0xf];
          text += kHex[c & 0xf];
        } else {
          text += c;
        }
    }
  }
  return text;
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
  if (row.event != DumpEvent::kMalloc && row.event != DumpEvent::kFree) return "N/A";
  return format_ptr_hex(row.ptr, out);
}

std::string_view dump_attr_text(const DumpRow& row, std::string_view owner_attr, AttrText& out,
                                std::string& spill) {
  if (row.event != DumpEvent::kMalloc && row.event != DumpEvent::kFree &&
      row.event != DumpEvent::kSnapshot) {
    return "";
  }
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
  const size_t before_owner = size_t(cursor.at - out.data());
  if (row.is_mmap) cursor.put(kAttrKindMmap);
  if (row.inherited_from_pid != 0) {
    cursor.put(kAttrInheritedFrom);
    cursor.put_decimal(row.inherited_from_pid);
  }
  cursor.put(kAttrEnd);
  const size_t length = size_t(cursor.at - out.data());
  if (owner_attr.empty()) return {out.data(), length};
  // The owner goes right after the size; the fixed members after it are moved along.
  spill.assign(out.data(), before_owner);
  spill.append(owner_attr);
  spill.append(out.data() + before_owner, length - before_owner);
  return spill;
}

}  // namespace memtap
