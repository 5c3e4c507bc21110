// Opcode names and refusals (see pickle_opcodes.h).
#include "monitor/store/reader/torch/pickle_opcodes.h"

#include <cstdio>

namespace memtap::pickle {
namespace {

// Opcode names as pickletools spells them, for messages.
struct OpcodeName {
  uint8_t byte;
  const char* name;
};
constexpr OpcodeName kOpcodeNames[] = {
    {'(', "MARK"},
    {'.', "STOP"},
    {'0', "POP"},
    {'1', "POP_MARK"},
    {'2', "DUP"},
    {'F', "FLOAT"},
    {'I', "INT"},
    {'J', "BININT"},
    {'K', "BININT1"},
    {'L', "LONG"},
    {'M', "BININT2"},
    {'N', "NONE"},
    {'P', "PERSID"},
    {'Q', "BINPERSID"},
    {'R', "REDUCE"},
    {'S', "STRING"},
    {'T', "BINSTRING"},
    {'U', "SHORT_BINSTRING"},
    {'V', "UNICODE"},
    {'X', "BINUNICODE"},
    {'a', "APPEND"},
    {'b', "BUILD"},
    {'c', "GLOBAL"},
    {'d', "DICT"},
    {'}', "EMPTY_DICT"},
    {'e', "APPENDS"},
    {'g', "GET"},
    {'h', "BINGET"},
    {'i', "INST"},
    {'j', "LONG_BINGET"},
    {'l', "LIST"},
    {']', "EMPTY_LIST"},
    {'o', "OBJ"},
    {'p', "PUT"},
    {'q', "BINPUT"},
    {'r', "LONG_BINPUT"},
    {'s', "SETITEM"},
    {'t', "TUPLE"},
    {')', "EMPTY_TUPLE"},
    {'u', "SETITEMS"},
    {'G', "BINFLOAT"},
    {'B', "BINBYTES"},
    {'C', "SHORT_BINBYTES"},
    {0x80, "PROTO"},
    {0x81, "NEWOBJ"},
    {0x82, "EXT1"},
    {0x83, "EXT2"},
    {0x84, "EXT4"},
    {0x85, "TUPLE1"},
    {0x86, "TUPLE2"},
    {0x87, "TUPLE3"},
    {0x88, "NEWTRUE"},
    {0x89, "NEWFALSE"},
    {0x8a, "LONG1"},
    {0x8b, "LONG4"},
    {0x8c, "SHORT_BINUNICODE"},
    {0x8d, "BINUNICODE8"},
    {0x8e, "BINBYTES8"},
    {0x8f, "EMPTY_SET"},
    {0x90, "ADDITEMS"},
    {0x91, "FROZENSET"},
    {0x92, "NEWOBJ_EX"},
    {0x93, "STACK_GLOBAL"},
    {0x94, "MEMOIZE"},
    {0x95, "FRAME"},
    {0x96, "BYTEARRAY8"},
    {0x97, "NEXT_BUFFER"},
    {0x98, "READONLY_BUFFER"},
};

// nullptr: no such opcode.
const char* opcode_name(uint8_t op) {
  for (const OpcodeName& o : kOpcodeNames) {
    if (o.byte == op) return o.name;
  }
  return nullptr;
}

}  // namespace

std::string opcode_text(uint8_t op) {
  const char* n = opcode_name(op);
  return n != nullptr ? std::string(n) : "opcode " + hex_byte(op);
}

const char* opcode_refusal(uint8_t op) {
  switch (op) {
    case 'c':
    case 0x93:
      return "it would import a name";
    case 'R':
      return "it would call a function";
    case 'b':
    case 'i':
    case 'o':
    case 0x81:
    case 0x92:
      return "it would build an object";
    case 0x82:
    case 0x83:
    case 0x84:
      return "it would import a registered name (copyreg extension)";
    case 'P':
    case 'Q':
      return "it would load a persistent object";
    case 0x97:
    case 0x98:
      return "it would take an out-of-band buffer";
    default:
      return nullptr;
  }
}

std::string hex_byte(uint8_t op) {
  char text[8];
  std::snprintf(text, sizeof text, "0x%02x", op);
  return text;
}

}  // namespace memtap::pickle
