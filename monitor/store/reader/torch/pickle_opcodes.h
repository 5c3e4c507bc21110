// The pickle opcodes by name, and why the reader refuses the ones it refuses (see
// pickle_reader.h): for its messages.
#pragma once

#include <cstdint>
#include <string>

namespace memtap::pickle {

// The opcode's name as pickletools spells it ("BINUNICODE"), or "opcode 0xNN" for a byte
// that is no opcode.
std::string opcode_text(uint8_t op);

// Why `op` is refused ("it would import a name"); nullptr for the plain-data opcodes.
const char* opcode_refusal(uint8_t op);

// "0x63".
std::string hex_byte(uint8_t op);

}  // namespace memtap::pickle
