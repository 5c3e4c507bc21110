// A live agent's device events through the whole monitor path (Session -> rows -> MemEvents ->
// Analyzer -> Report) and what `memtap report` then says, as text and as JSON: per device the
// HAL layer's peak, the device's capacity for time to OOM, each OOM with the blocks live then.
#include <gtest/gtest.h>

#include <cstdio>
#include <string>
#include <vector>

#include "monitor/engine/analyzer.h"
#include "monitor/engine/row_events.h"
#include "monitor/report/report_render.h"
#include "tests/unit/engine/session_support.h"

namespace memtap {
namespace {

using namespace session_test;  // NOLINT: the session tests' message builders

constexpr uint64_t kGiB = uint64_t{1} << 30;

const Strings kStrings = {{1, "cudaMalloc"},
                          {2, "model"},
                          {3, "train.py(7): build\nmain.py(1): <module>"},
                          {4, "aten::empty"},
                          {5, "cudaHostAlloc"}};

Ev device_event(uint64_t ts, Kind kind, uint16_t device, uint64_t addr, uint64_t size,
                uint32_t string_id = 0) {
  return {ts, kind, addr, size, string_id, device};
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

class DeviceReportTest : public SessionTest {
 protected:
  void SetUp() override {
    using K = Kind;
    feed(hello(kPid, kInst));
    feed(
        batch_with(kPid, kInst, 1, kFar, kStrings,
                   {{7,
                     {device_event(2000, K::DEVICE_INFO, 0, 6 * kGiB, 8 * kGiB),
                      ev_ctx(2010, K::OWNER_PUSH, 2), ev_ctx(2020, K::PYTHON_STACK, 3),
                      device_event(2030, K::DEVICE_MALLOC, 0, 0x7f0000000000, 2 * kGiB, 1),
                      ev_ctx(2040, K::OWNER_POP), ev_ctx(2050, K::OP_START, 4),
                      device_event(2060, K::DEVICE_MALLOC, 0, 0x7f1000000000, kGiB, 1),
                      ev_ctx(2070, K::OP_END, 4),
                      device_event(2080, K::DEVICE_MALLOC, 1, 0x7f2000000000, kGiB / 2, 1),
                      device_event(2090, K::PINNED_MALLOC, 0, 0x7e0000000000, kGiB / 4, 5),
                      ev_malloc(2100, 0x5000, 64),
                      device_event(2110, K::DEVICE_FREE, 1, 0x7f1000000000, 0),  // device 1 current
                      device_event(2120, K::KERNEL_LAUNCH, 0, 0x33, 0, 4),
                      device_event(2130, K::DEVICE_OOM, 0, 0x33, 4 * kGiB, 1),
                      device_event(2140, K::DEVICE_OOM, 2, 0, kGiB, 1)}}}));
    feed(bye(kPid, kInst, 2, 3000));
    session.finish();

    RowStrings row_strings(&table);
    for (uint32_t id = 1; id < strings.size(); ++id) row_strings.add(id, strings[id]);
    append_events(rows.data(), rows.size(), row_strings, &events);
    Analyzer analyzer(&table);
    analyzer.add(events.data(), events.size());
    report = analyzer.report({});
  }

  const DeviceReport* device(int32_t d) const {
    for (const DeviceReport& r : report.devices)
      if (r.pid == kPid && r.device == d) return &r;
    ADD_FAILURE() << "no report for device " << d;
    return nullptr;
  }

  StringTable table;
  std::vector<MemEvent> events;
  Report report;
};

TEST_F(DeviceReportTest, EachDeviceHasItsHalPeakAndCapacity) {
  ASSERT_EQ(report.devices.size(), 4u);  // the host (pinned, heap), devices 0, 1 and 2
  const DeviceReport* host = device(kHostDevice);
  ASSERT_NE(host, nullptr);
  EXPECT_EQ(host->allocations, 2u);  // the pinned block and the heap block
  const DeviceReport* d0 = device(0);
  ASSERT_NE(d0, nullptr);
  EXPECT_EQ(d0->allocations, 2u);
  EXPECT_EQ(d0->frees, 1u);  // freed while device 1 was current
  ASSERT_EQ(d0->layers.size(), 1u);
  EXPECT_EQ(d0->layers[0].layer, "HAL");
  EXPECT_EQ(d0->layers[0].peak_bytes, int64_t(3 * kGiB));
  EXPECT_EQ(d0->layers[0].final_bytes, int64_t(2 * kGiB));
  // HAL is what the process holds on the device: App Reserved.
  EXPECT_EQ(d0->curves[3].name, "App Reserved");
  EXPECT_EQ(d0->curves[3].peak_bytes, int64_t(3 * kGiB));
  // The device's capacity (deviceInfo) is what time to OOM measures against.
  EXPECT_EQ(d0->oom.capacity_bytes, int64_t(8 * kGiB));
  const DeviceReport* d1 = device(1);
  ASSERT_NE(d1, nullptr);
  EXPECT_EQ(d1->layers[0].peak_bytes, int64_t(kGiB / 2));
  EXPECT_EQ(d1->oom.capacity_bytes, kUnknown);
}

TEST_F(DeviceReportTest, AnOomListsTheBlocksLiveOnItsDevice) {
  const DeviceReport* d0 = device(0);
  ASSERT_NE(d0, nullptr);
  ASSERT_EQ(d0->oom_count, 1u);
  ASSERT_EQ(d0->ooms.size(), 1u);
  const OomEntry& oom = d0->ooms[0];
  EXPECT_EQ(oom.api, "cudaMalloc");
  EXPECT_EQ(oom.requested_bytes, int64_t(4 * kGiB));
  EXPECT_EQ(oom.stream, 0x33u);
  EXPECT_EQ(oom.tid, 7u);
  EXPECT_EQ(oom.ts_ns, epoch(2130));
  ASSERT_EQ(oom.top.size(), 1u);  // the 1 GiB block was freed; device 1's is not listed
  EXPECT_EQ(oom.top[0].addr, 0x7f0000000000u);
  EXPECT_EQ(oom.top[0].size_bytes, int64_t(2 * kGiB));
  EXPECT_EQ(oom.top[0].owner, "model");
  EXPECT_EQ(oom.top[0].name, "cudaMalloc");
  EXPECT_EQ(oom.top[0].stack_python, kStrings[2].second);
  // A device whose only event is an OOM is reported too.
  const DeviceReport* d2 = device(2);
  ASSERT_NE(d2, nullptr);
  EXPECT_EQ(d2->oom_count, 1u);
  EXPECT_TRUE(d2->ooms[0].top.empty());
}

TEST_F(DeviceReportTest, TextAndJsonSayIt) {
  const std::string text = text_of(report);
  EXPECT_NE(text.find("pid 100, device 0:"), std::string::npos) << text;
  EXPECT_NE(text.find("Layer HAL           peak    3.0 GiB"), std::string::npos) << text;
  EXPECT_NE(text.find("OOM at +"), std::string::npos) << text;
  EXPECT_NE(text.find(": cudaMalloc asked 4.0 GiB (thread 7, stream 51)"), std::string::npos)
      << text;
  EXPECT_NE(text.find("2.0 GiB  0x00007f0000000000  id 1  owner model  name cudaMalloc  stack "
                      "train.py(7): build ..."),
            std::string::npos)
      << text;
  EXPECT_NE(text.find("no block of the process was live on the device"), std::string::npos) << text;
  // Only the driver's blocks: the curves are theirs, which the report says.
  EXPECT_NE(text.find("Pool: none recorded (no PTA blocks or samples): Allocated, Reserved and "
                      "Active are the driver's blocks (HAL)"),
            std::string::npos)
      << text;

  const std::string json = report_json(report);
  EXPECT_NE(json.find(R"("layers":[{"layer":"HAL","peak_ns":)"), std::string::npos) << json;
  EXPECT_NE(json.find(R"("peak_bytes":3221225472,"final_bytes":2147483648)"), std::string::npos)
      << json;
  EXPECT_NE(json.find(R"("oom_count":1,"ooms":[{"ts_ns":)"), std::string::npos) << json;
  EXPECT_NE(json.find(R"("api":"cudaMalloc","requested_bytes":4294967296,"stream":51)"),
            std::string::npos)
      << json;
  // Refused once: a retry of the same request would count here (blocks::kRefusedAgainNs).
  EXPECT_NE(
      json.find(R"("refusals":1,"last_ts_ns":)" + std::to_string(epoch(2130)) + R"(,"top":[)"),
      std::string::npos)
      << json;
  EXPECT_NE(json.find(R"("top":[{"addr":139637976727552,"size_bytes":2147483648,)"
                      R"("allocation_id":1,"owner":"model","name":"cudaMalloc")"),
            std::string::npos)
      << json;
  EXPECT_NE(json.find(R"("capacity_bytes":8589934592)"), std::string::npos) << json;
}

}  // namespace
}  // namespace memtap
