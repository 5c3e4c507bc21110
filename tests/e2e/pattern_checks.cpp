// See pattern_checks.h. The expectations are built from the constants of alloc_pattern.h,
// so a change to the pattern changes the test with it.
#include "tests/e2e/pattern_checks.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <map>
#include <set>
#include <vector>

#include "tests/e2e/e2e_support.h"
#include "tests/e2e/process_runner.h"
#include "tests/e2e/recording_checks.h"
#include "tests/programs/alloc_pattern.h"

namespace memtap::e2e {

namespace {

enum class Who { kNone, kMain, kThread, kChild };

// What one size of the pattern leaves in one process.
struct SizeExpectation {
  const char* category;
  uint64_t size;
  bool in_child;  // the fork child's rows, else the parent's
  int mallocs;
  int frees;
  Who malloc_thread;
  Who free_thread;
  bool mmap;           // Attr kind = mmap
  uint64_t alignment;  // the MALLOC's Ptr is a multiple of this (1: no requirement)
};

std::vector<SizeExpectation> pattern_expectations() {
  std::vector<SizeExpectation> e;
  const uint64_t malloc_sizes[] = AP_MALLOC_SIZES;
  for (uint64_t size : malloc_sizes)
    e.push_back({"malloc", size, false, AP_MALLOC_PER_SIZE, AP_MALLOC_PER_SIZE, Who::kMain,
                 Who::kMain, false, 1});
  e.push_back({"calloc small", AP_CALLOC_SMALL_BYTES, false, AP_CALLOC_PER, AP_CALLOC_PER,
               Who::kMain, Who::kMain, false, 1});
  e.push_back({"calloc large", AP_CALLOC_LARGE_BYTES, false, AP_CALLOC_PER, AP_CALLOC_PER,
               Who::kMain, Who::kMain, false, 1});
  const uint64_t realloc_sizes[] = AP_REALLOC_SIZES;
  for (uint64_t size : realloc_sizes)
    e.push_back({"realloc chain", size, false, AP_REALLOC_CHAINS, AP_REALLOC_CHAINS, Who::kMain,
                 Who::kMain, false, 1});
  const struct {
    const char* category;
    uint64_t size;
    uint64_t alignment;
  } aligned[] = {
      {"posix_memalign 64", AP_POSIX_MEMALIGN_64_BYTES, AP_ALIGN_SMALL},
      {"posix_memalign 4096", AP_POSIX_MEMALIGN_4096_BYTES, AP_ALIGN_PAGE},
      {"aligned_alloc 64", AP_ALIGNED_ALLOC_64_BYTES, AP_ALIGN_SMALL},
      {"aligned_alloc 4096", AP_ALIGNED_ALLOC_4096_BYTES, AP_ALIGN_PAGE},
      {"memalign 64", AP_MEMALIGN_64_BYTES, AP_ALIGN_SMALL},
      {"memalign 4096", AP_MEMALIGN_4096_BYTES, AP_ALIGN_PAGE},
  };
  for (const auto& a : aligned)
    e.push_back({a.category, a.size, false, AP_ALIGNED_PER, AP_ALIGNED_PER, Who::kMain, Who::kMain,
                 false, a.alignment});
  e.push_back({"second thread's own blocks", AP_THREAD_BYTES, false, AP_THREAD_COUNT,
               AP_THREAD_COUNT, Who::kThread, Who::kThread, false, 1});
  e.push_back({"cross-thread frees", AP_CROSS_BYTES, false, AP_CROSS_COUNT, AP_CROSS_COUNT,
               Who::kMain, Who::kThread, false, 1});
  e.push_back({"anonymous mmap", AP_MMAP_BYTES, false, 1, 1, Who::kMain, Who::kMain, true, 1});
  e.push_back({"file mapping (never recorded)", AP_FILE_MMAP_BYTES, false, 0, 0, Who::kNone,
               Who::kNone, false, 1});
  e.push_back({"file mapping (never recorded)", AP_FILE_MMAP_BYTES, true, 0, 0, Who::kNone,
               Who::kNone, false, 1});
  e.push_back({"inherited block, parent side", AP_INHERITED_BYTES, false, 1, 1, Who::kMain,
               Who::kMain, false, 1});
  e.push_back({"inherited block, child side", AP_INHERITED_BYTES, true, 0, 1, Who::kNone,
               Who::kChild, false, 1});
  e.push_back({"child small", AP_CHILD_SMALL_BYTES, true, AP_CHILD_COUNT, AP_CHILD_COUNT,
               Who::kChild, Who::kChild, false, 1});
  e.push_back({"child large", AP_CHILD_LARGE_BYTES, true, AP_CHILD_COUNT, AP_CHILD_COUNT,
               Who::kChild, Who::kChild, false, 1});
  // Every size of the pattern is also expected to leave nothing in the other process.
  std::set<std::pair<bool, uint64_t>> listed;
  for (const SizeExpectation& x : e) listed.emplace(x.in_child, x.size);
  std::vector<SizeExpectation> absent;
  for (const SizeExpectation& x : e)
    if (!listed.count({!x.in_child, x.size})) {
      listed.emplace(!x.in_child, x.size);
      absent.push_back({x.category, x.size, !x.in_child, 0, 0, Who::kNone, Who::kNone, false, 1});
    }
  e.insert(e.end(), absent.begin(), absent.end());
  return e;
}

const char* who_name(Who w) {
  switch (w) {
    case Who::kMain:
      return "the main thread";
    case Who::kThread:
      return "the second thread";
    case Who::kChild:
      return "the child";
    case Who::kNone:
      return "nowhere";
  }
  return "?";
}

int64_t tid_of(Who w, const PatternRun& run) {
  switch (w) {
    case Who::kMain:
      return run.main_tid;
    case Who::kThread:
      return run.thread_tid;
    case Who::kChild:
      return run.child_pid;  // the child's only thread
    case Who::kNone:
      return -1;
  }
  return -1;
}

void check_counts_and_rows(const RecordingData& rec, const PatternRun& run) {
  const std::vector<SizeExpectation> expectations = pattern_expectations();
  std::map<std::pair<bool, uint64_t>, const SizeExpectation*> by_size;
  for (const SizeExpectation& x : expectations) by_size[{x.in_child, x.size}] = &x;

  // Counts per (process, event, size), pattern sizes only.
  std::map<std::pair<bool, uint64_t>, std::pair<int, int>> counts;
  Violations rows_ok("every pattern row is on its thread, with its kind and alignment");
  for (const DumpRecord& r : rec.rows) {
    if (!r.is_alloc_event() || (r.pid != run.pid && r.pid != run.child_pid)) continue;
    const bool in_child = r.pid == run.child_pid;
    auto it = by_size.find({in_child, r.size});
    if (it == by_size.end()) continue;
    const SizeExpectation& x = *it->second;
    const bool is_malloc = r.event == "MALLOC";
    (is_malloc ? counts[{in_child, r.size}].first : counts[{in_child, r.size}].second)++;
    const Who thread = is_malloc ? x.malloc_thread : x.free_thread;
    if (r.tid != tid_of(thread, run))
      rows_ok.add(std::string(x.category) + ": " + r.describe() + ": expected on " +
                  who_name(thread) + " (tid " + std::to_string(tid_of(thread, run)) + ")");
    if (r.is_mmap != x.mmap)
      rows_ok.add(std::string(x.category) + ": " + r.describe() + ": expected " +
                  (x.mmap ? "kind mmap" : "no kind (heap)"));
    if (is_malloc && r.ptr % x.alignment != 0)
      rows_ok.add(std::string(x.category) + ": " + r.describe() + ": Ptr not a multiple of " +
                  std::to_string(x.alignment));
  }
  MEMTAP_REPORT(rows_ok);

  Violations count_ok("MALLOC and FREE counts per size are exactly the pattern's");
  for (const SizeExpectation& x : expectations) {
    auto c = counts[{x.in_child, x.size}];
    if (c.first != x.mallocs || c.second != x.frees) {
      char line[256];
      snprintf(line, sizeof line,
               "%s, %s, size %llu: %d MALLOC %d FREE, expected %d MALLOC %d FREE", x.category,
               x.in_child ? "child" : "parent", (unsigned long long)x.size, c.first, c.second,
               x.mallocs, x.frees);
      count_ok.add(line);
    }
  }
  MEMTAP_REPORT(count_ok);
}

void check_threads_and_mappings(const RecordingData& rec, const PatternRun& run) {
  // Only the program's own two threads: the agent's sender and ZeroMQ's threads, which
  // also allocate, must not appear.
  Violations threads("the parent's rows are on its two threads only, the child's on its one");
  Violations mappings("the only anonymous-mapping rows are the pattern's one mapping");
  int parent_mmap_rows = 0;
  for (const DumpRecord& r : rec.rows) {
    if (r.pid == run.pid) {
      if (r.tid != run.main_tid && r.tid != run.thread_tid) threads.add(r.describe());
      if (r.is_mmap) {
        ++parent_mmap_rows;
        if (r.size != AP_MMAP_BYTES) mappings.add(r.describe());
      }
    } else if (r.pid == run.child_pid) {
      if (r.tid != run.child_pid) threads.add(r.describe());
      if (r.is_mmap) mappings.add(r.describe());
    }
  }
  MEMTAP_REPORT(threads);
  if (parent_mmap_rows != 2)
    mappings.add("the parent has " + std::to_string(parent_mmap_rows) +
                 " mmap rows; expected the MALLOC and FREE of its anonymous mapping (the "
                 "file-backed mapping of " +
                 std::to_string(AP_FILE_MMAP_BYTES) + " bytes and the PROT_NONE reservation of " +
                 std::to_string(AP_RESERVE_BYTES) + " bytes leave none)");
  MEMTAP_REPORT(mappings);
}

const DumpRecord* only_row(const RecordingData& rec, int64_t pid, const char* event,
                           uint64_t size) {
  const DumpRecord* found = nullptr;
  for (const DumpRecord& r : rec.rows) {
    if (r.pid != pid || r.event != event || r.size != size) continue;
    if (found) return nullptr;
    found = &r;
  }
  return found;
}

void check_fork(const RecordingData& rec, const PatternRun& run) {
  const DumpRecord* parent_malloc = only_row(rec, run.pid, "MALLOC", AP_INHERITED_BYTES);
  const DumpRecord* parent_free = only_row(rec, run.pid, "FREE", AP_INHERITED_BYTES);
  const DumpRecord* child_free = only_row(rec, run.child_pid, "FREE", AP_INHERITED_BYTES);
  ASSERT_TRUE(parent_malloc && parent_free && child_free)
      << "the inherited block needs one MALLOC and one FREE in the parent and one FREE in the "
         "child (counts are reported above)";
  EXPECT_EQ(child_free->inherited_from, uint64_t(run.pid))
      << "the child's FREE of the inherited block names the parent: " << child_free->describe();
  EXPECT_EQ(child_free->allocation_id, parent_malloc->allocation_id)
      << "the child's FREE carries the parent's allocation id: " << child_free->describe() << " vs "
      << parent_malloc->describe();
  EXPECT_EQ(child_free->ptr_text, parent_malloc->ptr_text) << child_free->describe();
  EXPECT_EQ(parent_free->inherited_from, 0u)
      << "the parent's own FREE is not inherited: " << parent_free->describe();
  EXPECT_EQ(parent_free->allocation_id, parent_malloc->allocation_id) << parent_free->describe();
  EXPECT_LT(child_free->ts_ns, parent_free->ts_ns)
      << "the parent frees the block after the child has exited";

  // The child exists only after fork(), which follows the inherited block's MALLOC.
  Violations after("every child row is later than the parent's last row before fork()");
  for (const DumpRecord& r : rec.rows)
    if (r.pid == run.child_pid && r.ts_ns <= parent_malloc->ts_ns)
      after.add(r.describe() + " vs " + parent_malloc->describe());
  MEMTAP_REPORT(after);
}

void check_sessions(const RecordingData& rec, const PatternRun& run) {
  auto p = rec.sessions.find(run.pid);
  auto c = rec.sessions.find(run.child_pid);
  ASSERT_TRUE(p != rec.sessions.end()) << "no memtap_session row for the parent, pid " << run.pid;
  ASSERT_TRUE(c != rec.sessions.end())
      << "no memtap_session row for the child, pid " << run.child_pid;
  const SessionRecord& parent = p->second;
  const SessionRecord& child = c->second;
  EXPECT_EQ(parent.ppid, run.expected_ppid) << "the parent's ppid";
  EXPECT_EQ(parent.forked_from_pid, 0) << "the parent was exec'd, not forked";
  EXPECT_EQ(child.ppid, run.pid) << "the child's ppid";
  EXPECT_EQ(child.forked_from_pid, run.pid) << "the child was forked from the parent";
  const std::string host = run.hostname.empty() ? host_name() : run.hostname;
  for (const SessionRecord* s : {&parent, &child}) {
    SCOPED_TRACE("memtap_session row of pid " + std::to_string(s->pid));
    EXPECT_EQ(s->command_line, run.command_line);
    EXPECT_EQ(s->hostname, host);
    EXPECT_EQ(s->events_dropped, 0);
    EXPECT_EQ(s->bye_received, 1) << "the child ends with _exit(): its Bye proves that flush";
  }

  // Every event the agent sent is a row, except the fork notification (one per child,
  // which only seeds the child's blocks) and, in the parent, the munmap of the file-backed
  // mapping: the agent cannot tell it from an anonymous one, and the monitor, having never
  // seen that range mapped, must not turn it into a row. Whether the agent sends it at all
  // is its choice, hence 0 or 1 of those.
  // Memory samples (SNAPSHOT) are events too; the agent takes one at its first batch and
  // one at exit, so every process has at least one.
  auto snapshot_rows = [&](int64_t pid) {
    int64_t n = 0;
    for (const DumpRecord& r : rec.rows) n += r.pid == pid && r.event == "SNAPSHOT";
    return n;
  };
  EXPECT_GE(snapshot_rows(run.pid), 1) << "the parent's memory samples (App Reserved)";
  EXPECT_GE(snapshot_rows(run.child_pid), 1) << "the child's memory samples (App Reserved)";
  auto alloc_rows = [&](int64_t pid) {
    int64_t n = snapshot_rows(pid);
    for (const DumpRecord& r : rec.rows) n += r.pid == pid && r.is_alloc_event();
    return n;
  };
  const int64_t parent_rows = alloc_rows(run.pid);
  const int64_t forks = 1;
  EXPECT_TRUE(parent.events_received >= parent_rows + forks &&
              parent.events_received <= parent_rows + forks + 2)
      << "parent: events_received " << parent.events_received << ", MALLOC/FREE rows "
      << parent_rows << ", fork()s " << forks
      << " (expected rows + forks, plus at most the ignored munmaps of the file mapping and "
         "the reservation)";
  EXPECT_EQ(child.events_received, alloc_rows(run.child_pid))
      << "child: every event received is a MALLOC/FREE or SNAPSHOT row";
}

}  // namespace

bool parse_pattern_output(const std::string& out, PatternRun* run, std::string* error) {
  std::vector<std::string> lines = split_lines(out);
  long long main_tid = 0, thread_tid = 0, pid = 0, child = 0;
  char tail[2];
  if (lines.size() != 3 ||
      sscanf(lines[0].c_str(), "main_tid=%lld thread_tid=%lld%1s", &main_tid, &thread_tid, tail) !=
          2 ||
      sscanf(lines[1].c_str(), "pid=%lld child=%lld%1s", &pid, &child, tail) != 2 ||
      lines[2] != "alloc_pattern done" || out.back() != '\n') {
    *error = "unexpected output from alloc_pattern:\n" + out;
    return false;
  }
  run->main_tid = main_tid;
  run->thread_tid = thread_tid;
  run->pid = pid;
  run->child_pid = child;
  if (main_tid != pid || thread_tid <= 0 || child <= 0 || thread_tid == main_tid) {
    *error = "implausible ids from alloc_pattern:\n" + out;
    return false;
  }
  return true;
}

void expect_alloc_pattern(const RecordingData& rec, const PatternRun& run) {
  SCOPED_TRACE("alloc_pattern pid " + std::to_string(run.pid) + ", child " +
               std::to_string(run.child_pid) + ", threads " + std::to_string(run.main_tid) + "/" +
               std::to_string(run.thread_tid));
  check_counts_and_rows(rec, run);
  check_threads_and_mappings(rec, run);
  check_fork(rec, run);
  check_sessions(rec, run);
}

bool finish_pattern_run(Process& program, PatternRun* run) {
  ProcessResult r = program.wait(kProcessTimeout);
  if (!r.exited || r.exit_code != 0) {
    ADD_FAILURE() << describe(r) << "\nstderr:\n" << r.err;
    return false;
  }
  std::string error;
  if (!parse_pattern_output(r.out, run, &error)) {
    ADD_FAILURE() << error;
    return false;
  }
  run->expected_ppid = getpid();
  run->command_line = kAllocPattern;
  return true;
}

}  // namespace memtap::e2e
