// Two hand-built runs compared: every difference with both values, its delta and percent,
// the largest change first, a headline naming who made the peak, the leak and the live
// bytes at the end, and runs that cannot be lined up said to be so.
#include "monitor/report/report_diff.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdio>
#include <string>

#include "monitor/report/report_diff_render.h"

namespace memtap {
namespace {

constexpr int64_t kMiB = 1024 * 1024;

BreakdownEntry entry(const std::string& key, int64_t bytes) {
  return {key, bytes, 1, 0};
}

DeviceReport device(uint32_t pid, int32_t dev, int64_t peak, int64_t at_end) {
  DeviceReport d;
  d.pid = pid;
  d.device = dev;
  d.curves.push_back({"Allocated", 1000, peak, at_end});
  d.peak.ts_ns = 1000;
  d.peak.bytes = peak;
  return d;
}

Report run(uint32_t pid, std::vector<DeviceReport> devices, const std::string& command = "") {
  Report r;
  r.source = "run" + std::to_string(pid) + ".db";
  r.format = "memscope_dump";
  RecordedProcess p;
  p.pid = pid;
  p.command_line = command;
  r.processes.push_back(p);
  r.devices = std::move(devices);
  return r;
}

const Change* find(const std::vector<Change>& list, const std::string& key) {
  for (const Change& c : list)
    if (c.key == key) return &c;
  return nullptr;
}

TEST(ReportDiff, BreakdownsGiveBothValuesTheDeltaAndPercentLargestChangeFirst) {
  DeviceReport b = device(10, 0, 100 * kMiB, 10 * kMiB);
  b.peak.by_owner = {entry("model", 60 * kMiB), entry("optimizer", 30 * kMiB),
                     entry("cache", 10 * kMiB)};
  DeviceReport n = device(20, 0, 120 * kMiB, 10 * kMiB);
  // model shrinks by more than optimizer grows: the shrink comes first; cache is gone and
  // activations are new.
  n.peak.by_owner = {entry("model", 10 * kMiB), entry("optimizer", 60 * kMiB),
                     entry("activations", 40 * kMiB)};
  const ReportDiff d = diff_reports(run(10, {b}), run(20, {n}));
  ASSERT_EQ(d.devices.size(), 1u);
  EXPECT_TRUE(d.lined_up);
  EXPECT_FALSE(d.by_rank);
  const std::vector<Change>& owners = d.devices[0].peak_by_owner;
  ASSERT_EQ(owners.size(), 4u);
  EXPECT_EQ(owners[0].key, "model");
  EXPECT_EQ(owners[0].base, 60.0 * kMiB);
  EXPECT_EQ(owners[0].now, 10.0 * kMiB);
  EXPECT_EQ(owners[0].delta, -50.0 * kMiB);
  EXPECT_NEAR(owners[0].percent, -83.333, 0.001);
  EXPECT_EQ(owners[0].status, "changed");
  EXPECT_EQ(owners[1].key, "activations");
  EXPECT_EQ(owners[1].status, "new");
  EXPECT_EQ(owners[1].base, 0);
  EXPECT_TRUE(std::isnan(owners[1].percent)) << "no percent of nothing";
  EXPECT_EQ(owners[2].key, "optimizer");
  EXPECT_EQ(owners[2].delta, 30.0 * kMiB);
  EXPECT_DOUBLE_EQ(owners[2].percent, 100);
  EXPECT_EQ(owners[3].key, "cache");
  EXPECT_EQ(owners[3].status, "vanished");
  EXPECT_EQ(owners[3].now, 0);

  ASSERT_EQ(d.devices[0].appeared.size(), 1u);
  EXPECT_EQ(d.devices[0].appeared[0].key, "activations");
  EXPECT_EQ(d.devices[0].appeared[0].kind, "owner");
  ASSERT_EQ(d.devices[0].vanished.size(), 1u);
  EXPECT_EQ(d.devices[0].vanished[0].key, "cache");
}

TEST(ReportDiff, TheHeadlineNamesThePeakAndWhoGrewItMostOnTheMostChangedDevice) {
  DeviceReport b0 = device(10, 0, 100 * kMiB, 0), b1 = device(10, 1, 100 * kMiB, 0);
  DeviceReport n0 = device(20, 0, 101 * kMiB, 0), n1 = device(20, 1, 300 * kMiB, 0);
  b1.peak.by_owner = {entry("model", 100 * kMiB)};
  n1.peak.by_owner = {entry("model", 90 * kMiB), entry("kv_cache", 210 * kMiB)};
  b1.peak.by_name = {entry("aten::mm", 100 * kMiB)};
  n1.peak.by_name = {entry("aten::mm", 300 * kMiB)};
  b1.peak.by_stack = {entry("", 100 * kMiB)};
  n1.peak.by_stack = {entry("", 300 * kMiB)};
  const ReportDiff d = diff_reports(run(10, {b0, b1}), run(20, {n0, n1}));
  ASSERT_EQ(d.devices.size(), 2u);
  EXPECT_EQ(d.devices[0].device, 1) << "the device that changed most comes first";
  ASSERT_FALSE(d.headline.empty());
  const Finding& f = d.headline[0];
  EXPECT_EQ(f.what, "peak");
  EXPECT_EQ(f.device, "process 1 (pid 10 / pid 20), device 1");
  EXPECT_EQ(f.change.delta, 200.0 * kMiB);
  EXPECT_DOUBLE_EQ(f.change.percent, 200);
  // Each breakdown's largest growth, and none for the unnamed stack.
  ASSERT_EQ(f.causes.size(), 2u);
  EXPECT_EQ(f.causes[0].kind, "owner");
  EXPECT_EQ(f.causes[0].change.key, "kv_cache");
  EXPECT_EQ(f.causes[1].kind, "name");
  EXPECT_EQ(f.causes[1].change.key, "aten::mm");
  EXPECT_EQ(finding_text(f),
            "peak +200.0 MiB (+200%) on process 1 (pid 10 / pid 20), device 1: owner kv_cache "
            "+210.0 MiB (new), name aten::mm +200.0 MiB (+200%)");
}

TEST(ReportDiff, ASmallWobbleOfThePeakStaysOutOfTheHeadline) {
  const ReportDiff d = diff_reports(run(10, {device(10, 0, 1000 * kMiB, 0)}),
                                    run(20, {device(20, 0, 1004 * kMiB, 0)}));
  EXPECT_TRUE(d.headline.empty());
  const Change* peak = find(d.devices[0].figures, "Allocated peak");
  ASSERT_NE(peak, nullptr) << "still in the figures";
  EXPECT_EQ(peak->delta, 4.0 * kMiB);
}

TEST(ReportDiff, LeakSuspectsAndLiveAtEndNameTheOwnerNameAndLine) {
  DeviceReport b = device(10, kHostDevice, 100 * kMiB, 20 * kMiB);
  DeviceReport n = device(20, kHostDevice, 500 * kMiB, 420 * kMiB);
  b.leaks.steps = n.leaks.steps = 10;
  n.leaks.suspects = {
      {"owner", "history", 40.0 * kMiB, 1, 400 * kMiB, 0, 0},
      {"stack", "train.py(31): remember\ntrain.py(64): main", 40.0 * kMiB, 1, 400 * kMiB, 0, 0}};
  b.leaks.alive_at_end_by_owner = {entry("", 20 * kMiB)};
  n.leaks.alive_at_end_by_owner = {entry("history", 400 * kMiB), entry("", 20 * kMiB)};
  n.leaks.alive_at_end_by_name = {entry("aten::full", 400 * kMiB)};
  const ReportDiff d = diff_reports(run(10, {b}), run(20, {n}));
  ASSERT_EQ(d.headline.size(), 3u);
  EXPECT_EQ(d.headline[1].what, "leak");
  ASSERT_EQ(d.headline[1].causes.size(), 2u);
  EXPECT_EQ(d.headline[1].causes[0].change.key, "history");
  EXPECT_EQ(d.headline[1].causes[0].change.unit, DiffUnit::kBytesPerStep);
  EXPECT_EQ(d.headline[1].causes[0].change.now, 40.0 * kMiB);
  EXPECT_EQ(d.headline[1].causes[1].kind, "stack");
  EXPECT_NE(finding_text(d.headline[1]).find("stack train.py(31): remember ... +40.0 MiB/step"),
            std::string::npos)
      << finding_text(d.headline[1]);
  EXPECT_EQ(d.headline[2].what, "live at end");
  EXPECT_EQ(d.headline[2].change.delta, 400.0 * kMiB);
  ASSERT_EQ(d.headline[2].causes.size(), 2u);
  EXPECT_EQ(d.headline[2].causes[0].change.key, "history");
  EXPECT_EQ(d.headline[2].causes[1].change.key, "aten::full");
  const Change* leak = find(d.devices[0].leak_by_owner, "history");
  ASSERT_NE(leak, nullptr);
  EXPECT_EQ(leak->status, "new");
  EXPECT_EQ(leak->base, 0) << "BASE has steps and no suspect: nothing grew there";
}

TEST(ReportDiff, WithoutSuspectsThereIsNoLeakHeadline) {
  DeviceReport b = device(10, kHostDevice, 100 * kMiB, 0);
  DeviceReport n = device(20, kHostDevice, 100 * kMiB, 0);
  b.leaks.steps = n.leaks.steps = 10;
  const ReportDiff d = diff_reports(run(10, {b}), run(20, {n}));
  EXPECT_TRUE(d.headline.empty());
  EXPECT_TRUE(d.devices[0].leak_by_owner.empty());
}

TEST(ReportDiff, StepsPairByNumberLargestChangeFirst) {
  DeviceReport b = device(10, 0, 100, 0), n = device(20, 0, 100, 0);
  b.leaks.steps = 3;
  n.leaks.steps = 4;
  for (int64_t s = 1; s <= 3; ++s) b.step_figures.push_back({s, s * 100, 10, 50, 10});
  for (int64_t s = 1; s <= 4; ++s) n.step_figures.push_back({s, s * 100, 10 * s, 50, 20 * s});
  const ReportDiff d = diff_reports(run(10, {b}), run(20, {n}));
  const std::vector<StepChange>& steps = d.devices[0].steps;
  ASSERT_EQ(steps.size(), 3u) << "step 4 is only in NEW";
  EXPECT_EQ(steps[0].step, 3);
  EXPECT_EQ(steps[0].end.base, 10);
  EXPECT_EQ(steps[0].end.now, 60);
  EXPECT_EQ(steps[0].end.delta, 50);
  EXPECT_EQ(steps[0].peak.delta, 0);
  EXPECT_EQ(steps[2].step, 1);
}

TEST(ReportDiff, RunsWithNothingInCommonAreSaidNotToLineUp) {
  Report base = run(10, {device(10, 0, 100, 0)});
  base.processes[0].rank = 0;
  Report now = run(20, {device(20, 0, 100, 0)});
  now.processes[0].rank = 1;
  const ReportDiff d = diff_reports(base, now);
  EXPECT_TRUE(d.by_rank);
  EXPECT_FALSE(d.lined_up);
  ASSERT_EQ(d.devices.size(), 2u);
  EXPECT_TRUE(d.devices[0].in_base && !d.devices[0].in_now);
  EXPECT_TRUE(!d.devices[1].in_base && d.devices[1].in_now);
  EXPECT_EQ(d.devices[0].label, "rank 0, device 0");
  const Change* peak = find(d.devices[1].figures, "Allocated peak");
  ASSERT_NE(peak, nullptr);
  EXPECT_EQ(peak->status, "new");
  EXPECT_FALSE(peak->in_base);
  ASSERT_FALSE(d.cautions.empty());
  EXPECT_EQ(d.cautions[0].rfind("the runs cannot be lined up", 0), 0u) << d.cautions[0];
  EXPECT_TRUE(d.headline.empty()) << "nothing paired, nothing compared";
}

TEST(ReportDiff, ProcessesPairedByOrderThatRanOtherCommandsAreACaution) {
  const ReportDiff d = diff_reports(run(10, {device(10, 0, 100, 0)}, "python a.py"),
                                    run(20, {device(20, 0, 100, 0)}, "python b.py"));
  ASSERT_EQ(d.cautions.size(), 1u);
  EXPECT_EQ(d.cautions[0], "process 1 ran 'python a.py' in BASE and 'python b.py' in NEW");
}

TEST(ReportDiff, AKeyMissingFromAFullListIsUnlistedNotNew) {
  DeviceReport b = device(10, 0, 100, 0), n = device(20, 0, 100, 0);
  b.peak.by_owner = {entry("a", 50), entry("b", 40)};
  n.peak.by_owner = {entry("a", 50), entry("c", 30)};
  DiffOptions o;
  o.listed = 2;  // both lists are as long as the reports list: more may lie below
  const ReportDiff d = diff_reports(run(10, {b}), run(20, {n}), o);
  const Change* c = find(d.devices[0].peak_by_owner, "c");
  ASSERT_NE(c, nullptr);
  EXPECT_EQ(c->status, "unlisted");
  EXPECT_FALSE(c->in_base);
  EXPECT_TRUE(d.devices[0].appeared.empty()) << "c may have been just below BASE's list";
}

TEST(ReportDiff, TopKeepsTheLargestChangesOfEachList) {
  DeviceReport b = device(10, 0, 100, 0), n = device(20, 0, 100, 0);
  for (int i = 1; i <= 5; ++i) n.peak.by_name.push_back(entry("op" + std::to_string(i), i));
  DiffOptions o;
  o.top = 2;
  const ReportDiff d = diff_reports(run(10, {b}), run(20, {n}), o);
  ASSERT_EQ(d.devices[0].peak_by_name.size(), 2u);
  EXPECT_EQ(d.devices[0].peak_by_name[0].key, "op5");
  EXPECT_EQ(d.devices[0].peak_by_name[1].key, "op4");
}

std::string text_of(const ReportDiff& d) {
  char* buf = nullptr;
  size_t len = 0;
  FILE* f = open_memstream(&buf, &len);
  diff_text(d, f);
  fclose(f);
  std::string s(buf, len);
  free(buf);
  return s;
}

TEST(ReportDiffRender, TextLeadsWithTheHeadlineAndShowsOnlyWhatChanged) {
  DeviceReport b = device(10, 0, 100 * kMiB, 0), n = device(20, 0, 150 * kMiB, 0);
  b.peak.by_owner = {entry("model", 100 * kMiB), entry("same", kMiB)};
  n.peak.by_owner = {entry("model", 150 * kMiB), entry("same", kMiB)};
  const std::string text = text_of(diff_reports(run(10, {b}), run(20, {n})));
  const size_t head = text.find("What changed most:\n  peak +50.0 MiB (+50%) on process 1");
  const size_t section = text.find("process 1 (pid 10 / pid 20), device 0 (in both)");
  ASSERT_NE(head, std::string::npos) << text;
  ASSERT_NE(section, std::string::npos) << text;
  EXPECT_LT(head, section);
  EXPECT_NE(text.find("100.0 MiB      150.0 MiB       +50.0 MiB      +50%  model\n"),
            std::string::npos)
      << text;
  EXPECT_EQ(text.find("  same\n"), std::string::npos) << "an unchanged owner is left out";
}

// Counts are said as the report says them, grouped by threes, a fall with its sign.
TEST(ReportDiffRender, CountsHaveTheirDigitsGrouped) {
  DeviceReport b = device(10, 0, 100 * kMiB, 0), n = device(20, 0, 100 * kMiB, 0);
  b.allocations = 1115244;
  n.allocations = 1068680;
  Report base = run(10, {b}), now = run(20, {n});
  base.events = 2184406;
  const std::string text = text_of(diff_reports(base, now));
  EXPECT_NE(text.find("BASE run10.db (memscope_dump, 2,184,406 events)\n"), std::string::npos)
      << text;
  EXPECT_NE(text.find("         1,115,244      1,068,680         -46,564     -4.2%  allocations\n"),
            std::string::npos)
      << text;
}

TEST(ReportDiffRender, IdenticalRunsAndRunsThatDoNotLineUpSaySo) {
  DeviceReport same = device(10, 0, 100 * kMiB, 0);
  same.peak.by_owner = {entry("model", 100 * kMiB)};
  const std::string identical = text_of(diff_reports(run(10, {same}), run(10, {same})));
  EXPECT_NE(identical.find("What changed most: nothing of note"), std::string::npos) << identical;
  EXPECT_NE(identical.find("device 0 (in both)\n  nothing changed\n"), std::string::npos)
      << identical;

  Report base = run(10, {device(10, 0, 100, 0)}), now = run(20, {device(20, 1, 100, 0)});
  const std::string apart = text_of(diff_reports(base, now));
  EXPECT_NE(apart.find("What changed most: nothing compared (the runs cannot be lined up)\n"),
            std::string::npos)
      << apart;
  EXPECT_NE(apart.find("  caution: the runs cannot be lined up: no process and device of BASE is "
                       "in NEW (1 device in BASE, 1 in NEW)"),
            std::string::npos)
      << apart;
  EXPECT_NE(apart.find("    process 1 (pid 10 / pid 20), device 0: only in BASE\n"),
            std::string::npos)
      << apart;
}

TEST(ReportDiffRender, JsonCarriesBothValuesDeltaPercentAndStatus) {
  DeviceReport b = device(10, 0, 100, 0), n = device(20, 0, 150, 0);
  n.peak.by_owner = {entry("model", 150)};
  const std::string json = diff_json(diff_reports(run(10, {b}), run(20, {n})));
  EXPECT_NE(json.find(R"("paired_by":"order","lined_up":true)"), std::string::npos) << json;
  EXPECT_NE(json.find(R"({"key":"Allocated peak","unit":"bytes","base":100,"new":150,)"
                      R"("delta":50,"percent":50.0,"status":"changed"})"),
            std::string::npos)
      << json;
  EXPECT_NE(json.find(R"("by_owner":[{"key":"model","unit":"bytes","base":0,"new":150,)"
                      R"("delta":150,"percent":null,"status":"new"}])"),
            std::string::npos)
      << json;
}

}  // namespace
}  // namespace memtap
