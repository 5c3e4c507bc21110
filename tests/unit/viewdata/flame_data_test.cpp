// The flame chart's data from recordings the real writer made: python_trace_<pid> slices
// overlapping the range only, nested into depths per thread; slices narrower than a pixel
// and spans beyond the bound left out, however large the table; the allocations' Python
// stacks as the chart when there is no trace (text and --compact files); search.
#include "monitor/viewdata/flame_data.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <limits>
#include <set>

#include "monitor/viewdata/flame_reader.h"
#include "tests/unit/store/store_test_support.h"
#include "tests/unit/viewdata/recording_builder.h"

namespace memtap {
namespace {

using viewdata::FlameData;
using viewdata::FlameReader;
using viewdata::FlameRequest;
using viewdata::FlameSource;
using viewdata::FlameSpan;

// Reads until the reader has indexed the whole file (it takes rows_per_read a call).
FlameData read_all(FlameReader& reader, const FlameRequest& r) {
  FlameData d;
  for (int i = 0; i < 10000; ++i) {
    d = reader.read(r);
    if (d.indexed || !d.error.empty()) break;
  }
  return d;
}

std::string function_of(const FlameData& d, const FlameSpan& s) {
  return d.functions.at(s.function).function;
}

// "function@depth" of each span, sorted.
std::multiset<std::string> spans_of(const FlameData& d) {
  std::multiset<std::string> out;
  for (const FlameSpan& s : d.spans) out.insert(function_of(d, s) + "@" + std::to_string(s.depth));
  return out;
}

FlameRequest request(const test::RecordingBuilder& b, double from_ms, double to_ms,
                     int width_px = 1000) {
  FlameRequest r;
  r.pid = b.pid();
  r.t0_ns = b.at(from_ms);
  r.t1_ns = b.at(to_ms);
  r.width_px = width_px;
  return r;
}

TEST(FlameData, ParsesFuncInfo) {
  const viewdata::FlameFunction f = viewdata::parse_func_info("/src/a (copy).py(12): train_step");
  EXPECT_EQ(f.file, "/src/a (copy).py");
  EXPECT_EQ(f.line, 12);
  EXPECT_EQ(f.function, "train_step");
  EXPECT_EQ(viewdata::parse_func_info("<built-in>").function, "<built-in>");
}

TEST(FlameReader, ReadsOnlyTheSlicesOverlappingTheRangeNestedPerThread) {
  test::TempDir dir;
  test::RecordingBuilder b;
  b.slice(0, 100, "main.py(1): main");
  b.slice(10, 20, "main.py(5): load");
  b.slice(12, 15, "io.py(3): read");
  b.slice(50, 60, "main.py(9): step");
  b.slice(52, 58, "model.py(20): forward");
  b.slice(40, 70, "worker.py(2): work", 777);
  b.malloc(101, 0x1000, 10);
  const std::string path = dir.file("trace.db");
  b.write(path);

  FlameReader reader(path, "memscope_dump");
  const FlameData d = read_all(reader, request(b, 30, 65));
  ASSERT_EQ(d.error, "");
  EXPECT_EQ(d.source, FlameSource::kTrace);
  EXPECT_TRUE(d.has_trace);
  EXPECT_EQ(spans_of(d), (std::multiset<std::string>{"main@0", "step@1", "forward@2", "work@0"}));
  EXPECT_EQ(d.threads, (std::vector<uint32_t>{b.pid(), 777}));
  for (const FlameSpan& s : d.spans) {
    if (function_of(d, s) != "forward") continue;
    EXPECT_EQ(s.start_ns, b.at(52));
    EXPECT_EQ(s.end_ns, b.at(58));
    EXPECT_EQ(s.line, 20);
    EXPECT_EQ(d.functions[s.function].file, "model.py");
  }
  EXPECT_EQ(viewdata::thread_depths(d), (std::vector<int>{3, 1}));
}

TEST(FlameReader, SlicesNarrowerThanAPixelAreNotRead) {
  test::TempDir dir;
  test::RecordingBuilder b;
  b.slice(0, 100, "main.py(1): main");
  b.slice(10, 10.05, "main.py(7): tiny");  // 50 us
  b.slice(20, 30, "main.py(8): wide");
  const std::string path = dir.file("narrow.db");
  b.write(path);
  FlameReader reader(path, "memscope_dump");
  EXPECT_EQ(spans_of(read_all(reader, request(b, 0, 100, 100))),  // 1 ms a pixel
            (std::multiset<std::string>{"main@0", "wide@1"}));
  EXPECT_EQ(spans_of(read_all(reader, request(b, 9, 11, 1000))),  // 2 us a pixel
            (std::multiset<std::string>{"main@0", "tiny@1"}));
}

TEST(FlameReader, ATableLargerThanTheBoundGivesAtMostTheBoundWidestFirst) {
  test::TempDir dir;
  test::RecordingBuilder b;
  b.slice(0, 40000, "main.py(1): main");
  for (int i = 0; i < 20000; ++i) {
    b.slice(i * 2.0, i * 2.0 + 1.5, "loop.py(3): step");
    b.slice(i * 2.0 + 0.5, i * 2.0 + 1.0, "loop.py(9): inner");
  }
  const std::string path = dir.file("big.db");
  b.write(path);
  FlameReader reader(path, "memscope_dump");
  FlameRequest r = request(b, 0, 40000, 1'000'000);  // 40 us a pixel: every slice is wider
  r.max_spans = 1000;
  r.rows_per_read = 7000;  // the index is built over several reads
  FlameData d = reader.read(r);
  EXPECT_FALSE(d.indexed);
  EXPECT_LT(d.indexed_fraction, 1.0);
  d = read_all(reader, r);
  ASSERT_TRUE(d.indexed);
  EXPECT_EQ(d.spans.size(), 1000u);
  EXPECT_TRUE(d.truncated);
  // The widest levels come first: main and the steps, no inner call without its step.
  size_t mains = 0, inners = 0;
  for (const FlameSpan& s : d.spans) {
    mains += function_of(d, s) == "main";
    inners += function_of(d, s) == "inner";
  }
  EXPECT_EQ(mains, 1u);
  EXPECT_EQ(inners, 0u);

  // At a chart's width the whole run is one box: every step is narrower than a pixel.
  r.width_px = 1500;
  d = reader.read(r);
  EXPECT_EQ(spans_of(d), (std::multiset<std::string>{"main@0"}));
  EXPECT_FALSE(d.truncated);
}

// A file anyone could have written: msMemScope's trace table and event table in microseconds,
// with rows whose times wrap int64 nanoseconds into the range shown (raw * 1000 mod 2^64),
// a slice that never ends, one that ends before it starts, and tables whose names alias
// process 100 (python_trace_ 2^32 + 100, python_trace_100x).
TEST(FlameReader, UntrustedTimesAndTableNamesNeverLandInTheChart) {
  test::TempDir dir;
  const std::string path = dir.file("crafted.db");
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  const std::string trace_columns =
      " (\"FuncInfo\" TEXT, \"StartTime(ns)\" TEXT, \"EndTime(ns)\" TEXT, \"Thread Id\" "
      "INTEGER, \"Process Id\" INTEGER);";
  // 1700000000000000 us is the start; 20146744074009552 us * 1000 wraps to 300 ms after it.
  const std::string sql =
      "CREATE TABLE python_trace_100" + trace_columns +
      "INSERT INTO python_trace_100 VALUES ('main.py(1): main', '1700000000000000', "
      "'1700000000100000', 1, 100);"
      "INSERT INTO python_trace_100 VALUES ('bad.py(1): wraps', '20146744074009552', "
      "'20146744074019552', 1, 100);"
      "INSERT INTO python_trace_100 VALUES ('bad.py(2): endless', '1700000000050000', "
      "'9223372036854775', 1, 100);"
      "INSERT INTO python_trace_100 VALUES ('bad.py(3): backwards', '1700000000350000', "
      "'1700000000340000', 1, 100);"
      "INSERT INTO python_trace_100 VALUES ('bad.py(4): before1970', '-5000000', "
      "'1700000000360000', 1, 100);"
      "CREATE TABLE python_trace_4294967396" +
      trace_columns +
      "INSERT INTO python_trace_4294967396 VALUES ('alias.py(1): big', '1700000000150000', "
      "'1700000000160000', 1, 100);"
      "CREATE TABLE python_trace_100x" +
      trace_columns +
      "INSERT INTO python_trace_100x VALUES ('alias.py(2): suffix', '1700000000150000', "
      "'1700000000160000', 1, 100);"
      "CREATE TABLE memscope_dump (\"ID\" INTEGER PRIMARY KEY, \"Event\" TEXT, "
      "\"Timestamp(ns)\" TEXT, \"Process Id\" INTEGER, \"Thread Id\" INTEGER, "
      "\"Call Stack(Python)\" TEXT);"
      "INSERT INTO memscope_dump VALUES (1, 'MALLOC', '1700000000200000', 100, 1, "
      "'stack.py(1): kept');"
      "INSERT INTO memscope_dump VALUES (2, 'MALLOC', '20146744074009552', 100, 1, "
      "'stack.py(2): wrapped');";
  char* message = nullptr;
  ASSERT_EQ(sqlite3_exec(db, sql.c_str(), nullptr, nullptr, &message), SQLITE_OK)
      << (message ? message : "");
  sqlite3_close(db);

  FlameReader reader(path, "memscope_dump");
  FlameRequest r;
  r.pid = 100;
  r.t0_ns = 1'700'000'000'000'000'000;
  r.t1_ns = r.t0_ns + 400'000'000;
  r.width_px = 1000;  // 400 us a pixel
  const FlameData d = read_all(reader, r);
  ASSERT_EQ(d.error, "");
  std::set<std::string> functions;
  for (const FlameSpan& span : d.spans) functions.insert(function_of(d, span));
  EXPECT_EQ(functions, (std::set<std::string>{"main", "kept"}));

  // A range of any width: nothing to overflow, and spans are still read.
  r.t0_ns = std::numeric_limits<int64_t>::min();
  r.t1_ns = std::numeric_limits<int64_t>::max();
  const FlameData all = reader.read(r);
  EXPECT_EQ(all.error, "");
  EXPECT_TRUE(all.has_trace);
}

void write_stack_recording(test::RecordingBuilder* b, const std::string& path, bool compact) {
  const std::string outer = "\nmain.py(30): train\nmain.py(50): <module>";
  b->malloc(10, 0x1000, 100, "", "model.py(7): forward" + outer);
  b->malloc(11, 0x2000, 100, "", "model.py(8): forward" + outer);  // another line, same call
  b->malloc(12, 0x3000, 100, "", "optim.py(3): step\nmain.py(31): train\nmain.py(50): <module>");
  b->malloc(13, 0x4000, 100);  // no stack: not a sample
  b->malloc(14, 0x5000, 100, "", "model.py(7): forward" + outer);
  b->malloc(15, 0x6000, 100, "", "data.py(2): load\nmain.py(50): <module>", false, 555);
  b->write(path, compact);
}

void expect_stack_spans(const test::RecordingBuilder& b, const FlameData& d) {
  EXPECT_EQ(d.source, FlameSource::kAllocationStacks);
  EXPECT_FALSE(d.has_trace);
  EXPECT_TRUE(d.has_stacks);
  EXPECT_EQ(d.samples, 5u);
  EXPECT_EQ(spans_of(d), (std::multiset<std::string>{"<module>@0", "train@1", "forward@2", "step@2",
                                                     "forward@2", "<module>@0", "load@1"}));
  for (const FlameSpan& s : d.spans) {
    if (s.thread_id != b.pid()) continue;
    if (function_of(d, s) == "<module>") {
      EXPECT_EQ(s.start_ns, b.at(10));
      EXPECT_GE(s.end_ns, b.at(14));
      EXPECT_EQ(s.samples, 4u);
    }
    if (function_of(d, s) == "forward" && s.start_ns == b.at(10)) {
      EXPECT_EQ(s.samples, 2u);
    }
  }
}

TEST(FlameReader, WithoutATraceTheAllocationsPythonStacksMakeTheChart) {
  test::TempDir dir;
  test::RecordingBuilder b;
  const std::string path = dir.file("stacks.db");
  write_stack_recording(&b, path, false);
  FlameReader reader(path, "memscope_dump");
  expect_stack_spans(b, read_all(reader, request(b, 0, 20)));
}

TEST(FlameReader, AllocationStacksOfACompactRecording) {
  test::TempDir dir;
  test::RecordingBuilder b;
  const std::string path = dir.file("compact.db");
  write_stack_recording(&b, path, true);
  FlameReader reader(path, "memscope_dump");
  expect_stack_spans(b, read_all(reader, request(b, 0, 20)));
}

TEST(FlameReader, TracedStretchesShowTheTraceAndTheRestTheStacks) {
  test::TempDir dir;
  test::RecordingBuilder b;
  const std::string stack = "model.py(7): forward\nmain.py(30): train\nmain.py(50): <module>";
  b.malloc(5, 0x1000, 100, "", stack);
  b.slice(10, 20, "eval.py(1): evaluate");
  b.slice(11, 19, "model.py(7): forward");
  b.malloc(15, 0x2000, 100, "", stack);  // inside the traced stretch: the trace says more
  b.malloc(25, 0x3000, 100, "", stack);
  const std::string path = dir.file("both.db");
  b.write(path);
  FlameReader reader(path, "memscope_dump");
  const FlameData d = read_all(reader, request(b, 0, 30));
  EXPECT_EQ(d.source, FlameSource::kTraceAndStacks);
  EXPECT_EQ(d.samples, 2u);
  // The samples before and after the traced stretch are not joined across it.
  EXPECT_EQ(spans_of(d),
            (std::multiset<std::string>{"evaluate@0", "forward@1", "<module>@0", "train@1",
                                        "forward@2", "<module>@0", "train@1", "forward@2"}));
  for (const FlameSpan& s : d.spans) {
    if (s.samples == 0) continue;
    EXPECT_TRUE(s.end_ns <= b.at(10) || s.start_ns >= b.at(20)) << s.start_ns - b.at(0);
  }
}

TEST(FlameReader, AllocationSamplesAreAtMostTwoAPixel) {
  test::TempDir dir;
  test::RecordingBuilder b;
  for (int i = 0; i < 20000; ++i) {
    b.malloc(
        i * 0.1, 0x10000 + uint64_t(i) * 64, 16, "",
        (i / 100) % 2 ? "a.py(1): f\nmain.py(2): <module>" : "b.py(1): g\nmain.py(2): <module>");
  }
  const std::string path = dir.file("many.db");
  b.write(path);
  FlameReader reader(path, "memscope_dump");
  FlameRequest r = request(b, 0, 2000, 100);
  r.max_spans = 150;
  const FlameData d = read_all(reader, r);
  EXPECT_LE(d.samples, 200u);
  EXPECT_GT(d.samples, 100u);
  EXPECT_LE(d.spans.size(), 150u);
  EXPECT_EQ(d.spans.front().depth, 0);  // <module>, the widest, kept
}

TEST(FlameReader, ARecordingWithNeitherSaysSo) {
  test::TempDir dir;
  test::RecordingBuilder b;
  b.malloc(1, 0x1000, 10);
  const std::string path = dir.file("plain.db");
  b.write(path);
  FlameReader reader(path, "memscope_dump");
  const FlameData d = read_all(reader, request(b, 0, 2));
  EXPECT_EQ(d.error, "");
  EXPECT_EQ(d.source, FlameSource::kNone);
  EXPECT_FALSE(d.has_trace);
  EXPECT_FALSE(d.has_stacks);
  EXPECT_TRUE(d.spans.empty());
}

TEST(FlameData, SearchCountsMatchesAndTheTimeTheyCoverOnce) {
  FlameData d;
  d.t0_ns = 0;
  d.t1_ns = 1000;
  d.functions = {{"m.py", 0, "main"}, {"r.py", 0, "Recurse"}, {"o.py", 0, "other"}};
  d.spans = {{0, 1000, 1, 0, 0, 1, 0},
             {100, 400, 1, 1, 1, 2, 0},
             {150, 300, 1, 2, 1, 3, 0},
             {600, 700, 1, 1, 2, 4, 0},
             {900, 1200, 2, 0, 1, 5, 0}};  // another thread; ends past the range
  const viewdata::FlameMatches m = viewdata::search_spans(d, "recur");
  EXPECT_EQ(m.spans, (std::vector<size_t>{1, 2, 4}));
  EXPECT_EQ(m.total_ns, 300 + 100);
  EXPECT_TRUE(viewdata::search_spans(d, "").spans.empty());
  EXPECT_TRUE(viewdata::search_spans(d, "nothing").spans.empty());
}

}  // namespace
}  // namespace memtap
