// The host's capacity: the parsers on the texts the kernel writes, and the reader on this
// machine (whatever it has, the answer is a positive number no larger than MemTotal).
#include "monitor/engine/timeline/host_capacity.h"

#include <gtest/gtest.h>

#include "monitor/model/mem_event.h"

namespace memtap::timeline {
namespace {

TEST(HostCapacity, ParsesMemTotal) {
  EXPECT_EQ(parse_meminfo_total_bytes("MemTotal:       24684084 kB\nMemFree:  1 kB\n"),
            int64_t(24684084) * 1024);
  EXPECT_EQ(parse_meminfo_total_bytes("MemFree: 1 kB\n"), kUnknown);
  EXPECT_EQ(parse_meminfo_total_bytes("MemTotal: lots\n"), kUnknown);
}

TEST(HostCapacity, ParsesCgroupLimits) {
  EXPECT_EQ(parse_memory_limit_bytes("8589934592\n"), int64_t(8589934592));
  EXPECT_EQ(parse_memory_limit_bytes("max\n"), kUnknown);
  EXPECT_EQ(parse_memory_limit_bytes(""), kUnknown);
  EXPECT_EQ(parse_memory_limit_bytes("12abc"), kUnknown);
}

TEST(HostCapacity, FindsTheCgroupPaths) {
  CgroupPaths v2 = parse_proc_cgroup("0::/user.slice/session-1.scope\n");
  EXPECT_EQ(v2.v2, "/user.slice/session-1.scope");
  EXPECT_EQ(v2.v1_memory, "");
  CgroupPaths hybrid =
      parse_proc_cgroup("9:name=systemd:/\n4:memory:/process_api/b84f\n2:cpu,cpuacct:/\n0::/\n");
  EXPECT_EQ(hybrid.v2, "/");
  EXPECT_EQ(hybrid.v1_memory, "/process_api/b84f");
}

TEST(HostCapacity, ReadsSomethingSensibleHere) {
  int64_t capacity = host_capacity_bytes();
  ASSERT_GT(capacity, 0);
}

}  // namespace
}  // namespace memtap::timeline
