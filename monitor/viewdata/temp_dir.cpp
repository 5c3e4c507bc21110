// See temp_dir.h.
#include "monitor/viewdata/temp_dir.h"

#include <cstdlib>

namespace memtap::viewdata {

std::string temp_dir() {
  const char* dir = std::getenv("TMPDIR");
  return dir != nullptr && *dir != '\0' ? dir : "/tmp";
}

}  // namespace memtap::viewdata
