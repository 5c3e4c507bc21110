/* The known allocation pattern of memtap_test_alloc_pattern (alloc_pattern.c).
 *
 * An end-to-end test runs the program under `memtap run` and checks the recording row by
 * row against these constants, so every category uses sizes that no other category and, as
 * far as can be arranged, nothing in libc or the loader uses: odd, prime-ish byte counts. A
 * test can therefore count rows by `size` alone. C and C++ include this header; it holds
 * only macros (no enums: C++20 deprecates arithmetic between different enum types).
 *
 * Rows the pattern produces (Event, in which process, on which thread), assuming the agent
 * records a realloc as a FREE of the old block followed by a MALLOC of the new one (also
 * when the block grows in place) and realloc(NULL, n) as a plain MALLOC:
 *
 *   parent, main thread
 *     malloc     AP_MALLOC_SIZES, AP_MALLOC_PER_SIZE each      MALLOC + FREE per block
 *     calloc     AP_CALLOC_{SMALL,LARGE}_BYTES, AP_CALLOC_PER  MALLOC + FREE per block
 *                (size is nmemb * size)
 *     realloc    AP_REALLOC_SIZES, one chain, AP_REALLOC_CHAINS times: every size gets
 *                one MALLOC and one FREE per chain (the chain starts with realloc(NULL))
 *     aligned    AP_ALIGNED_* (posix_memalign, aligned_alloc, memalign; alignment 64 and
 *                4096), AP_ALIGNED_PER each                    MALLOC + FREE per block,
 *                every Ptr a multiple of its alignment
 *     cross      AP_CROSS_BYTES, AP_CROSS_COUNT                MALLOC on the main thread,
 *                                                              FREE on the second thread
 *     mmap       AP_MMAP_BYTES, one anonymous mapping          MALLOC + FREE (mmap kind)
 *     file map   AP_FILE_MMAP_BYTES, one file-backed mapping   no rows (not anonymous)
 *     reserve    AP_RESERVE_BYTES, one anonymous PROT_NONE     no rows (address space, not
 *                mapping                                       memory)
 *     inherited  AP_INHERITED_BYTES, one block before fork()   MALLOC, and FREE after the
 *                                                              child has exited
 *   parent, second thread
 *     malloc     AP_THREAD_BYTES, AP_THREAD_COUNT              MALLOC + FREE per block
 *   child (fork() without exec, ends with _exit(0) so no atexit handler runs)
 *     malloc     AP_CHILD_SMALL_BYTES and AP_CHILD_LARGE_BYTES,
 *                AP_CHILD_COUNT each                           MALLOC + FREE per block
 *     inherited  FREE of the parent's AP_INHERITED_BYTES block (same address)
 *
 * Order: everything on the parent's side (the second thread joined) happens before fork().
 *
 * Standard output, in this order:
 *   main_tid=<tid> thread_tid=<tid>    kernel thread ids (gettid) of the two threads
 *   pid=<pid> child=<childpid>
 *   alloc_pattern done
 * Exit status: 0, or atoi(argv[1]) when given; 1 if anything in the pattern failed.
 */
#ifndef MEMTAP_TESTS_PROGRAMS_ALLOC_PATTERN_H
#define MEMTAP_TESTS_PROGRAMS_ALLOC_PATTERN_H

/* malloc on the main thread. 1048601 is above glibc's initial mmap threshold (128 KiB), so
 * glibc serves at least the first such block with an internal mmap; it is still one
 * MALLOC row (HOST heap), not an mmap row. */
#define AP_MALLOC_SIZES \
  { 37, 1009, 4111, 65557, 1048601 }
#define AP_MALLOC_SIZE_COUNT 5
#define AP_MALLOC_PER_SIZE 10

/* calloc(nmemb, size); the recorded size is the product. LARGE is above 128 KiB. */
#define AP_CALLOC_SMALL_NMEMB 7
#define AP_CALLOC_SMALL_ELEM 149
#define AP_CALLOC_SMALL_BYTES (7 * 149) /* 1043 */
#define AP_CALLOC_LARGE_NMEMB 3
#define AP_CALLOC_LARGE_ELEM 70001
#define AP_CALLOC_LARGE_BYTES (3 * 70001) /* 210003 */
#define AP_CALLOC_PER 4

/* One chain: p = realloc(NULL, s0); p = realloc(p, s1); ... ; free(p). It grows past the
 * mmap threshold and ends with a shrink. */
#define AP_REALLOC_SIZES \
  { 2003, 3011, 5003, 20011, 300007, 1511 }
#define AP_REALLOC_SIZE_COUNT 6
#define AP_REALLOC_CHAINS 3

/* Aligned allocations. aligned_alloc sizes are multiples of the alignment (C11). */
#define AP_ALIGN_SMALL 64
#define AP_ALIGN_PAGE 4096
#define AP_POSIX_MEMALIGN_64_BYTES 3023
#define AP_POSIX_MEMALIGN_4096_BYTES 6007
#define AP_ALIGNED_ALLOC_64_BYTES (64 * 53)    /* 3392 */
#define AP_ALIGNED_ALLOC_4096_BYTES (4096 * 3) /* 12288 */
#define AP_MEMALIGN_64_BYTES 3079
#define AP_MEMALIGN_4096_BYTES 6011
#define AP_ALIGNED_PER 4

/* The second thread's own blocks, and the main thread's blocks that it frees. */
#define AP_THREAD_BYTES 7013
#define AP_THREAD_COUNT 20
#define AP_CROSS_BYTES 8009
#define AP_CROSS_COUNT 8

/* mmap(NULL, AP_MMAP_BYTES, PROT_READ|PROT_WRITE, MAP_PRIVATE|MAP_ANONYMOUS) then munmap.
 * The file-backed mapping (the program's own executable, read-only) must not be
 * recorded. */
#define AP_MMAP_BYTES (251 * 4096) /* 1028096 */
#define AP_FILE_MMAP_BYTES 5001    /* not page-aligned on purpose */
#define AP_RESERVE_BYTES (((size_t)1 << 30) + 4096)

/* fork(): the block allocated before fork, and the child's own blocks. */
#define AP_INHERITED_BYTES 5555
#define AP_CHILD_SMALL_BYTES 777
#define AP_CHILD_LARGE_BYTES 7777
#define AP_CHILD_COUNT 12

#endif /* MEMTAP_TESTS_PROGRAMS_ALLOC_PATTERN_H */
