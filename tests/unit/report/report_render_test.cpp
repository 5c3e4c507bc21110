// Report rendering: JSON is valid and complete, text says what the recording could not
// tell instead of printing zeros.
#include "monitor/report/report_render.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <cstdio>

#include "monitor/report/json_writer.h"
#include "monitor/report/units.h"

namespace memtap {
namespace {

Report sample_report() {
  Report r;
  r.source = "run.db";
  r.format = "memscope_dump";
  r.events = 10;
  RecordedProcess p;
  p.pid = 42;
  p.hostname = "node\"a";
  p.command_line = "python train.py";
  r.processes.push_back(p);
  DeviceReport d;
  d.pid = 42;
  d.start_ns = 1000;
  d.curves.push_back({"Allocated", 3000, 4096, 1024});
  d.peak.ts_ns = 3000;
  d.peak.bytes = 4096;
  d.peak.by_owner.push_back({"leaks_mem", 4096, 1, 1.0});
  d.leaks.steps = 5;
  d.leaks.suspects.push_back({"owner", "leaks_mem", 41943040, 1, 209715200});
  r.devices.push_back(d);
  return r;
}

std::string text_of(const Report& r) {
  char* buf = nullptr;
  size_t len = 0;
  FILE* f = open_memstream(&buf, &len);
  report_text(r, f);
  fclose(f);
  std::string s(buf, len);
  free(buf);
  return s;
}

// The time to OOM in the units a person reads: not "0 s" for milliseconds, nor a count of
// seconds for hours.
TEST(ReportText, TimeToOomIsADurationForPeople) {
  Report r = sample_report();
  OomSection& o = r.devices[0].oom;
  o.sustained_growth = true;
  o.growth_bytes_per_s = 1 << 20;
  o.capacity_bytes = int64_t(4) << 30;
  const std::pair<double, const char*> cases[] = {
      {0.0029, "Time to OOM: 2.9 ms at +1.0 MiB/s (capacity 4.0 GiB)"},
      {200, "Time to OOM: 3 min 20 s at +1.0 MiB/s (capacity 4.0 GiB)"},
      {3720, "Time to OOM: 1 h 02 min at +1.0 MiB/s (capacity 4.0 GiB)"},
  };
  for (const auto& [seconds, line] : cases) {
    o.seconds_to_oom = seconds;
    const std::string text = text_of(r);
    EXPECT_NE(text.find(line), std::string::npos) << text;
  }
}

// Growth over a run's first seconds (imports, weights) is steady: the report gives its rate
// and where it would lead, not a time to OOM, and the JSON says it is too early.
TEST(ReportText, GrowthTooShortToForecastSaysSo) {
  Report r = sample_report();
  OomSection& o = r.devices[0].oom;
  o.sustained_growth = true;
  o.growth_bytes_per_s = 300 << 20;
  o.capacity_bytes = int64_t(24) << 30;
  o.too_early = true;
  o.seconds_at_rate = 80;
  r.devices[0].end_ns = r.devices[0].start_ns + 300'000'000;  // 0.3 s recorded
  const std::string text = text_of(r);
  EXPECT_NE(text.find("Time to OOM: too early to tell (+300.0 MiB/s over 300.0 ms recorded; "
                      "capacity 24.0 GiB would take 1 min 20 s at that rate)"),
            std::string::npos)
      << text;
  const std::string json = report_json(r);
  EXPECT_NE(json.find(R"("seconds_to_oom":null,"too_early":true,"seconds_at_rate":80)"),
            std::string::npos)
      << json;
}

// A real run's counts run to millions: "2184406 events" had to be read digit by digit. The
// text groups them by threes, as the window does; --json keeps plain numbers.
TEST(ReportText, LargeCountsHaveTheirDigitsGrouped) {
  EXPECT_EQ(count_text(0), "0");
  EXPECT_EQ(count_text(999), "999");
  EXPECT_EQ(count_text(1000), "1,000");
  EXPECT_EQ(count_text(327169), "327,169");
  EXPECT_EQ(count_text(1115244), "1,115,244");
  EXPECT_EQ(count_text(UINT64_MAX), "18,446,744,073,709,551,615");

  Report r = sample_report();
  r.events = 2184406;
  DeviceReport& d = r.devices[0];
  d.allocations = 1115244;
  d.frees = 1068680;
  d.peak.by_owner = {{"leaks_mem", 4000, 51, 0.9}, {"", 96, 327169, 0.1}};
  const std::string text = text_of(r);
  for (const char* part :
       {"(memscope_dump), 2,184,406 events\n", ": 1,115,244 allocations, 1,068,680 frees, ",
        "  90.0%       51 blocks  leaks_mem\n", "  10.0%  327,169 blocks  (none)\n"}) {
    EXPECT_NE(text.find(part), std::string::npos) << part << " in\n" << text;
  }
  const std::string json = report_json(r);
  EXPECT_NE(json.find(R"("events":2184406)"), std::string::npos) << json;
}

TEST(JsonWriter, EscapesAndPlacesCommas) {
  JsonWriter j;
  j.begin_object().key("a").value("x\"y\n").key("b").begin_array().value(int64_t(1)).value(2.5);
  j.null().end_array().key("c").value(true).end_object();
  EXPECT_EQ(j.str(), R"({"a":"x\"y\n","b":[1,2.5,null],"c":true})");
}

// Numbers read back as they were; keys stay in the order written, nested too; bytes that
// are not UTF-8 (a path from another machine) do not make the report fail.
TEST(JsonWriter, KeepsNumbersWholeKeyOrderAndSurvivesBadText) {
  JsonWriter j;
  j.begin_object().key("z").value(41943040.5).key("a").value(0.1);
  j.key("nan").value(std::nan("")).key("list").begin_array();
  j.begin_object().key("y").value(int64_t(-3)).key("b").value(uint64_t(1) << 63).end_object();
  j.end_array().key("bad").value(std::string_view("ok\xff\xfe")).end_object();
  EXPECT_EQ(j.str(),
            "{\"z\":41943040.5,\"a\":0.1,\"nan\":null,\"list\":[{\"y\":-3,"
            "\"b\":9223372036854775808}],\"bad\":\"ok\xef\xbf\xbd\xef\xbf\xbd\"}");
}

TEST(ReportRender, JsonCarriesEveryFigure) {
  const std::string json = report_json(sample_report());
  EXPECT_NE(json.find(R"("hostname":"node\"a")"), std::string::npos) << json;
  EXPECT_NE(json.find(R"("bytes_per_step":41943040.0)"), std::string::npos) << json;
  EXPECT_NE(json.find(R"("peak_bytes":4096)"), std::string::npos) << json;
  EXPECT_NE(json.find(R"("seconds_to_oom":null)"), std::string::npos) << json;
  EXPECT_NE(json.find(R"("largest_free_gap":null)"), std::string::npos) << json;
}

// Who holds what is live at the end by owner and by operator, and each step's figures, which
// `memtap diff` and `memtap check` use, are in --json too, for scripts.
TEST(ReportRender, JsonSaysWhoHoldsWhatIsLiveAtTheEndAndEachStep) {
  Report r = sample_report();
  r.devices[0].leaks.alive_at_end_by_owner = {{"leaks_mem", 3 << 20, 3, 0.75}};
  r.devices[0].leaks.alive_at_end_by_name = {{"aten::empty", 1 << 20, 1, 0.25}};
  r.devices[0].step_figures = {{1, 1000, 0, 5 << 20, 1 << 20},
                               {2, 2000, 1 << 20, 6 << 20, 2 << 20}};
  const std::string json = report_json(r);
  EXPECT_NE(json.find(R"("alive_at_end_by_owner":[{"key":"leaks_mem","bytes":3145728)"),
            std::string::npos)
      << json;
  EXPECT_NE(json.find(R"("alive_at_end_by_name":[{"key":"aten::empty","bytes":1048576)"),
            std::string::npos)
      << json;
  EXPECT_NE(json.find(R"("step_figures":[{"step":1,"start_ns":1000,"start_bytes":0,)"
                      R"("peak_bytes":5242880,"end_bytes":1048576},{"step":2,)"),
            std::string::npos)
      << json;
}

TEST(ReportRender, TextNamesTheLeakAndSaysWhatIsUnknown) {
  const std::string text = text_of(sample_report());
  EXPECT_NE(text.find("owner leaks_mem: +40.0 MiB per step since step 1"), std::string::npos)
      << text;
  EXPECT_NE(text.find("Time to OOM: no sustained growth"), std::string::npos) << text;
  EXPECT_EQ(text.find("Inefficient blocks"), std::string::npos)
      << "no access events: no zeros printed as findings\n"
      << text;
}

// Without steps the leak line lists what is live at the end with the session's growth; when
// nothing is, it says so rather than print a trend of memory that was all freed.
TEST(ReportRender, WithoutStepsTheLeakLineSaysWhatIsLiveAtTheEnd) {
  Report r = sample_report();
  LeakSection& l = r.devices[0].leaks;
  l = LeakSection{};
  l.trend_bytes_per_s = -27787264.0;
  std::string text = text_of(r);
  EXPECT_NE(text.find("    Leaks: no step markers; nothing live at the end\n"), std::string::npos)
      << text;
  EXPECT_EQ(text.find("over the session"), std::string::npos) << text;

  l.trend_bytes_per_s = 1048576.0;
  l.alive_at_end_by_owner.push_back({"cache", 2097152, 2, 1.0});
  text = text_of(r);
  EXPECT_NE(text.find("Leaks: no step markers; live at the end, growth +1.0 MiB/s over the "
                      "session\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("cache"), std::string::npos) << text;

  // Live bytes fell over the session (a snapshot's trace that frees more than it allocates):
  // what is live at the end, and no "growth" below zero.
  l.trend_bytes_per_s = -43701403648.0;
  text = text_of(r);
  EXPECT_NE(text.find("    Leaks: no step markers; live at the end\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("at the end, growth"), std::string::npos) << text;
}

// A device known only by samples of its pool's figures (a profiler's memory_record) has no
// peak section: the pool line points at none, as it does at the driver's blocks' when some
// were recorded.
TEST(ReportRender, APoolOfSamplesOnlyPointsAtAPeakSectionOnlyWhenThereIsOne) {
  Report r = sample_report();
  DeviceReport& d = r.devices[0];
  d.device = 0;
  d.pool.source = "samples";
  d.pool.snapshots = 3;
  d.allocations = 0;
  std::string text = text_of(r);
  EXPECT_NE(text.find("no blocks: Allocated and Reserved follow the samples, Active is "
                      "Allocated\n"),
            std::string::npos)
      << text;
  d.allocations = 2;
  text = text_of(r);
  EXPECT_NE(text.find("Active is Allocated, the peak below is of the driver's blocks (HAL)\n"),
            std::string::npos)
      << text;
}

// Each owner is followed by the stacks that hold its bytes, in text and in --json; the
// separate list by stack is left to recordings that name no owner.
TEST(ReportRender, EachOwnerIsLinkedToItsTopStacks) {
  Report r = sample_report();
  DeviceReport& d = r.devices[0];
  // Shares of the whole, as --json has them; the text says which part of the owner each is.
  d.peak.by_owner[0].top_stacks = {{"train.py(20): bwd\ntrain.py(3): main", 3072, 1, 0.3},
                                   {"train.py(10): fwd", 1024, 2, 0.1}};
  d.peak.by_stack = {{"train.py(20): bwd\ntrain.py(3): main", 3072, 1, 0.75}};
  d.leaks.suspects[0].top_stacks = {{"log.py(9): keep", 209715200, 5, 1.0}};
  d.leaks.suspects.push_back({"stack", "log.py(9): keep", 41943040, 1, 209715200});
  const std::string text = text_of(r);
  EXPECT_NE(
      text.find("      by owner:\n"
                "           4.0 KiB  100.0%        1 blocks  leaks_mem\n"
                "          from    3.0 KiB   75.0% of it        1 blocks  train.py(20): bwd ...\n"
                "          from    1.0 KiB   25.0% of it        2 blocks  train.py(10): fwd\n"),
      std::string::npos)
      << text;
  EXPECT_EQ(text.find("by stack:"), std::string::npos) << "the owners name the stacks\n" << text;
  EXPECT_NE(text.find("      owner leaks_mem: +40.0 MiB per step since step 1 (200.0 MiB live)\n"
                      "        from  200.0 MiB  100.0% of it        5 blocks  log.py(9): keep\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("stack log.py(9): keep:"), std::string::npos)
      << "the stack suspect is the owner's, shown under it\n"
      << text;

  const std::string json = report_json(r);
  EXPECT_NE(json.find(R"("by_owner":[{"key":"leaks_mem","bytes":4096,"blocks":1,"share":1.0,)"
                      R"("top_stacks":[{"key":"train.py(20): bwd\ntrain.py(3): main",)"
                      R"("bytes":3072,"blocks":1,"share":0.3},{"key":"train.py(10): fwd",)"),
            std::string::npos)
      << json;
  EXPECT_NE(json.find(R"("by_stack":[{"key":"train.py(20): bwd\ntrain.py(3): main")"),
            std::string::npos)
      << "scripts still find the stacks on their own\n"
      << json;
  EXPECT_NE(json.find(R"("what":"owner","key":"leaks_mem",)"), std::string::npos) << json;
  EXPECT_NE(json.find(R"("top_stacks":[{"key":"log.py(9): keep","bytes":209715200,"blocks":5,)"),
            std::string::npos)
      << json;
  EXPECT_NE(json.find(R"("what":"stack","key":"log.py(9): keep",)"), std::string::npos) << json;
}

// A recording without stacks gives each owner one unnamed stack: no "from" line says so;
// beside named stacks the unnamed share is said.
TEST(ReportRender, AnOwnerWhoseBlocksHaveNoStacksHasNoFromLine) {
  Report r = sample_report();
  DeviceReport& d = r.devices[0];
  d.peak.by_owner = {{"leaks_mem", 4096, 2, 1.0}};
  d.peak.by_owner[0].top_stacks = {{"", 4096, 2, 1.0}};
  std::string text = text_of(r);
  EXPECT_NE(text.find("leaks_mem\n"), std::string::npos) << text;
  EXPECT_EQ(text.find(" from "), std::string::npos) << text;

  d.peak.by_owner[0].top_stacks = {{"train.py(3): f", 3072, 1, 0.75}, {"", 1024, 1, 0.25}};
  text = text_of(r);
  EXPECT_NE(text.find("of it        1 blocks  train.py(3): f\n"), std::string::npos) << text;
  EXPECT_NE(text.find("of it        1 blocks  (none)\n"), std::string::npos) << text;
}

// Without owners, the stacks are all there is: the list by stack stays.
TEST(ReportRender, WithoutOwnersTheStacksAreListedOnTheirOwn) {
  Report r = sample_report();
  DeviceReport& d = r.devices[0];
  d.peak.by_owner = {{"", 4096, 1, 1.0}};
  d.peak.by_stack = {{"train.py(20): bwd", 4096, 1, 1.0}};
  const std::string text = text_of(r);
  EXPECT_NE(text.find("      by stack:\n"), std::string::npos) << text;
  EXPECT_EQ(text.find("by owner:"), std::string::npos) << text;
}

// Dropped in the agent, lost on the way, and gone to an earlier monitor are three different
// things, each said with its own name, in text and JSON.
TEST(ReportRender, EachProcessSaysWhatItsEventsMissedAndWhatWentElsewhere) {
  Report r = sample_report();
  r.processes[0].events_dropped = 5;
  r.processes[0].events_lost = 12;
  r.processes[0].events_sent_before = 3400;
  RecordedProcess quiet;
  quiet.pid = 43;
  quiet.events_sent_before = 7;
  r.processes.push_back(quiet);
  const std::string text = text_of(r);
  EXPECT_NE(text.find("python train.py (5 events dropped, 12 lost on the way; 3,400 sent to an "
                      "earlier monitor before this recording)\n"),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("process 43 (7 sent to an earlier monitor before this recording)\n"),
            std::string::npos)
      << text;
  const std::string json = report_json(r);
  EXPECT_NE(json.find(R"("events_dropped":5,"events_lost":12,"events_sent_before":3400)"),
            std::string::npos)
      << json;

  r.processes[0].events_dropped = 0;
  EXPECT_NE(text_of(r).find("python train.py (12 events lost on the way; 3,400 sent"),
            std::string::npos)
      << text_of(r);
}

// A process the live monitor stopped waiting for says so on its line, and in --json.
TEST(ReportRender, AStalledProcessSaysSo) {
  Report r = sample_report();
  EXPECT_EQ(text_of(r).find("stalled"), std::string::npos);
  EXPECT_NE(report_json(r).find(R"("stalls":0)"), std::string::npos);
  r.processes[0].stalls = 2;
  const std::string text = text_of(r);
  EXPECT_NE(text.find("process 42 on node\"a: python train.py; stalled 2 times: the recording "
                      "went on without it, and what it sent later came late\n"),
            std::string::npos)
      << text;
  EXPECT_NE(report_json(r).find(R"("stalls":2)"), std::string::npos);
  EXPECT_EQ(stalled_text(1),
            "stalled once: the recording went on without it, and what it sent "
            "later came late");
}

}  // namespace
}  // namespace memtap
