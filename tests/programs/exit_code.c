/* memtap_test_exit_code: prints its arguments and exits with atoi(argv[1]) (0 without one),
 * so a test can check that `memtap run` passes the program's arguments through unchanged
 * and returns the program's exit status.
 *
 * Output: one line per argument, "argv[<i>]=<arg>", argv[0] included.
 */
#include <stdio.h>
#include <stdlib.h>

int main(int argc, char** argv) {
  for (int i = 0; i < argc; i++) printf("argv[%d]=%s\n", i, argv[i]);
  return argc > 1 ? atoi(argv[1]) : 0;
}
