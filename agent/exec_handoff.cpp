// MEMTAP_EXECED_FROM: written by the exec hooks, read by the next image's constructor.
#include "agent/exec_handoff.h"

#include <cstdlib>
#include <cstring>

namespace memtap {

namespace {

constexpr size_t kNameLen = sizeof kExecHandoffName - 1;

// Appends `v` in `base` (10 or 16) at `*at`, within `end`; false when it does not fit.
bool put_number(uint64_t v, unsigned base, char** at, char* end) {
  char digits[20];
  size_t n = 0;
  do {
    digits[n++] = "0123456789abcdef"[v % base];
    v /= base;
  } while (v != 0);
  if (size_t(end - *at) < n) return false;
  while (n > 0) *(*at)++ = digits[--n];
  return true;
}

bool put_char(char c, char** at, char* end) {
  if (*at == end) return false;
  *(*at)++ = c;
  return true;
}

// Reads a number in `base` at `*at`, up to `stop` (which it steps over); false when there is
// no digit, a character that is not one, or more than 64 bits.
bool take_number(const char** at, unsigned base, char stop, uint64_t* out) {
  const char* p = *at;
  uint64_t v = 0;
  size_t digits = 0;
  for (; *p != stop; ++p, ++digits) {
    unsigned d;
    if (*p >= '0' && *p <= '9') {
      d = unsigned(*p - '0');
    } else if (base == 16 && *p >= 'a' && *p <= 'f') {
      d = unsigned(*p - 'a' + 10);
    } else {
      return false;  // the end of the text too, when `stop` is not NUL
    }
    if (v > (UINT64_MAX - d) / base) return false;
    v = v * base + d;
  }
  if (digits == 0) return false;
  *at = stop ? p + 1 : p;
  *out = v;
  return true;
}

}  // namespace

bool format_exec_handoff(uint32_t pid, const MemtapExecHandoff& h, char* out, size_t len) {
  if (len == 0) return false;
  char* at = out;
  char* end = out + len - 1;  // room for the NUL
  if (size_t(end - at) < kNameLen + 1) return false;
  memcpy(at, kExecHandoffName, kNameLen);
  at += kNameLen;
  *at++ = '=';
  if (!put_number(pid, 10, &at, end) || !put_char(',', &at, end) ||
      !put_number(h.instance_id, 16, &at, end) || !put_char(',', &at, end) ||
      !put_number(h.events_sent, 10, &at, end) || !put_char(',', &at, end) ||
      !put_number(h.dropped_total, 10, &at, end) || !put_char(',', &at, end) ||
      !put_number(h.instance_secret, 16, &at, end)) {
    return false;
  }
  *at = 0;
  return true;
}

bool parse_exec_handoff(const char* value, uint32_t pid, MemtapExecHandoff* out) {
  if (!value) return false;
  uint64_t said_pid, instance, sent, dropped, secret;
  const char* at = value;
  if (!take_number(&at, 10, ',', &said_pid) || !take_number(&at, 16, ',', &instance) ||
      !take_number(&at, 10, ',', &sent) || !take_number(&at, 10, ',', &dropped) ||
      !take_number(&at, 16, 0, &secret)) {
    return false;
  }
  if (said_pid != pid) return false;
  *out = MemtapExecHandoff{instance, sent, dropped, secret, 1};
  return true;
}

MemtapExecHandoff take_exec_handoff(uint32_t pid) {
  MemtapExecHandoff h{};
  const char* value = getenv(kExecHandoffName);
  if (!value) return h;
  parse_exec_handoff(value, pid, &h);
  // glibc's unsetenv moves the environment's pointers; it frees nothing and allocates
  // nothing.
  unsetenv(kExecHandoffName);
  return h;
}

bool is_exec_handoff_entry(const char* entry) {
  return strncmp(entry, kExecHandoffName, kNameLen) == 0 && entry[kNameLen] == '=';
}

}  // namespace memtap
