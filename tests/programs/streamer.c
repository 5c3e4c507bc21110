/* memtap_test_streamer: allocates when told to, so that a test can watch a live window
 * follow a running program step by step without sleeping.
 *
 * Reads commands from standard input, one a line, and answers each with one line on
 * standard output once it is done (flushed):
 *   alloc N SIZE   allocates N blocks of SIZE bytes and keeps them        -> "ok <live bytes>"
 *   free           frees every block it keeps                              -> "ok 0"
 *   churn N SIZE   allocates and frees a block of SIZE bytes N times       -> "ok <live bytes>"
 *   exec           execs itself anew (the same input and output): the new image answers
 *                  nothing until the next command; a failed exec          -> "exec failed"
 *   quit (or end of input)                                                 exits 0
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static void* volatile g_sink;

int main(void) {
  size_t capacity = 1024, count = 0, live = 0;
  void** blocks = malloc(capacity * sizeof(void*));
  char line[256];
  while (fgets(line, sizeof line, stdin) != NULL) {
    unsigned long n = 0, size = 0;
    if (sscanf(line, "alloc %lu %lu", &n, &size) == 2) {
      for (unsigned long i = 0; i < n; ++i) {
        if (count == capacity) {
          capacity *= 2;
          blocks = realloc(blocks, capacity * sizeof(void*));
        }
        blocks[count] = malloc(size);
        memset(blocks[count], 1, size);
        ++count;
        live += size;
      }
    } else if (sscanf(line, "churn %lu %lu", &n, &size) == 2) {
      for (unsigned long i = 0; i < n; ++i) {
        char* p = malloc(size);
        if (p == NULL) abort();
        g_sink = p; /* or the compiler may leave the pair out */
        free(p);
      }
    } else if (strncmp(line, "free", 4) == 0) {
      for (size_t i = 0; i < count; ++i) free(blocks[i]);
      count = 0;
      live = 0;
    } else if (strncmp(line, "exec", 4) == 0) {
      char self[4096];
      ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
      if (n > 0) {
        self[n] = 0;
        execl(self, self, (char*)NULL);
      }
      printf("exec failed\n");
      fflush(stdout);
      continue;
    } else if (strncmp(line, "quit", 4) == 0) {
      break;
    }
    printf("ok %zu\n", live);
    fflush(stdout);
  }
  for (size_t i = 0; i < count; ++i) free(blocks[i]);
  free(blocks);
  return 0;
}
