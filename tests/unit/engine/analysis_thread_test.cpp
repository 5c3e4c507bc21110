// AnalysisThread: rows and strings queued from another thread, in small batches against a
// small bound (so the producer waits), give exactly the report of an Analyzer fed directly.
#include "monitor/engine/analysis_thread.h"

#include <gtest/gtest.h>
#include <time.h>

#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "common/cpu_share.h"
#include "monitor/report/report_render.h"

namespace memtap {
namespace {

// Ten steps of a leaking owner ("model@cache", string 2) beside blocks that come and go
// (owner "model", string 1); two threads.
std::vector<DumpRow> training_rows() {
  std::vector<DumpRow> rows;
  int64_t t = 1'800'000'000'000'000'000;
  uint64_t id = 0;
  for (uint64_t step = 1; step <= 10; ++step) {
    DumpRow s;
    s.event = DumpEvent::kSystem;
    s.event_type = DumpEventType::kStep;
    s.step = step;
    s.timestamp_ns = t += 1000;
    s.process_id = s.thread_id = 100;
    rows.push_back(s);
    for (uint64_t i = 0; i < 500; ++i) {
      DumpRow m;
      m.event = DumpEvent::kMalloc;
      m.timestamp_ns = t += 100;
      m.process_id = 100;
      m.thread_id = 100 + uint32_t(i % 2);
      m.ptr = 0x10000000 + (step * 1000 + i) * 4096;
      m.size_bytes = 1024 + i;
      m.allocation_id = ++id;
      m.owner = i % 10 == 0 ? 2 : 1;
      rows.push_back(m);
      if (m.owner == 1) {
        DumpRow f = m;
        f.event = DumpEvent::kFree;
        f.timestamp_ns = t += 50;
        rows.push_back(f);
      }
    }
  }
  return rows;
}

std::vector<RecordedProcess> process_100() {
  RecordedProcess p;
  p.pid = 100;
  return {p};
}

std::string text_of(const Report& report) {
  char* data = nullptr;
  size_t size = 0;
  FILE* out = open_memstream(&data, &size);
  report_text(report, out);
  std::fclose(out);
  std::string text(data, size);
  std::free(data);
  return text;
}

TEST(AnalysisThread, QueuedRowsReportAsAnAnalyzerFedDirectly) {
  const std::vector<DumpRow> rows = training_rows();
  const std::vector<RecordedProcess> processes = process_100();

  StringTable strings;
  RowStrings row_strings(&strings);
  row_strings.add(1, "model");
  row_strings.add(2, "model@cache");
  Analyzer direct(&strings);
  std::vector<MemEvent> events;
  append_events(rows.data(), rows.size(), row_strings, &events);
  direct.add(events.data(), events.size());
  const std::string expected = text_of(direct.report(processes));
  ASSERT_NE(expected.find("model@cache"), std::string::npos) << expected;

  AnalysisThread threaded(AnalyzerOptions{}, 300);  // a bound smaller than the rows: it waits
  threaded.define_string(1, "model");
  threaded.define_string(2, "model@cache");
  for (size_t at = 0; at < rows.size(); at += 97) {
    threaded.add_rows(&rows[at], std::min<size_t>(97, rows.size() - at));
  }
  EXPECT_EQ(text_of(threaded.drained().report(processes)), expected);
  EXPECT_EQ(threaded.rows_analysed(), rows.size());
}

// A string defined between two batches reaches the rows after it, not before.
TEST(AnalysisThread, AStringDefinedBetweenBatchesNamesTheRowsAfterIt) {
  std::vector<DumpRow> rows = training_rows();
  AnalysisThread threaded;
  threaded.define_string(1, "model");
  const size_t half = rows.size() / 2;
  threaded.add_rows(rows.data(), half);
  threaded.define_string(2, "model@cache");
  threaded.add_rows(rows.data() + half, rows.size() - half);
  const Report report = threaded.drained().report(process_100());
  EXPECT_NE(text_of(report).find("model@cache"), std::string::npos);
  EXPECT_EQ(threaded.rows_analysed(), rows.size());
}

TEST(AnalysisThread, ABatchLargerThanTheBoundStillGoesIn) {
  const std::vector<DumpRow> rows = training_rows();
  AnalysisThread threaded(AnalyzerOptions{}, 10);
  threaded.add_rows(rows.data(), rows.size());
  threaded.add_rows(rows.data(), 5);
  EXPECT_EQ(threaded.drained().events(), rows.size() + 5);
}

// The engine paces itself behind the program (common/cpu_share.h), but not while the
// receiving waits on it for room: pacing it then held the whole pipeline at its share, and
// the live view showed nothing until the program ended.
TEST(AnalysisThread, DoesNotPaceItselfWhileTheProducerWaitsForRoom) {
  const std::vector<DumpRow> rows = training_rows();
  auto share = std::make_shared<CpuShare>();
  share->limited = true;
  share->permille = 100;  // a tenth of a core, on cores said to be busy
  share->cores_busy = [] { return true; };
  AnalysisThread threaded(AnalyzerOptions{}, 10, {}, share);
  // The pacer's accounting starts at the first chunk after the limit.
  threaded.add_rows(rows.data(), 10);
  threaded.drained();
  // Runs on the analysis thread once the producer below waits, and overdraws its share
  // there (the pacer counts the thread's CPU, queries included): the next chunk's pace()
  // would sleep ~0.1 s for every 10 ms overdrawn.
  threaded.post([&](const Analyzer&, const StringTable&) {
    while (!threaded.producer_waiting()) {
    }
    timespec start{}, now{};
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &start);
    do {
      clock_gettime(CLOCK_THREAD_CPUTIME_ID, &now);
    } while ((now.tv_sec - start.tv_sec) * 1'000'000'000LL + (now.tv_nsec - start.tv_nsec) <
             60'000'000);
  });
  threaded.add_rows(rows.data() + 10, 10);  // fills the queue
  threaded.add_rows(rows.data() + 20, 10);  // waits until those ten are analysed
  EXPECT_EQ(threaded.paced_waits(), 0u);
  share->limited = false;  // the program ended: the rest is not paced
  threaded.drained();
  EXPECT_EQ(threaded.rows_analysed(), 30u);
}

// While the receiving waits on the analyses for room, the programs' newer events wait
// unreceived: the lag is then measured against the clock, not the newest event received,
// unless every program has ended.
TEST(AnalysisThread, WhileTheReceivingWaitsTheLagRunsToTheClock) {
  const std::vector<DumpRow> rows = training_rows();
  AnalysisThread threaded(AnalyzerOptions{}, 10);
  EXPECT_EQ(threaded.lag_ns(123, 456, true), 0) << "nothing analysed yet";
  threaded.add_rows(rows.data(), 10);
  threaded.drained();
  const int64_t analysed = threaded.analysed_until_ns();
  ASSERT_NE(analysed, 0);
  // Not held back: behind the newest event received only.
  EXPECT_EQ(threaded.lag_ns(analysed + 5'000'000, analysed + 9'000'000'000, true), 5'000'000);
  int64_t held = -1, ended = -1;
  threaded.post([&](const Analyzer&, const StringTable&) {
    while (!threaded.producer_waiting()) {
    }
    held = threaded.lag_ns(analysed + 5'000'000, analysed + 9'000'000'000, true);
    // Every program said Bye: all they sent was received, nothing waits elsewhere.
    ended = threaded.lag_ns(analysed + 5'000'000, analysed + 9'000'000'000, false);
  });
  threaded.add_rows(rows.data() + 10, 10);  // fills the queue
  threaded.add_rows(rows.data() + 20, 10);  // waits until those ten are analysed
  EXPECT_EQ(held, 9'000'000'000);
  EXPECT_EQ(ended, 5'000'000);
  threaded.drained();
}

}  // namespace
}  // namespace memtap
