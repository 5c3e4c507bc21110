/* memtap_test_alloc_pattern: performs the allocation pattern that alloc_pattern.h
 * describes, so that an end-to-end test can check a recording of it row by row.
 *
 * Every block is written to and its address published through a volatile sink: without
 * that, the compiler may remove a malloc/free pair whose memory is never used, and the test
 * would count rows for allocations that never happened.
 */
#define _GNU_SOURCE
#include "alloc_pattern.h"

#include <fcntl.h>
#include <malloc.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

static void* volatile sink;
static int failures;

static void fail(const char* what) {
  fprintf(stderr, "alloc_pattern: %s\n", what);
  failures++;
}

/* Writes the first and last byte and publishes the address. */
static void use(void* p, size_t size) {
  if (!p) {
    fail("allocation returned NULL");
    return;
  }
  unsigned char* bytes = p;
  bytes[0] = 0xa5;
  bytes[size - 1] = 0x5a;
  sink = p;
}

static void malloc_sizes(void) {
  static const size_t sizes[AP_MALLOC_SIZE_COUNT] = AP_MALLOC_SIZES;
  void* blocks[AP_MALLOC_PER_SIZE];
  for (int s = 0; s < AP_MALLOC_SIZE_COUNT; s++) {
    for (int i = 0; i < AP_MALLOC_PER_SIZE; i++) {
      blocks[i] = malloc(sizes[s]);
      use(blocks[i], sizes[s]);
    }
    for (int i = 0; i < AP_MALLOC_PER_SIZE; i++) free(blocks[i]);
  }
}

static void calloc_blocks(size_t nmemb, size_t elem) {
  void* blocks[AP_CALLOC_PER];
  for (int i = 0; i < AP_CALLOC_PER; i++) {
    blocks[i] = calloc(nmemb, elem);
    if (blocks[i] && ((unsigned char*)blocks[i])[nmemb * elem / 2] != 0) fail("calloc not zeroed");
    use(blocks[i], nmemb * elem);
  }
  for (int i = 0; i < AP_CALLOC_PER; i++) free(blocks[i]);
}

static void realloc_chains(void) {
  static const size_t sizes[AP_REALLOC_SIZE_COUNT] = AP_REALLOC_SIZES;
  for (int c = 0; c < AP_REALLOC_CHAINS; c++) {
    void* p = NULL;
    for (int s = 0; s < AP_REALLOC_SIZE_COUNT; s++) {
      void* q = realloc(p, sizes[s]);
      if (!q) {
        fail("realloc returned NULL");
        free(p);
        return;
      }
      /* The first byte survives every step (the shrink keeps it too). */
      if (s > 0 && ((unsigned char*)q)[0] != 0xa5) fail("realloc lost the block's contents");
      p = q;
      use(p, sizes[s]);
    }
    free(p);
  }
}

static void check_aligned(void* p, size_t alignment) {
  if (p && ((uintptr_t)p % alignment) != 0) fail("misaligned block");
}

static void aligned_blocks(void) {
  void* blocks[6][AP_ALIGNED_PER];
  for (int i = 0; i < AP_ALIGNED_PER; i++) {
    if (posix_memalign(&blocks[0][i], AP_ALIGN_SMALL, AP_POSIX_MEMALIGN_64_BYTES) != 0)
      blocks[0][i] = NULL;
    if (posix_memalign(&blocks[1][i], AP_ALIGN_PAGE, AP_POSIX_MEMALIGN_4096_BYTES) != 0)
      blocks[1][i] = NULL;
    blocks[2][i] = aligned_alloc(AP_ALIGN_SMALL, AP_ALIGNED_ALLOC_64_BYTES);
    blocks[3][i] = aligned_alloc(AP_ALIGN_PAGE, AP_ALIGNED_ALLOC_4096_BYTES);
    blocks[4][i] = memalign(AP_ALIGN_SMALL, AP_MEMALIGN_64_BYTES);
    blocks[5][i] = memalign(AP_ALIGN_PAGE, AP_MEMALIGN_4096_BYTES);

    use(blocks[0][i], AP_POSIX_MEMALIGN_64_BYTES);
    use(blocks[1][i], AP_POSIX_MEMALIGN_4096_BYTES);
    use(blocks[2][i], AP_ALIGNED_ALLOC_64_BYTES);
    use(blocks[3][i], AP_ALIGNED_ALLOC_4096_BYTES);
    use(blocks[4][i], AP_MEMALIGN_64_BYTES);
    use(blocks[5][i], AP_MEMALIGN_4096_BYTES);
    for (int k = 0; k < 6; k++) check_aligned(blocks[k][i], k % 2 ? AP_ALIGN_PAGE : AP_ALIGN_SMALL);
  }
  for (int k = 0; k < 6; k++)
    for (int i = 0; i < AP_ALIGNED_PER; i++) free(blocks[k][i]);
}

struct thread_work {
  void* cross[AP_CROSS_COUNT]; /* allocated by the main thread, freed by the second */
  pid_t tid;
};

static void* second_thread(void* arg) {
  struct thread_work* work = arg;
  work->tid = gettid();
  void* own[AP_THREAD_COUNT];
  for (int i = 0; i < AP_THREAD_COUNT; i++) {
    own[i] = malloc(AP_THREAD_BYTES);
    use(own[i], AP_THREAD_BYTES);
  }
  for (int i = 0; i < AP_THREAD_COUNT; i++) free(own[i]);
  for (int i = 0; i < AP_CROSS_COUNT; i++) free(work->cross[i]);
  return NULL;
}

static pid_t run_second_thread(void) {
  struct thread_work work;
  for (int i = 0; i < AP_CROSS_COUNT; i++) {
    work.cross[i] = malloc(AP_CROSS_BYTES);
    use(work.cross[i], AP_CROSS_BYTES);
  }
  work.tid = 0;
  pthread_t thread;
  if (pthread_create(&thread, NULL, second_thread, &work) != 0) {
    fail("pthread_create failed");
    return 0;
  }
  pthread_join(thread, NULL);
  return work.tid;
}

static void anonymous_mapping(void) {
  void* p = mmap(NULL, AP_MMAP_BYTES, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (p == MAP_FAILED) {
    fail("anonymous mmap failed");
    return;
  }
  memset(p, 0x11, AP_MMAP_BYTES);
  sink = p;
  if (munmap(p, AP_MMAP_BYTES) != 0) fail("munmap failed");
}

static void file_mapping(void) {
  int fd = open("/proc/self/exe", O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    fail("cannot open /proc/self/exe");
    return;
  }
  void* p = mmap(NULL, AP_FILE_MMAP_BYTES, PROT_READ, MAP_PRIVATE, fd, 0);
  close(fd);
  if (p == MAP_FAILED) {
    fail("file mmap failed");
    return;
  }
  if (memcmp(p, "\177ELF", 4) != 0) fail("file mapping does not show the executable");
  munmap(p, AP_FILE_MMAP_BYTES);
}

/* An address-space reservation, as the CUDA driver makes them (tens of GiB): no memory. */
static void reservation(void) {
  void* p =
      mmap(NULL, AP_RESERVE_BYTES, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED) {
    fail("PROT_NONE reservation failed");
    return;
  }
  if (munmap(p, AP_RESERVE_BYTES) != 0) fail("munmap of the reservation failed");
}

/* Runs in the fork() child; never returns. */
static void child_main(void* inherited) {
  void* small[AP_CHILD_COUNT];
  void* large[AP_CHILD_COUNT];
  for (int i = 0; i < AP_CHILD_COUNT; i++) {
    small[i] = malloc(AP_CHILD_SMALL_BYTES);
    large[i] = malloc(AP_CHILD_LARGE_BYTES);
    use(small[i], AP_CHILD_SMALL_BYTES);
    use(large[i], AP_CHILD_LARGE_BYTES);
  }
  for (int i = 0; i < AP_CHILD_COUNT; i++) {
    free(small[i]);
    free(large[i]);
  }
  int ok = ((unsigned char*)inherited)[0] == 0xa5;
  free(inherited);
  /* _exit, as Python multiprocessing children do: no atexit handlers, no stdio flush. */
  _exit(ok && failures == 0 ? 0 : 1);
}

int main(int argc, char** argv) {
  int exit_code = argc > 1 ? atoi(argv[1]) : 0;

  malloc_sizes();
  calloc_blocks(AP_CALLOC_SMALL_NMEMB, AP_CALLOC_SMALL_ELEM);
  calloc_blocks(AP_CALLOC_LARGE_NMEMB, AP_CALLOC_LARGE_ELEM);
  realloc_chains();
  aligned_blocks();
  pid_t thread_tid = run_second_thread();
  anonymous_mapping();
  file_mapping();
  reservation();

  printf("main_tid=%d thread_tid=%d\n", (int)gettid(), (int)thread_tid);

  void* inherited = malloc(AP_INHERITED_BYTES);
  use(inherited, AP_INHERITED_BYTES);
  fflush(stdout); /* the child must not print the parent's buffered output again */
  pid_t child = fork();
  if (child < 0) {
    fail("fork failed");
  } else if (child == 0) {
    child_main(inherited);
  } else {
    int status = 0;
    if (waitpid(child, &status, 0) != child)
      fail("waitpid failed");
    else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
      fail("child failed");
  }
  free(inherited);

  printf("pid=%d child=%d\n", (int)getpid(), (int)child);
  printf("alloc_pattern done\n");
  return failures ? 1 : exit_code;
}
