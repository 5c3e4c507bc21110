/* A function that breaks its own frame record for one allocation
 * (tests/e2e/c_stack_walk_test.cpp), run with C stacks and built with frame pointers:
 * allocate_with_bogus_record first allocates kNormalRounds times from one call site (the
 * frame-pointer walk learns its return addresses: "steps"), then overwrites its saved
 * caller's rbp (*__builtin_frame_address(0)) with a bogus address, allocates from the same
 * call site, and restores the slot before it returns. Four bogus addresses, one a call, each
 * failing one of the walk's checks: 0x10 (below the frame, off the stack); an unaligned
 * address on the stack above the frame (in main's frame); an aligned one on the stack below
 * the frame (in its own); an aligned one above the frame, off the stack (past user space).
 * The two on the stack hold a frame record that a walk trusting them would follow: a second
 * "main" (this call's own return address), then rbp 0, the end. Prints "c_stack_bogus_fp ok". */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { kNormalBytes = 2 * 1024 * 1024 + 300, kBogusBytes = 2 * 1024 * 1024 + 400 };
enum { kNormalRounds = 3, kKinds = 4 };

void* volatile g_sink;

static void write_record(unsigned char* at, void* return_address) {
  uintptr_t outermost = 0;
  memcpy(at, &outermost, sizeof outermost);
  memcpy(at + 8, &return_address, sizeof return_address);
}

__attribute__((noinline)) static void allocate_with_bogus_record(int kind,
                                                                 unsigned char* caller_area) {
  _Alignas(16) unsigned char own_area[16];
  void** slot = (void**)__builtin_frame_address(0);
  uintptr_t bogus = 0x10;
  if (kind == 1) {
    bogus = (uintptr_t)(caller_area + 1);
    write_record(caller_area + 1, __builtin_return_address(0));
  } else if (kind == 2) {
    bogus = (uintptr_t)own_area;
    write_record(own_area, __builtin_return_address(0));
  } else if (kind == 3) {
    bogus = (uintptr_t)1 << 47;
  }
  void* saved = *slot;
  for (int round = 0; round <= kNormalRounds; ++round) {
    int break_it = round == kNormalRounds;
    if (break_it) *(volatile uintptr_t*)slot = bogus;
    __asm__ volatile("" ::: "memory");
    void* p = malloc(break_it ? kBogusBytes + kind : kNormalBytes); /* one call site */
    __asm__ volatile("" ::: "memory");
    *(void* volatile*)slot = saved;
    g_sink = p;
    free(p);
  }
}

int main(void) {
  _Alignas(16) unsigned char area[32];
  for (int kind = 0; kind < kKinds; ++kind) allocate_with_bogus_record(kind, area);
  printf("c_stack_bogus_fp ok\n");
  return 0;
}
