// See csv_field.h.
#include "monitor/store/export/csv_field.h"

namespace memtap {

void append_csv_field(std::string* line, std::string_view text) {
  if (text.find_first_of(",\"\r\n") == std::string_view::npos) {
    line->append(text);
    return;
  }
  line->push_back('"');
  for (const char c : text) {
    if (c == '"') line->push_back('"');
    line->push_back(c);
  }
  line->push_back('"');
}

}  // namespace memtap
