// Whether this test executable is built with ASan or TSan (scripts/sanitize.sh), for the tests
// that shrink their volume there or that depend on glibc's own allocator. gcc says so with
// __SANITIZE_ADDRESS__ / __SANITIZE_THREAD__; clang 14, which sanitize.sh builds with, only
// through __has_feature.
#pragma once

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define MEMTAP_SANITIZED_BUILD 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define MEMTAP_SANITIZED_BUILD 1
#endif
#endif
