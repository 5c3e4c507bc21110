// See dump_csv_writer.h.
#include "monitor/store/export/dump_csv_writer.h"

#include <vector>

#include "monitor/store/export/csv_field.h"
#include "monitor/store/memscope_format.h"
#include "monitor/store/reader/attr_parser.h"

namespace memtap {
namespace {

constexpr std::string_view kHeader =
    "ID,Event,Event Type,Name,Timestamp(ns),Process Id,Thread Id,Device Id,Ptr,Attr,"
    "Call Stack(Python),Call Stack(C)\n";

}  // namespace

std::string msmemscope_csv_attr(std::string_view json_attr) {
  if (json_attr.empty()) return {};
  std::vector<reader::AttrPair> pairs;
  std::string scratch, error;
  // memtap's own Attr text always splits; should it not, it goes out as it is.
  if (!reader::split_attr(json_attr, &pairs, &scratch, &error)) return std::string(json_attr);
  std::string out = "{";
  for (const reader::AttrPair& pair : pairs) {
    if (out.size() > 1) out += ',';
    out.append(pair.key);
    out += ':';
    // A bare value runs to the next `,` or `}` and is read trimmed.
    const std::string_view v = pair.value;
    const bool bare =
        v.empty() || (v.find_first_of(",}\":{") == std::string_view::npos && v.front() != ' ' &&
                      v.front() != '\t' && v.back() != ' ' && v.back() != '\t');
    if (bare) {
      out.append(pair.value);
    } else {
      out += '"';
      out += json_string_content(pair.value);
      out += '"';
    }
  }
  return out + "}";
}

std::unique_ptr<DumpCsvWriter> DumpCsvWriter::create(const std::string& path, std::string* error) {
  std::unique_ptr<TextFile> file = TextFile::create(path, error);
  if (file == nullptr) return nullptr;
  file->write(kHeader);
  return std::unique_ptr<DumpCsvWriter>(new DumpCsvWriter(std::move(file)));
}

void DumpCsvWriter::add(const DumpRow& row, const StringTable& strings) {
  const auto text = [&](uint32_t id) -> std::string_view {
    return id < strings.size() ? std::string_view(strings.get(id)) : std::string_view();
  };
  StepText step;
  PtrText ptr;
  DeviceText device;
  AttrText attr;
  std::string owner_attr, func_json;
  if (row.owner != 0 && !text(row.owner).empty()) owner_attr = format_owner_attr(text(row.owner));
  if (row.event == DumpEvent::kOomDetail && row.event_type == DumpEventType::kOomTrigger) {
    func_json = json_string_content(text(row.name));
  }
  csv_attr_ = msmemscope_csv_attr(dump_attr_text(row, owner_attr, attr, attr_spill_, func_json));

  line_.clear();
  line_ += std::to_string(next_id_++);
  line_ += ',';
  line_ += dump_event_text(row.event);
  line_ += ',';
  line_ += dump_event_type_text(row.event_type);
  line_ += ',';
  append_csv_field(&line_, dump_name_text(row, text(row.name), step));
  line_ += ',';
  line_ += std::to_string(row.timestamp_ns);
  line_ += ',';
  line_ += std::to_string(row.process_id);
  line_ += ',';
  line_ += std::to_string(row.thread_id);
  line_ += ',';
  line_ += dump_device_id_text(row, device);
  line_ += ',';
  line_ += dump_ptr_text(row, ptr);
  line_ += ',';
  append_csv_field(&line_, csv_attr_);
  line_ += ',';
  append_csv_field(&line_, text(row.stack_python));
  line_ += ',';
  append_csv_field(&line_, text(row.stack_c));
  line_ += '\n';
  file_->write(line_);
}

}  // namespace memtap
