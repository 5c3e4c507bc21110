// The arguments of the commands that turn one file into another (export, recover):
// FILE [-o OUT], in any order.
#pragma once

#include <string>
#include <vector>

namespace memtap {

// Fills *in and *out (left empty when not given). False with the offending argument in
// *bad when one is neither, or a second file is given.
bool parse_file_and_output(const std::vector<std::string>& args, std::string* in, std::string* out,
                           std::string* bad);

}  // namespace memtap
