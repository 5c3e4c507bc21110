/* The context calls of memtap.h for a native program that must also run without memtap:
 * steps, owners, ranges and marks, each a no-op unless libmemtap_agent.so is in the process
 * (memtap run preloads it). Header only; nothing to link but libdl (part of libc since
 * glibc 2.34).
 *
 *   #include "memtap_optional.h"
 *   const uint32_t weights = memtap_optional_intern("weights");   // once: 0 without memtap
 *   memtap_optional_owner_push(weights);  model = build();  memtap_optional_owner_pop();
 *   for (...) { memtap_optional_step(); train_step(); }
 *
 * Each call looks its function up in the process once (dlsym(RTLD_DEFAULT, ...)), where only
 * the preloaded agent defines it, and calls it from then on: the cost without memtap is a
 * load and a test. Linking the agent instead would load its hooks into every run. */
#ifndef MEMTAP_AGENT_MEMTAP_OPTIONAL_H
#define MEMTAP_AGENT_MEMTAP_OPTIONAL_H

#include <dlfcn.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#ifdef __cplusplus
extern "C" {
#endif

/* The agent's function `name`, or NULL without it; looked up once into *slot (a race between
 * threads only looks it up twice: every thread finds the same answer). */
static inline void* memtap_optional_find(void** slot, const char* name) {
  static char absent; /* *slot's value once the lookup found nothing */
  void* f = __atomic_load_n(slot, __ATOMIC_ACQUIRE);
  if (f == NULL) {
#ifdef RTLD_DEFAULT
    f = dlsym(RTLD_DEFAULT, name);
#else /* <dlfcn.h> without _GNU_SOURCE; this header leaves the program's macros alone */
    f = dlsym((void*)0, name); /* glibc's RTLD_DEFAULT */
#endif
    if (f == NULL) f = &absent;
    __atomic_store_n(slot, f, __ATOMIC_RELEASE);
  }
  return f == (void*)&absent ? NULL : f;
}

/* The id of `text` for the calls below (memtap_intern); 0 without memtap. Intern a label once
 * and keep its id: the agent sends each text once, but the lookup is a hash. */
static inline uint32_t memtap_optional_intern(const char* text) {
  static void* slot;
  uint32_t (*f)(const char*, size_t) =
      (uint32_t(*)(const char*, size_t))memtap_optional_find(&slot, "memtap_intern");
  return f ? f(text, strlen(text)) : 0;
}

/* A training step begins (SYSTEM STEP): leaks are judged step by step. */
static inline void memtap_optional_step(void) {
  static void* slot;
  void (*f)(void) = (void (*)(void))memtap_optional_find(&slot, "memtap_step");
  if (f) f();
}

/* This thread's allocations until the matching pop carry the owner `name_id`. */
static inline void memtap_optional_owner_push(uint32_t name_id) {
  static void* slot;
  void (*f)(uint32_t) = (void (*)(uint32_t))memtap_optional_find(&slot, "memtap_owner_push");
  if (f) f(name_id);
}

static inline void memtap_optional_owner_pop(void) {
  static void* slot;
  void (*f)(void) = (void (*)(void))memtap_optional_find(&slot, "memtap_owner_pop");
  if (f) f();
}

/* A range of the run (MSTX Range_start / Range_end), drawn as a bar under the curves. */
static inline void memtap_optional_range_start(uint32_t name_id) {
  static void* slot;
  void (*f)(uint32_t) = (void (*)(uint32_t))memtap_optional_find(&slot, "memtap_range_start");
  if (f) f(name_id);
}

static inline void memtap_optional_range_end(uint32_t name_id) {
  static void* slot;
  void (*f)(uint32_t) = (void (*)(uint32_t))memtap_optional_find(&slot, "memtap_range_end");
  if (f) f(name_id);
}

/* A mark (MSTX Mark) with the text `text_id`. */
static inline void memtap_optional_mark(uint32_t text_id) {
  static void* slot;
  void (*f)(uint32_t) = (void (*)(uint32_t))memtap_optional_find(&slot, "memtap_mark");
  if (f) f(text_id);
}

#ifdef __cplusplus
}
#endif

#endif
