// `memtap export FILE [-o OUT.db]`: a recording in msMemScope's own table, for MindStudio
// Insight and msMemScope's analyzer (a --compact recording's memscope_dump is a view, which
// they refuse).
#include <cstdio>
#include <string>

#include "monitor/cli/commands.h"
#include "monitor/cli/file_and_output.h"
#include "monitor/store/memscope_export.h"

namespace memtap {
namespace {

// MindStudio Insight's importer: ^(memscope|leaks)_dump_\d+\.db$ on the file name.
bool insight_imports(const std::string& name) {
  for (const std::string prefix : {"memscope_dump_", "leaks_dump_"}) {
    if (name.rfind(prefix, 0) != 0 || name.size() <= prefix.size() + 3) continue;
    const std::string digits = name.substr(prefix.size(), name.size() - prefix.size() - 3);
    if (name.compare(name.size() - 3, 3, ".db") != 0) return false;
    return digits.find_first_not_of("0123456789") == std::string::npos;
  }
  return false;
}

}  // namespace

int export_command(const std::vector<std::string>& args) {
  std::string in, out, bad;
  if (!parse_file_and_output(args, &in, &out, &bad)) {
    fprintf(stderr, "memtap export: unexpected argument '%s' (memtap export FILE [-o OUT.db])\n",
            bad.c_str());
    return 2;
  }
  if (in.empty()) {
    fprintf(stderr, "memtap export: no recording given (memtap export FILE [-o OUT.db])\n");
    return 2;
  }
  if (out.empty()) out = default_db_path();
  std::string error;
  if (!export_memscope_table(in, out, &error)) {
    fprintf(stderr, "memtap export: %s\n", error.c_str());
    return 1;
  }
  fprintf(stderr, "memtap export: wrote %s (msMemScope's memscope_dump table)\n", out.c_str());
  // MindStudio Insight's importer matches the file name, not the content.
  const std::string name = out.substr(out.find_last_of('/') + 1);
  if (!insight_imports(name)) {
    fprintf(stderr,
            "memtap export: note: MindStudio Insight imports only files named "
            "memscope_dump_<digits>.db\n");
  }
  return 0;
}

}  // namespace memtap
