/* memtap_test_handoff: the main thread mallocs N blocks (argv[1], default 100000) of 48
 * bytes, then a second thread frees every one of them and the program exits; nothing else.
 *
 * A producer/consumer handoff across threads, in more records than the agent's sender puts
 * in one batch (65536): with the sender draining only at exit (a long
 * MEMTAP_DRAIN_INTERVAL_US), the frees of the second thread, whose buffer the sender reaches
 * first, go out in batches ahead of the mallocs they free. The monitor must still pair each
 * free with its malloc, in time order.
 *
 * Output: "pid=<pid> blocks=<N>".
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static void** blocks;
static long count;

static void* free_all(void* arg) {
  (void)arg;
  for (long i = 0; i < count; i++) free(blocks[i]);
  return NULL;
}

int main(int argc, char** argv) {
  count = argc > 1 ? atol(argv[1]) : 100000;
  blocks = calloc((size_t)count, sizeof *blocks);
  if (!blocks) return 1;
  for (long i = 0; i < count; i++) {
    blocks[i] = malloc(48);
    if (!blocks[i]) return 1;
    *(volatile char*)blocks[i] = (char)i;
  }
  pthread_t t;
  if (pthread_create(&t, NULL, free_all, NULL) != 0) return 1;
  pthread_join(t, NULL);
  printf("pid=%d blocks=%ld\n", (int)getpid(), count);
  free(blocks);
  return 0;
}
