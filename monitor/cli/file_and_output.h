// The arguments of the commands that turn one file into another (export, import, recover):
// FILE [-o OUT], in any order.
#pragma once

#include <string>

namespace CLI {
class App;
}  // namespace CLI

namespace memtap {

// Declares FILE (into *in) and -o OUT (into *out) on `app`; both stay empty when not given.
void add_file_and_output(CLI::App* app, std::string* in, std::string* out,
                         const std::string& file_help, const std::string& out_help);

}  // namespace memtap
