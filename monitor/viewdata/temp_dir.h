// Where the window's own files go (the block index, its spool, a CSV's database): $TMPDIR,
// else /tmp.
#pragma once

#include <string>

namespace memtap::viewdata {

std::string temp_dir();

}  // namespace memtap::viewdata
