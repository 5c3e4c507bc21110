// Where the wire fuzzer splits its input into messages (wire_message_fuzzer.cpp), and
// make_fuzz_seeds joins them: eight bytes that a flat Cap'n Proto message of the seeds
// does not hold.
#pragma once

#include <string_view>

namespace memtap::fuzz {

inline constexpr std::string_view kMessageSeparator = "#memtap#";

}  // namespace memtap::fuzz
