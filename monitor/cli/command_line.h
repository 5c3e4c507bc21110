// How every `memtap` subcommand reads its command line: its options are declared on a CLI11
// App (each command's file declares its own), and parsed here, so that each command explains
// itself the same way (`memtap CMD --help`, -h: its usage on stdout, exit 0) and each mistake
// reads the same: one line "memtap CMD: what is wrong", then "see memtap CMD --help", on
// stderr, exit 2.
#pragma once

#include <CLI/CLI.hpp>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

namespace memtap {

// Names `app` `memtap <command>` and gives its help the synopsis `usage` (the lines after
// "usage: ") and `about` (what the command does, wrapped to the terminal's 80 columns). An
// option given twice takes its last value unless it says otherwise.
void describe_command(CLI::App* app, const std::string& command, const std::string& usage,
                      const std::string& about);

// Parses `args` (the arguments after the command's name) into what `app` binds. Returns -1 when
// the command goes on; 0 when --help printed the usage; 2 when the arguments were wrong (said as
// above). An argument that `app` does not claim is a mistake, unless `rest` is given: then the
// arguments from the first one that is not an option (or after "--") go there, for `memtap run`'s
// program, which owns everything after its name.
int parse_command_line(CLI::App* app, const std::vector<std::string>& args,
                       std::vector<std::string>* rest = nullptr);

// The two lines of a mistake on stderr ("memtap <command>: <message>", "see memtap <command>
// --help"); returns 2, the exit code of a usage error.
int usage_error(const std::string& command, const std::string& message);

// A count of entries: a whole number above 0 ("0" would empty every list, and the report's
// verdicts read from them: a leak read as "nothing live at the end").
bool parse_count(const std::string& text, size_t* out);

// A --device value: "cpu" or "host" for the host's memory, N for device N, as a recording's
// Device Id column names them (and "npu:0", "cuda:0" as the profilers' files do). "N/A", no
// device, is not one a view or a check can be about.
bool parse_device_option(const std::string& text, int32_t* device);
inline constexpr const char* kDeviceOptionExpected = "expected cpu or a device number (0, 1, ...)";

// An option `name` with one value, which `take` checks and keeps: false with *error (the whole
// message, naming the option and the value) refuses it as a usage error. `value_name` is what the
// help shows for the value (SIZE, MS, DIR).
using TakeValueFn = std::function<bool(const std::string& value, std::string* error)>;
CLI::Option* add_checked_option(CLI::App* app, const std::string& name,
                                const std::string& value_name, TakeValueFn take,
                                const std::string& help);

}  // namespace memtap
