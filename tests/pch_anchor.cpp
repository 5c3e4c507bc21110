// The one source of memtap_test_pch (tests/CMakeLists.txt): a target needs a file to build
// its precompiled header with; the test executables reuse that header. Never run.
int main() {
  return 0;
}
