// A pickle reader for plain data only, of our own: a PyTorch memory snapshot is a pickle,
// and Python's unpickler runs whatever a file asks it to. This one knows the opcodes of
// protocols 0 to 5 that make None, bools, numbers, strings, bytes, lists, tuples, dicts and
// sets, and refuses every opcode that would import a name, build an object or call a
// function (GLOBAL, STACK_GLOBAL, REDUCE, BUILD, INST, OBJ, NEWOBJ, NEWOBJ_EX, EXT1/2/4,
// PERSID, BINPERSID) or take an out-of-band buffer (NEXT_BUFFER, READONLY_BUFFER), naming
// it and where it is. Nothing in a file is ever executed.
//
// Untrusted bytes: every length is checked against what is left of the input, a memo
// index must have been stored, a MARK must be there to close, a container opcode must find
// its container; any of these is one line of error, never a crash. Nothing is recursive,
// and the document is at most a small multiple of the input's size (one value per opcode).
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "monitor/store/reader/torch/pickle_document.h"

namespace memtap::pickle {

// The protocol a pickle's first bytes announce (PROTO, 0x80 then the version), or -1 when
// they are no PROTO opcode (a protocol 0 or 1 pickle, or no pickle).
int announced_protocol(const char* head, size_t size);

// Reads one pickle from `bytes` (up to its STOP; what follows is not read) into *out,
// which then owns the bytes. False with *error, one line starting "byte N: " (the offset of
// the opcode at fault, from the start of the input) and saying what is wrong.
bool read_pickle(std::string bytes, Document* out, std::string* error);

}  // namespace memtap::pickle
