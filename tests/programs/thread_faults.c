/* memtap_test_thread_faults: thread life cycles a profiler must survive.
 *
 *   exit-thread N   the main thread waits while a second thread allocates N blocks (block i
 *                   has 30011 + 2 * i bytes, kept) and calls exit(3): the process ends from a
 *                   thread other than the main one. Prints "allocated N" first.
 *   churn R T N     R rounds of T threads created and joined; each thread allocates and
 *                   frees N blocks of 40009 bytes. Prints "freed R*T*N" and exits 0.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int g_blocks;

static void* allocate_then_exit(void* arg) {
  (void)arg;
  for (int i = 0; i < g_blocks; ++i) {
    char* p = malloc(30011 + 2 * (size_t)i);
    if (p == NULL) abort();
    p[0] = 1; /* kept: the process ends with it live */
  }
  printf("allocated %d\n", g_blocks);
  fflush(stdout);
  exit(3);
}

static void* allocate_and_free(void* arg) {
  (void)arg;
  for (int i = 0; i < g_blocks; ++i) {
    char* p = malloc(40009);
    if (p == NULL) abort();
    p[0] = 1;
    free(p);
  }
  return NULL;
}

int main(int argc, char** argv) {
  if (argc == 3 && strcmp(argv[1], "exit-thread") == 0) {
    g_blocks = atoi(argv[2]);
    pthread_t t;
    if (pthread_create(&t, NULL, allocate_then_exit, NULL) != 0) return 1;
    for (;;) pause(); /* exit() on the other thread ends the process */
  }
  if (argc == 5 && strcmp(argv[1], "churn") == 0) {
    const int rounds = atoi(argv[2]), threads = atoi(argv[3]);
    g_blocks = atoi(argv[4]);
    pthread_t* ids = calloc((size_t)threads, sizeof *ids);
    if (ids == NULL) return 1;
    for (int r = 0; r < rounds; ++r) {
      for (int i = 0; i < threads; ++i) {
        if (pthread_create(&ids[i], NULL, allocate_and_free, NULL) != 0) return 1;
      }
      for (int i = 0; i < threads; ++i) pthread_join(ids[i], NULL);
    }
    free(ids);
    printf("freed %d\n", rounds * threads * g_blocks);
    return 0;
  }
  fprintf(stderr, "usage: %s exit-thread N | churn ROUNDS THREADS N\n", argv[0]);
  return 2;
}
