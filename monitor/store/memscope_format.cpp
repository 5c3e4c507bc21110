// The text of a DumpRow's columns in msMemScope's format (see memscope_format.h).
#include "monitor/store/memscope_format.h"

#include <algorithm>
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
constexpr std::string_view kAttrStream = "\",\"stream\":\"";
constexpr std::string_view kAttrAppReserved = "{\"app_reserved\":\"";
constexpr std::string_view kAttrTotal = "\",\"total\":\"";
constexpr std::string_view kAttrStreamOnly = "{\"stream\":\"";
constexpr std::string_view kAttrFunc = "{\"func\":\"";
constexpr std::string_view kAttrReqSize = "\",\"req_size\":\"";
constexpr std::string_view kAttrFree = "{\"free\":\"";
constexpr std::string_view kAttrUsed = "\",\"used\":\"";
constexpr std::string_view kAttrPending = "\",\"pending\":\"1";
constexpr std::string_view kAttrSizeOnly = "{\"size\":\"";
constexpr std::string_view kAttrAllocated = "{\"allocated\":\"";
constexpr std::string_view kAttrReserved = "\",\"reserved\":\"";
constexpr std::string_view kAttrMaxAllocated = "\",\"max_allocated\":\"";
constexpr std::string_view kAttrMaxReserved = "\",\"max_reserved\":\"";
constexpr size_t kU64DigitsMax = 20;
constexpr size_t kI64DigitsMax = 19;  // pool figures: never negative when written
constexpr size_t kU32DigitsMax = 10;

// If these fail, a row with every optional key and the widest numbers would not fit: a heap
// or device block, a pool (PTA) block, and a device pool's SNAPSHOT with its peaks.
constexpr size_t kBlockAttrStart = kAttrAllocationId.size() + kU64DigitsMax + kAttrAddr.size() +
                                   kPtrTextMax + kAttrSize.size() + kU64DigitsMax;
constexpr size_t kStreamAttrEnd = kAttrStream.size() + kU64DigitsMax + kAttrEnd.size();
static_assert(kAttrTextMax >= kBlockAttrStart + kAttrKindMmap.size() + kAttrInheritedFrom.size() +
                                  kU32DigitsMax + kStreamAttrEnd);
static_assert(kAttrTextMax >= kBlockAttrStart + kAttrTotal.size() + kI64DigitsMax +
                                  kAttrUsed.size() + kI64DigitsMax + kAttrPending.size() +
                                  kStreamAttrEnd);
static_assert(kAttrTextMax >= kAttrAllocated.size() + kI64DigitsMax + kAttrReserved.size() +
                                  kI64DigitsMax + kAttrMaxAllocated.size() + kU64DigitsMax +
                                  kAttrMaxReserved.size() + kU64DigitsMax + kAttrEnd.size());

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
    case DumpEvent::kKernelLaunch:
      return "KERNEL_LAUNCH";
    case DumpEvent::kOomDetail:
      return "OOM_DETAIL";
    case DumpEvent::kFreeCompleted:
      return "FREE_COMPLETED";
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
    case DumpEventType::kHal:
      return "HAL";
    case DumpEventType::kHostPinned:
      return "HOST_PINNED";
    case DumpEventType::kKernelLaunch:
      return "KERNEL_LAUNCH";
    case DumpEventType::kOomTrigger:
      return "OOM_TRIGGER";
    case DumpEventType::kOomTopAlloc:
      return "OOM_TOP_ALLOC";
    case DumpEventType::kPta:
      return "PTA";
  }
  return "N/A";
}

std::string_view dump_device_id_text(DumpEvent event) {
  const bool host_memory =
      event == DumpEvent::kMalloc || event == DumpEvent::kFree || event == DumpEvent::kSnapshot;
  return host_memory ? "cpu" : "N/A";
}

std::string_view dump_device_id_text(const DumpRow& row, DeviceText& out) {
  if (row.device < 0) return dump_device_id_text(row.event);
  const auto end = std::to_chars(out.data(), out.data() + out.size(), row.device).ptr;
  return {out.data(), size_t(end - out.data())};
}

bool dump_block_has_stream(const DumpRow& row) {
  return row.has_stream && (row.event == DumpEvent::kMalloc || row.event == DumpEvent::kFree) &&
         (row.event_type == DumpEventType::kHal || row.event_type == DumpEventType::kHostPinned ||
          row.event_type == DumpEventType::kPta);
}

bool dump_row_is_pool_block(const DumpRow& row) {
  return (row.event == DumpEvent::kMalloc || row.event == DumpEvent::kFree) &&
         row.event_type == DumpEventType::kPta;
}

bool dump_row_has_block(const DumpRow& row) {
  return row.event == DumpEvent::kMalloc || row.event == DumpEvent::kFree ||
         (row.event == DumpEvent::kOomDetail && row.event_type == DumpEventType::kOomTopAlloc);
}

std::string_view format_step_text(uint64_t step, StepText& out) {
  const auto end = std::to_chars(out.data(), out.data() + out.size(), step).ptr;
  return {out.data(), size_t(end - out.data())};
}

std::string_view dump_name_text(const DumpRow& row, std::string_view name, StepText& step) {
  if (row.event == DumpEvent::kSystem && row.event_type == DumpEventType::kStep) {
    return format_step_text(row.step, step);
  }
  return name.empty() ? kDumpNameText : name;
}

std::string json_string_content(std::string_view in) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string text;
  text.reserve(in.size());
  for (const char c : in) {
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

std::string format_owner_attr(std::string_view owner) {
  return "\",\"owner\":\"" + json_string_content(owner);
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
  if (!dump_row_has_block(row) && row.event != DumpEvent::kFreeCompleted) return "N/A";
  return format_ptr_hex(row.ptr, out);
}

std::string_view dump_attr_text(const DumpRow& row, std::string_view owner_attr, AttrText& out,
                                std::string& spill, std::string_view func_json) {
  TextCursor cursor{out.data()};
  const auto done = [&]() -> std::string_view {
    return {out.data(), size_t(cursor.at - out.data())};
  };
  if (row.event == DumpEvent::kKernelLaunch) {
    cursor.put(kAttrStreamOnly);
    cursor.put_decimal(row.stream);
    cursor.put(kAttrEnd);
    return done();
  }
  if (row.event == DumpEvent::kOomDetail && row.event_type == DumpEventType::kOomTrigger) {
    // The API's name is text of any length: built in `spill`.
    spill.assign(kAttrFunc);
    spill.append(func_json);
    cursor.put(kAttrReqSize);
    cursor.put_decimal(row.size_bytes);
    cursor.put(kAttrSize);  // memtap's name for it, as on every row with a size
    cursor.put_decimal(row.size_bytes);
    cursor.put(kAttrStream);
    cursor.put_decimal(row.stream);
    cursor.put(kAttrEnd);
    spill.append(out.data(), size_t(cursor.at - out.data()));
    return spill;
  }
  if (row.event == DumpEvent::kSystem && row.event_type == DumpEventType::kStartTrace) {
    if (row.device < 0) return "";  // the process's own: nothing to add
    cursor.put(kAttrFree);
    cursor.put_decimal(row.size_bytes);
    cursor.put(kAttrTotal);
    cursor.put_decimal(row.total_bytes);
    cursor.put(kAttrEnd);
    return done();
  }
  if (row.event == DumpEvent::kFreeCompleted) {
    cursor.put(kAttrSizeOnly);
    cursor.put_decimal(row.size_bytes);
    cursor.put(kAttrEnd);
    return done();
  }
  if (row.event == DumpEvent::kSnapshot && row.event_type == DumpEventType::kPta) {
    // A device's pool, with msMemScope's SNAPSHOT keys.
    cursor.put(kAttrAllocated);
    cursor.put_decimal(uint64_t(std::max<int64_t>(row.pool_used, 0)));
    cursor.put(kAttrReserved);
    cursor.put_decimal(uint64_t(std::max<int64_t>(row.pool_total, 0)));
    if (row.has_pool_peaks) {
      cursor.put(kAttrMaxAllocated);
      cursor.put_decimal(row.size_bytes);
      cursor.put(kAttrMaxReserved);
      cursor.put_decimal(row.total_bytes);
    }
    cursor.put(kAttrEnd);
    return done();
  }
  if (!dump_row_has_block(row) && row.event != DumpEvent::kSnapshot) return "";
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
  if (dump_row_is_pool_block(row)) {
    // msMemScope's PTA rows: the pool after the event, total first.
    if (row.pool_total >= 0) {
      cursor.put(kAttrTotal);
      cursor.put_decimal(uint64_t(row.pool_total));
    }
    if (row.pool_used >= 0) {
      cursor.put(kAttrUsed);
      cursor.put_decimal(uint64_t(row.pool_used));
    }
    if (row.event == DumpEvent::kFree && row.free_pending) cursor.put(kAttrPending);
  }
  if (dump_block_has_stream(row)) {
    cursor.put(kAttrStream);
    cursor.put_decimal(row.stream);
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
