// Call stack settings, and the stack records written before a large allocation's record.
#include "agent/stacks.h"

#include <stdlib.h>

#include <cstring>

#include "agent/agent_state.h"
#include "agent/c_stacks.h"
#include "agent/event_buffer_writer.h"
#include "agent/event_clock.h"
#include "agent/python_stacks.h"

namespace memtap {

uint64_t g_stack_min_size = UINT64_MAX;
StackSettings g_stack_settings;

namespace {

constexpr uint64_t kDefaultMinSize = 1 << 20;

uint64_t min_size_from_env() {
  const char* v = getenv("MEMTAP_STACK_MIN_SIZE");
  if (!v || !*v) return kDefaultMinSize;
  char* end;
  unsigned long long n = strtoull(v, &end, 10);
  return *end ? kDefaultMinSize : n;
}

// Its own constructor (not agent_main's): the settings concern only this file's callers.
// Order against the agent's constructor does not matter; hooks that run before this one
// see stacks off.
__attribute__((constructor)) void stacks_init() {
  g_stack_settings = stack_settings_from_env();
  if (!g_stack_settings.python && !g_stack_settings.c) return;
  if (g_stack_settings.c) {
    ++tl_agent_busy;  // libgcc_s's loading allocates: not the application's memory
    c_stacks_warm_up();
    --tl_agent_busy;
  }
  g_stack_min_size = min_size_from_env();
}

}  // namespace

StackSettings stack_settings_from_env() {
  StackSettings settings;
  const char* list = getenv("MEMTAP_STACKS");
  if (!list) return settings;
  for (const char* p = list; *p;) {
    const char* comma = strchr(p, ',');
    size_t n = comma ? size_t(comma - p) : strlen(p);
    if (n == 6 && strncmp(p, "python", 6) == 0) settings.python = true;
    if (n == 1 && *p == 'c') settings.c = true;
    p += n + (comma ? 1 : 0);
  }
  return settings;
}

__attribute__((noinline, cold)) void record_call_stacks() {
  ++tl_agent_busy;
  uint32_t python = g_stack_settings.python ? python_stack_capture() : 0;
  uint32_t c = g_stack_settings.c ? c_stack_capture() : 0;
  --tl_agent_busy;
  if (python) {
    record_event_with_string(&g_agent.registry, g_agent.lossless, EventKind::kPythonStack, 0, 0,
                             event_clock_now(), python);
  }
  if (c) {
    record_event_with_string(&g_agent.registry, g_agent.lossless, EventKind::kCStack, 0, 0,
                             event_clock_now(), c);
  }
}

}  // namespace memtap
