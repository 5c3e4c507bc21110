// A known call chain, PREFIX_a -> PREFIX_b -> PREFIX_c -> leaf(), compiled twice by CMake.
#define CAT(a, b) a##b
#define NAME(a, b) CAT(a, b)
typedef void (*Leaf)(void);

__attribute__((noinline)) int NAME(PREFIX, _c)(Leaf leaf, int depth) {
  leaf();
  __asm__ volatile("" ::: "memory");  // no tail call: c stays on the stack
  return depth + 1;
}

__attribute__((noinline)) int NAME(PREFIX, _b)(Leaf leaf, int depth) {
#ifdef CLOBBER_RBP
  // Without frame pointers rbp is an ordinary register: 0 here would end a naive walk.
  __asm__ volatile("xor %%ebp, %%ebp" ::: "rbp");
#endif
  int r = NAME(PREFIX, _c)(leaf, depth + 1);
  __asm__ volatile("" ::: "memory");
  return r * 3;
}

__attribute__((noinline)) int NAME(PREFIX, _a)(Leaf leaf, int depth) {
  int r = NAME(PREFIX, _b)(leaf, depth + 1);
  __asm__ volatile("" ::: "memory");
  return r * 5;
}
