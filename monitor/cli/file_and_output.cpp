// FILE [-o OUT] (see file_and_output.h).
#include "monitor/cli/file_and_output.h"

#include "monitor/cli/command_line.h"

namespace memtap {

void add_file_and_output(CLI::App* app, std::string* in, std::string* out,
                         const std::string& file_help, const std::string& out_help) {
  app->add_option("FILE", *in, file_help)->type_name("");
  app->add_option("-o", *out, out_help)->type_name("OUT");
}

}  // namespace memtap
