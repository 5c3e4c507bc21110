// `memtap check`'s thresholds on hand-built reports: each holds at its limit and breaks
// above it, on each device alone, naming who holds the memory; what a recording lacks is a
// warning, and so is a threshold it cannot answer.
#include "monitor/report/report_check.h"

#include <gtest/gtest.h>

namespace memtap {
namespace {

constexpr int64_t kMiB = 1 << 20;

DeviceReport device(uint32_t pid, int32_t id) {
  DeviceReport d;
  d.pid = pid;
  d.device = id;
  d.start_ns = 1'000'000'000;
  d.origin_ns = d.start_ns;
  d.end_ns = 5'000'000'000;
  return d;
}

BreakdownEntry entry(std::string key, int64_t bytes, double share) {
  return {std::move(key), bytes, 1, share};
}

Report one_device(const DeviceReport& d) {
  Report r;
  RecordedProcess p;
  p.pid = d.pid;
  r.processes.push_back(p);
  r.devices.push_back(d);
  return r;
}

// The report of a device whose peak is `peak` with the owners given.
Report peak_of(int64_t peak, std::vector<BreakdownEntry> owners) {
  DeviceReport d = device(10, 0);
  d.peak.ts_ns = 3'500'000'000;
  d.peak.bytes = peak;
  d.peak.by_owner = std::move(owners);
  return one_device(d);
}

TEST(ReportCheck, MaxPeakHoldsAtTheLimitAndNamesTheLargestOwnerAbove) {
  Thresholds t;
  t.max_peak_bytes = 100 * kMiB;
  const Report r =
      peak_of(120 * kMiB, {entry("model@forward", 90 * kMiB, 0.75), entry("", 30 * kMiB, 0.25)});
  const CheckResult result = check_report(r, nullptr, t);
  ASSERT_EQ(result.violations.size(), 1u);
  const Violation& v = result.violations[0];
  EXPECT_EQ(v.check, "max-peak");
  EXPECT_EQ(v.where, "pid 10, device 0");
  EXPECT_EQ(v.text,
            "peak 120.0 MiB at +2.500 s is above --max-peak 100.0 MiB; largest at the peak: "
            "owner model@forward (90.0 MiB, 75% of the peak)");
  EXPECT_TRUE(result.warnings.empty());

  t.max_peak_bytes = 120 * kMiB;
  EXPECT_TRUE(check_report(r, nullptr, t).violations.empty()) << "the limit itself is allowed";
}

TEST(ReportCheck, AnUnnamedLargestOwnerPassesToTheOperatorThenTheStackThenTheScopes) {
  Thresholds t;
  t.max_peak_bytes = kMiB;
  Report r = peak_of(8 * kMiB, {entry("", 7 * kMiB, 0.875), entry("small", kMiB, 0.125)});
  DeviceReport& d = r.devices[0];
  d.peak.by_name = {entry("aten::mm", 6 * kMiB, 0.75)};
  d.peak.by_stack = {entry("train.py(12): step\nrun.py(3): main", 5 * kMiB, 0.625)};
  auto text = [&] { return check_report(r, nullptr, t).violations.at(0).text; };
  EXPECT_NE(text().find("largest at the peak: operator aten::mm (6.0 MiB, 75% of the peak)"),
            std::string::npos)
      << text();
  d.peak.by_name = {entry("", 8 * kMiB, 1)};
  EXPECT_NE(text().find("largest at the peak: stack train.py(12): step ... (5.0 MiB"),
            std::string::npos)
      << text();
  d.peak.by_stack.clear();
  d.scopes = {{"operator", "aten.mse_loss", 2, 32 * kMiB, 32 * kMiB, 6 * kMiB},
              {"operator", "aten.add", 2, kMiB, kMiB, kMiB}};
  EXPECT_NE(text().find("no owner, operator or stack recorded at the peak; largest operator: "
                        "aten.mse_loss (up to 6.0 MiB live inside it)"),
            std::string::npos)
      << text();
}

TEST(ReportCheck, LeakPerStepNamesTheOwnerSuspect) {
  DeviceReport d = device(10, kHostDevice);
  d.leaks.steps = 8;
  d.leaks.suspects = {{"stack", "", 41.0 * kMiB, 1, 300 * kMiB, 0, 0},
                      {"owner", "leaks_mem", 40.0 * kMiB, 1, 280 * kMiB, 0, 0},
                      {"owner", "cache", 1.0 * kMiB, 3, 5 * kMiB, 0, 0}};
  const Report r = one_device(d);
  Thresholds t;
  t.max_leak_per_step_bytes = 41 * kMiB;
  EXPECT_TRUE(check_report(r, nullptr, t).violations.empty());
  t.max_leak_per_step_bytes = 2 * kMiB;
  const CheckResult result = check_report(r, nullptr, t);
  ASSERT_EQ(result.violations.size(), 1u);
  EXPECT_EQ(result.violations[0].check, "max-leak-per-step");
  EXPECT_EQ(result.violations[0].where, "pid 10, host");
  EXPECT_EQ(result.violations[0].text,
            "leaks 41.0 MiB per step over 8 steps, above --max-leak-per-step 2.0 MiB; leak "
            "suspect: owner leaks_mem, +40.0 MiB per step since step 1 (280.0 MiB live at the "
            "last step)");
}

TEST(ReportCheck, LeakPerStepWithoutStepMarkersIsAWarningNotAPass) {
  DeviceReport d = device(10, kHostDevice);
  d.leaks.steps = 0;
  Thresholds t;
  t.max_leak_per_step_bytes = kMiB;
  const CheckResult result = check_report(one_device(d), nullptr, t);
  EXPECT_TRUE(result.violations.empty());
  ASSERT_EQ(result.warnings.size(), 1u);
  EXPECT_NE(result.warnings[0].find("--max-leak-per-step not checked: no step markers"),
            std::string::npos);
}

TEST(ReportCheck, GrowthIsWhatAllocatedEndsAtAndNamesWhatIsLiveThen) {
  DeviceReport d = device(10, kHostDevice);
  d.curves = {{"Allocated", 2'000'000'000, 50 * kMiB, 12 * kMiB},
              {"Reserved", 2'000'000'000, 80 * kMiB, 70 * kMiB}};
  d.leaks.alive_at_end_by_owner = {entry("history", 9 * kMiB, 0.75), entry("", 3 * kMiB, 0.25)};
  const Report r = one_device(d);
  Thresholds t;
  t.max_growth_bytes = 12 * kMiB;
  EXPECT_TRUE(check_report(r, nullptr, t).violations.empty());
  t.max_growth_bytes = 10 * kMiB;
  const CheckResult result = check_report(r, nullptr, t);
  ASSERT_EQ(result.violations.size(), 1u);
  EXPECT_EQ(result.violations[0].check, "max-growth");
  EXPECT_EQ(result.violations[0].text,
            "grew 12.0 MiB (live at the end minus at the start), above --max-growth 10.0 MiB; "
            "largest live at the end: owner history (9.0 MiB, 75% of what is live)");
}

TEST(ReportCheck, FragmentationIsTheUnusedShareOfReservedAtTheWorstMoment) {
  DeviceReport d = device(10, 0);
  d.fragmentation = {2'000'000'000, 100 * kMiB, 60 * kMiB, 8 * kMiB, 0};
  const Report r = one_device(d);
  Thresholds t;
  t.max_fragmentation_pct = 40;
  EXPECT_TRUE(check_report(r, nullptr, t).violations.empty());
  t.max_fragmentation_pct = 25.5;
  const CheckResult result = check_report(r, nullptr, t);
  ASSERT_EQ(result.violations.size(), 1u);
  EXPECT_EQ(result.violations[0].text,
            "fragmentation 40.0% at +1.000 s (reserved 100.0 MiB, allocated 60.0 MiB, largest "
            "free gap 8.0 MiB) is above --max-fragmentation 25.5%");
}

// The pool's largest free gap, measured at another instant than the curves' widest gap,
// says when.
TEST(ReportCheck, ALargestFreeGapOfAnotherMomentSaysWhen) {
  DeviceReport d = device(10, 0);
  d.fragmentation = {2'000'000'000, 100 * kMiB, 60 * kMiB, 8 * kMiB, 0, 2'500'000'000};
  Thresholds t;
  t.max_fragmentation_pct = 25.5;
  const CheckResult result = check_report(one_device(d), nullptr, t);
  ASSERT_EQ(result.violations.size(), 1u);
  EXPECT_EQ(result.violations[0].text,
            "fragmentation 40.0% at +1.000 s (reserved 100.0 MiB, allocated 60.0 MiB, largest "
            "free gap 8.0 MiB (at +1.500 s)) is above --max-fragmentation 25.5%");
}

TEST(ReportCheck, AnOomNamesTheFailedRequestAndTheLargestLiveBlocksOwner) {
  DeviceReport d = device(10, 0);
  Thresholds t;
  t.no_oom = true;
  EXPECT_TRUE(check_report(one_device(d), nullptr, t).violations.empty());
  d.oom_count = 3;
  OomEntry o;
  o.ts_ns = 1'250'000'000;
  o.api = "cudaMalloc";
  o.requested_bytes = 193 * kMiB;
  o.top = {{0x1000, 64 * kMiB, 7, "activations", "cudaMalloc", "", ""},
           {0x2000, 2 * kMiB, 8, "weights", "cudaMalloc", "", ""}};
  d.ooms = {o};
  const CheckResult result = check_report(one_device(d), nullptr, t);
  ASSERT_EQ(result.violations.size(), 1u);
  EXPECT_EQ(result.violations[0].check, "no-oom");
  EXPECT_EQ(result.violations[0].text,
            "3 OOMs, the first at +250.0 ms: cudaMalloc of 193.0 MiB failed; largest live block "
            "then: 64.0 MiB, owner activations, cudaMalloc (--no-oom)");
}

TEST(ReportCheck, EachDeviceIsCheckedAloneAndDeviceLimitsEveryThreshold) {
  Report r;
  for (uint32_t pid : {10u, 11u}) {
    RecordedProcess p;
    p.pid = pid;
    p.rank = int32_t(pid - 10);
    r.processes.push_back(p);
    for (int32_t id : {kHostDevice, 0}) {
      DeviceReport d = device(pid, id);
      d.peak.bytes = 60 * kMiB;  // the two together would be above the limit: not summed
      d.oom_count = id == kHostDevice ? 0 : 1;
      r.devices.push_back(d);
    }
  }
  r.devices[3].peak.bytes = 200 * kMiB;
  Thresholds t;
  t.max_peak_bytes = 100 * kMiB;
  t.no_oom = true;
  CheckResult result = check_report(r, nullptr, t);
  ASSERT_EQ(result.violations.size(), 3u);
  EXPECT_EQ(result.violations[0].check, "no-oom");
  EXPECT_EQ(result.violations[0].where, "pid 10 (rank 0), device 0");
  EXPECT_EQ(result.violations[1].check, "max-peak");
  EXPECT_EQ(result.violations[1].where, "pid 11 (rank 1), device 0");

  t.device = kHostDevice;
  EXPECT_TRUE(has_checked_device(r, t));
  EXPECT_TRUE(check_report(r, nullptr, t).violations.empty()) << "the OOMs are on device 0";
  t.device = 3;
  EXPECT_FALSE(has_checked_device(r, t));
}

TEST(ReportCheck, PeakIncreasePairsTheRunsAndNamesWhatGrewMost) {
  Report base =
      peak_of(100 * kMiB, {entry("weights", 60 * kMiB, 0.6), entry("acts", 40 * kMiB, 0.4)});
  Report now =
      peak_of(125 * kMiB, {entry("weights", 60 * kMiB, 0.48), entry("acts", 45 * kMiB, 0.36),
                           entry("history", 20 * kMiB, 0.16)});
  now.processes[0].pid = now.devices[0].pid = 20;
  DeviceReport extra = device(20, 1);  // only in the new run
  extra.peak.bytes = kMiB;
  now.devices.push_back(extra);
  DeviceReport gone = device(10, 2);  // only in the baseline: nothing to hold against
  gone.peak.bytes = 500 * kMiB;
  base.devices.push_back(gone);

  Thresholds t;
  t.max_peak_increase_pct = 25;
  CheckResult result = check_report(now, &base, t);
  ASSERT_EQ(result.violations.size(), 1u);
  EXPECT_EQ(result.violations[0].where, "process 1 (pid 10 / pid 20), device 1");
  EXPECT_EQ(result.violations[0].text,
            "peak 1.0 MiB, a device the baseline lacks (--max-peak-increase 25%); no owner, "
            "operator or stack recorded at the peak");

  t.max_peak_increase_pct = 10;
  t.device = 0;
  result = check_report(now, &base, t);
  ASSERT_EQ(result.violations.size(), 1u);
  EXPECT_EQ(result.violations[0].check, "max-peak-increase");
  EXPECT_EQ(result.violations[0].where, "process 1 (pid 10 / pid 20), device 0");
  EXPECT_EQ(result.violations[0].text,
            "peak 125.0 MiB is 25.0% above the baseline's 100.0 MiB (--max-peak-increase 10%); "
            "grew most at the peak: owner history (0 B -> 20.0 MiB)");
  EXPECT_TRUE(check_report(now, nullptr, t).violations.empty()) << "no baseline, no comparison";
}

TEST(ReportCheck, PeakIncreaseWithoutNamesNamesTheScopeThatGrewMost) {
  Report base = peak_of(16 * kMiB, {entry("", 16 * kMiB, 1)});
  base.devices[0].scopes = {{"operator", "aten.mse_loss", 2, 32 * kMiB, 32 * kMiB, 16 * kMiB}};
  Report now = peak_of(20 * kMiB, {entry("", 20 * kMiB, 1)});
  now.devices[0].scopes = {{"operator", "aten.mse_loss", 2, 32 * kMiB, 32 * kMiB, 16 * kMiB},
                           {"operator", "aten._to_copy", 2, 8 * kMiB, 8 * kMiB, 4 * kMiB}};
  Thresholds t;
  t.max_peak_increase_pct = 20;
  const CheckResult result = check_report(now, &base, t);
  ASSERT_EQ(result.violations.size(), 1u);
  EXPECT_NE(result.violations[0].text.find(
                "grew most: operator aten._to_copy (most live inside it: 0 B -> 4.0 MiB)"),
            std::string::npos)
      << result.violations[0].text;
}

TEST(ReportCheck, ARecordingThatLacksEventsSaysWhat) {
  Report r;
  EXPECT_TRUE(incomplete_recording(r).empty());
  RecordedProcess p;
  p.pid = 42;
  p.events_dropped = 1200;
  p.events_lost = 3;
  r.processes.push_back(p);
  p.pid = 43;
  p.events_dropped = p.events_lost = 0;
  r.processes.push_back(p);
  p.pid = 44;
  p.events_lost = 7;
  r.processes.push_back(p);
  r.rows_skipped = 5;
  r.live_input.rejected_messages = 2;
  r.unfinished = true;
  const std::vector<std::string> lacks = incomplete_recording(r);
  ASSERT_EQ(lacks.size(), 5u);
  EXPECT_EQ(lacks[0],
            "pid 42: 1,200 events dropped by the agent (its buffer was full: MEMTAP_BUFFER_MB, or "
            "MEMTAP_LOSSLESS=1 to wait instead), 3 events lost on the way to the monitor");
  EXPECT_EQ(lacks[1], "pid 44: 7 events lost on the way to the monitor");
  EXPECT_EQ(lacks[2], "5 rows not understood (skipped)");
  EXPECT_EQ(lacks[3], "the live monitor rejected 2 messages (memtap report says which)");
  EXPECT_EQ(lacks[4], "not finished: its monitor stopped before the end (killed?)");

  r.stopped.reason = "out.db: database or disk is full";
  r.stopped.rows_recorded = 7699;
  r.stopped.rows_not_recorded = 12;
  EXPECT_EQ(incomplete_recording(r)[4],
            "the recording stopped after 7,699 events (out.db: database or disk is full); 12 "
            "events after them were not recorded");
}

TEST(ReportCheck, CountsTheThresholdsGiven) {
  Thresholds t;
  EXPECT_EQ(threshold_count(t), 0);
  t.max_peak_bytes = 1;
  t.no_oom = true;
  t.max_peak_increase_pct = 0;
  t.device = 0;
  EXPECT_EQ(threshold_count(t), 3);
}

}  // namespace
}  // namespace memtap
