// The profiler's operator_memory.csv (see operator_memory_source.h).
#include "monitor/store/reader/operator_memory_source.h"

#include <algorithm>
#include <cstdlib>

#include "monitor/store/reader/csv_rows.h"
#include "monitor/store/reader/profiler_csv_values.h"
#include "monitor/store/reader/string_interner.h"
#include "monitor/store/reader/text_values.h"

namespace memtap::reader {
namespace {

constexpr uint64_t kSyntheticAlignment = 512;

}  // namespace

bool read_operator_memory_csv(CsvReader* csv, const CsvHeader& header, const std::string& path,
                              Recording* out, RowProblems* problems, std::string* error) {
  const int name = header.find("Name");
  const SizedColumn size = sized_column(header, "Size");
  const int alloc_time = header.find("Allocation Time(us)");
  const char* missing = name < 0         ? "Name"
                        : size.index < 0 ? "Size(KB)"
                        : alloc_time < 0 ? "Allocation Time(us)"
                                         : nullptr;
  if (missing != nullptr) {
    *error = missing_column_error(path, "operator_memory CSV", missing, header);
    return false;
  }
  const int release_time = header.find("Release Time(us)");
  const int duration = header.find("Duration(us)");
  const int device = find_any(header, {"Device Type", "Device", "Device_id"});
  const int stream = header.find("Stream Ptr");
  const SizedColumn alloc_allocated = sized_column(header, "Allocation Total Allocated");
  const SizedColumn alloc_reserved = sized_column(header, "Allocation Total Reserved");
  const SizedColumn release_allocated = sized_column(header, "Release Total Allocated");
  const SizedColumn release_reserved = sized_column(header, "Release Total Reserved");

  StringInterner interner(&out->strings);
  uint64_t next_offset = 0;
  uint64_t block_number = 0;
  auto decode = [&](const std::vector<std::string_view>& fields, std::string* problem) {
    ProfilerRow row(header, fields, problem);
    if (is_absent(fields[size.index])) {
      *problem = header.names()[size.index] + " is empty";
      return false;
    }
    MemEvent block;
    int64_t size_bytes = 0;
    int64_t alloc_ns = kUnknown;
    int64_t release_ns = kUnknown;
    int64_t duration_ns = kUnknown;
    int64_t alloc_used = kUnknown;
    int64_t alloc_total = kUnknown;
    int64_t release_used = kUnknown;
    int64_t release_total = kUnknown;
    if (!row.bytes(size, &size_bytes) || !row.time_us(alloc_time, &alloc_ns) ||
        !row.time_us(release_time, &release_ns) || !row.time_us(duration, &duration_ns) ||
        !row.device(device, &block.device) || !row.stream(stream, &block.stream) ||
        !row.bytes(alloc_allocated, &alloc_used) || !row.bytes(alloc_reserved, &alloc_total) ||
        !row.bytes(release_allocated, &release_used) ||
        !row.bytes(release_reserved, &release_total)) {
      return false;
    }
    if (release_ns == kUnknown && alloc_ns != kUnknown && duration_ns != kUnknown &&
        __builtin_add_overflow(alloc_ns, duration_ns, &release_ns)) {
      *problem = header.names()[alloc_time] + " plus " + header.names()[duration] +
                 " is beyond what nanoseconds since 1970 can hold";
      return false;
    }
    // A negative size is the release of a block allocated before profiling began; then
    // the one time the row gives is that release.
    const bool allocated_here = size_bytes >= 0 && alloc_ns != kUnknown;
    if (!allocated_here && release_ns == kUnknown) release_ns = alloc_ns;
    if (!allocated_here && release_ns == kUnknown) {
      *problem = "neither an allocation nor a release time";
      return false;
    }

    block.layer = Layer::kPta;
    block.name = interner.intern(fields[name]);
    block.allocation_id = ++block_number;
    block.size_bytes = uint64_t(std::llabs(size_bytes));
    block.addr = kSyntheticBase + next_offset;
    next_offset += (std::max<uint64_t>(block.size_bytes, 1) + kSyntheticAlignment - 1) /
                   kSyntheticAlignment * kSyntheticAlignment;
    const auto emit = [&](MemEventKind kind, int64_t ts_ns, int64_t used, int64_t total) {
      MemEvent& event = out->events.emplace_back(block);
      event.kind = kind;
      event.ts_ns = ts_ns;
      event.pool_used = used;
      event.pool_total = total;
    };
    if (allocated_here) emit(MemEventKind::kMalloc, alloc_ns, alloc_used, alloc_total);
    // No release time: never freed while profiled.
    if (release_ns != kUnknown) emit(MemEventKind::kFree, release_ns, release_used, release_total);
    return true;
  };
  return for_each_csv_row(csv, header, path, problems, decode, error);
}

}  // namespace memtap::reader
