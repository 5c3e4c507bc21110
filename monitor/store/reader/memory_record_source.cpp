// The profiler's memory_record.csv (see memory_record_source.h).
#include "monitor/store/reader/memory_record_source.h"

#include "monitor/store/reader/csv_rows.h"
#include "monitor/store/reader/event_vocabulary.h"
#include "monitor/store/reader/profiler_csv_values.h"
#include "monitor/store/reader/string_interner.h"
#include "monitor/store/reader/text_values.h"

namespace memtap::reader {

bool read_memory_record_csv(CsvReader* csv, const CsvHeader& header, const std::string& path,
                            Recording* out, RowProblems* problems, std::string* error) {
  const int component = header.find("Component");
  const int timestamp = header.find("Timestamp(us)");
  const SizedColumn allocated = sized_column(header, "Total Allocated");
  const SizedColumn reserved = sized_column(header, "Total Reserved");
  const char* missing = component < 0                               ? "Component"
                        : timestamp < 0                             ? "Timestamp(us)"
                        : allocated.index < 0 && reserved.index < 0 ? "Total Allocated(MB)"
                                                                    : nullptr;
  if (missing != nullptr) {
    *error = missing_column_error(path, "memory_record CSV", missing, header);
    return false;
  }
  const int device = find_any(header, {"Device Type", "Device", "Device_id"});
  const int stream = header.find("Stream Ptr");

  StringInterner interner(&out->strings);
  auto decode = [&](const std::vector<std::string_view>& fields, std::string* problem) {
    ProfilerRow row(header, fields, problem);
    MemEvent event;
    event.kind = MemEventKind::kSnapshot;
    if (!row.time_us(timestamp, &event.ts_ns) || !row.bytes(allocated, &event.snap_allocated) ||
        !row.bytes(reserved, &event.snap_reserved) || !row.device(device, &event.device) ||
        !row.stream(stream, &event.stream)) {
      return false;
    }
    if (event.ts_ns == kUnknown) {
      *problem = "Timestamp(us) is empty";
      return false;
    }
    const std::string_view name = trim(fields[component]);
    event.name = interner.intern(name);
    // APP: what the whole process holds on the device, the App Reserved curve (MindStudio
    // Insight draws it above the pool's); its Total Allocated is empty. A sum of components
    // (PTA+GE) is another row: the engine adds up the components' newest figures
    // (monitor/engine/pool_samples.h), and these rows come only when PTA's change. A
    // component that names a layer (PTA; HAL and HOST in memtap's exports) is that layer's;
    // any other (GE, the graph engine's memory) is a pool of the framework's, as PTA is.
    event.layer = layer_from_text(name);
    if (name == "APP") {
      event.snap_app_reserved = event.snap_reserved;
    } else if (event.layer == Layer::kOther && name.find('+') == std::string_view::npos) {
      event.layer = Layer::kPta;
    }
    out->events.push_back(event);
    return true;
  };
  return for_each_csv_row(csv, header, path, problems, decode, error);
}

}  // namespace memtap::reader
