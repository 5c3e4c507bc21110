// How a traced process ended: what its agent says in Bye (wire.capnp's ProcessEnd) and
// what memtap_session's `ended_by`, the report and `memtap run`'s summary show.
#pragma once

#include <cstdint>
#include <string>

namespace memtap {

// The same values as wire::ProcessEnd.
enum class ProcessEnd : uint8_t { kUnknown = 0, kExited = 1, kSignalled = 2, kExeced = 3 };

// In words, as memtap_meta's `ended_by` for the program `memtap run` started: "exit code 3",
// "signal SIGABRT", "exec"; empty for kUnknown.
std::string process_end_text(ProcessEnd end, int32_t code);

}  // namespace memtap
