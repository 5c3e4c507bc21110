// Stand-in for PyTorch's libc10.so (tests/fake_torch/): memtap's pool tracker links against
// libc10 and libc10_cuda as it must with a real torch; this one holds nothing the tracker
// uses, only a symbol that says what it is.
extern "C" __attribute__((visibility("default"))) const char* memtap_standin_c10() {
  return "memtap's stand-in libc10";
}
