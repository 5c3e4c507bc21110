// Two runs' devices paired for comparison: by rank where both runs have ranks, by the order
// the processes started otherwise, and a device one run lacks kept alone.
#include "monitor/report/report_lineup.h"

#include <gtest/gtest.h>

namespace memtap {
namespace {

Report run(std::vector<std::pair<uint32_t, int32_t>> processes_and_ranks,
           std::vector<std::pair<uint32_t, int32_t>> devices) {
  Report r;
  for (auto [pid, rank] : processes_and_ranks) {
    RecordedProcess p;
    p.pid = pid;
    p.rank = rank;
    r.processes.push_back(p);
  }
  for (auto [pid, device] : devices) {
    DeviceReport d;
    d.pid = pid;
    d.device = device;
    r.devices.push_back(d);
  }
  return r;
}

TEST(LineUp, RanksPairAcrossRunsWhateverTheirPids) {
  // The new run's ranks started in the other order.
  const Report base = run({{100, 0}, {101, 1}}, {{100, 0}, {101, 0}});
  const Report now = run({{201, 1}, {200, 0}}, {{201, 0}, {200, 0}});
  const std::vector<DevicePair> pairs = line_up(base, now);
  ASSERT_EQ(pairs.size(), 2u);
  EXPECT_EQ(pairs[0].base->pid, 100u);
  EXPECT_EQ(pairs[0].now->pid, 200u);
  EXPECT_EQ(pairs[0].label, "rank 0, device 0");
  EXPECT_EQ(pairs[1].base->pid, 101u);
  EXPECT_EQ(pairs[1].now->pid, 201u);
}

TEST(LineUp, WithoutRanksTheNthProcessPairsWithTheNthAndLoneDevicesStay) {
  const Report base = run({{10, -1}, {11, -1}}, {{10, kHostDevice}, {10, 0}, {11, kHostDevice}});
  const Report now = run({{20, -1}, {21, -1}}, {{20, kHostDevice}, {20, 1}, {21, kHostDevice}});
  const std::vector<DevicePair> pairs = line_up(base, now);
  ASSERT_EQ(pairs.size(), 4u);
  EXPECT_EQ(pairs[0].base->pid, 10u);
  EXPECT_EQ(pairs[0].now->pid, 20u);
  EXPECT_EQ(pairs[0].label, "process 1 (pid 10 / pid 20), host");
  EXPECT_EQ(pairs[1].base->device, 0);
  EXPECT_EQ(pairs[1].now, nullptr) << "device 0 only in the base run";
  EXPECT_EQ(pairs[1].label, "process 1 (pid 10 / pid 20), device 0");
  EXPECT_EQ(pairs[2].base->pid, 11u);
  EXPECT_EQ(pairs[2].now->pid, 21u);
  EXPECT_EQ(pairs[3].base, nullptr);
  EXPECT_EQ(pairs[3].now->device, 1);
  const Report alone = run({{30, -1}}, {{30, kHostDevice}});
  EXPECT_EQ(line_up(Report{}, alone)[0].label, "process 1 (absent / pid 30), host");
}

}  // namespace
}  // namespace memtap
