// `memtap report` and `memtap replay` of PyTorch memory snapshots as a user runs them on
// the pickle itself: the figures of the text and of --json (held to Python's own reading of
// the files, tests/unit/reader/torch_snapshot_expect.py), made-up times said, the same
// report streamed, and a pickle that would run code refused in one line.
#include <gtest/gtest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "tests/e2e/db_query.h"
#include "tests/e2e/e2e_support.h"

namespace memtap::e2e {
namespace {

const std::string kSnapshots = std::string(MEMTAP_SHARED_DATA_DIR) + "/torch_snapshots/";

class TorchSnapshot : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!std::filesystem::is_directory(kSnapshots)) GTEST_SKIP() << kSnapshots << " is absent";
    ASSERT_TRUE(dir.ok());
  }
  ProcessResult memtap(std::vector<std::string> args) {
    args.insert(args.begin(), kMemtapBin);
    return run_process(spec_in(dir, args), kProcessTimeout);
  }
  // Values of the report's JSON (SQLite's json_extract paths).
  std::vector<DbValue> json(const std::string& report, const std::vector<std::string>& paths) {
    std::string error;
    auto q = DbQuery::open(":memory:", &error);
    std::string sql = "SELECT ";
    for (size_t i = 0; i < paths.size(); ++i) {
      sql += (i ? ", " : "") + std::string("json_extract(?1, '") + paths[i] + "')";
    }
    DbRows rows;
    if (!q || !q->query(sql, {report}, &rows, &error) || rows.rows.size() != 1) {
      ADD_FAILURE() << error << "\n" << report;
      return std::vector<DbValue>(paths.size());
    }
    return rows.rows[0];
  }
  TempDir dir;
};

TEST_F(TorchSnapshot, ReportOfASnapshotFile) {
  const std::string file = kSnapshots + "MAGMA27-a2__memory_snapshot.pickle";
  ProcessResult text = memtap({"report", file});
  ASSERT_TRUE(text.exited && text.exit_code == 0) << describe(text) << text.err;
  EXPECT_NE(text.out.find("memtap report: " + file + " (torch_snapshot), 3,889 events"),
            std::string::npos)
      << text.out;
  EXPECT_NE(text.out.find("  snapshot: 5,163 trace entries, times from its time_us; 229 blocks and "
                          "216 segment ranges were there before the trace began (owner 'before "
                          "trace'), 2 of those blocks freed in it\n"),
            std::string::npos)
      << text.out;
  // One stream: its slow frees (up to 121 us) are still one call's.
  EXPECT_NE(text.out.find("; no free waited for another stream\n"), std::string::npos) << text.out;

  ProcessResult report = memtap({"report", "--json", file});
  ASSERT_TRUE(report.exited && report.exit_code == 0) << describe(report) << report.err;
  const std::string device0 = "$.devices[0]";
  const std::vector<DbValue> v = json(
      report.out, {"$.format", "$.torch_snapshot.trace_entries", "$.torch_snapshot.synthetic_time",
                   "$.torch_snapshot.blocks_before_trace", device0 + ".device",
                   device0 + ".pool.source", device0 + ".pool.reserved.final_bytes",
                   device0 + ".pool.allocated.final_bytes", device0 + ".pool.pending_frees"});
  EXPECT_EQ(v[0].text, "torch_snapshot");
  EXPECT_EQ(v[1].integer, 5163);
  EXPECT_EQ(v[2].integer, 0);
  EXPECT_EQ(v[3].integer, 229);
  EXPECT_EQ(v[4].text, "device 0");
  EXPECT_EQ(v[5].text, "blocks");
  // Python's reading: the segments' total_size, and the requested sizes of the blocks
  // active_allocated at the dump.
  EXPECT_EQ(v[6].integer, 14180941824);
  EXPECT_EQ(v[7].integer, 1373919236);
  EXPECT_EQ(v[8].integer, 0);
}

TEST_F(TorchSnapshot, Torch20SnapshotSaysItsTimesAreMadeUp) {
  const std::string file = kSnapshots + "LLM-inference__oom_snapshot.pickle";
  ProcessResult text = memtap({"report", file});
  ASSERT_TRUE(text.exited && text.exit_code == 0) << describe(text) << text.err;
  EXPECT_NE(text.out.find("times made up (its trace has no time_us): 1 ms apart in trace order"),
            std::string::npos)
      << text.out;
  ProcessResult report = memtap({"report", "--json", file});
  const std::vector<DbValue> v =
      json(report.out, {"$.torch_snapshot.synthetic_time", "$.torch_snapshot.trace_entries",
                        "$.devices[0].pool.reserved.final_bytes"});
  EXPECT_EQ(v[0].integer, 1);
  EXPECT_EQ(v[1].integer, 1);
  EXPECT_EQ(v[2].integer, 11844714496);
}

// Held, streamed (--low-memory) and replayed: one report.
TEST_F(TorchSnapshot, StreamedAndReplayedReportTheSame) {
  for (const char* name : {"cs336-a2__memory_ctx128_fullstep.pickle",
                           "thesis-text-to-SQL__dump_snapshot_expandable.pickle",
                           "unsupervised_finetune_resnet50__dump_snapshot_empty.pickle"}) {
    const std::string file = kSnapshots + name;
    ProcessResult held = memtap({"report", "--json", file});
    ProcessResult streamed = memtap({"report", "--json", "--low-memory", file});
    ProcessResult replayed = memtap({"replay", "--json", "--low-memory", file});
    ASSERT_TRUE(held.exited && held.exit_code == 0) << name << describe(held) << held.err;
    EXPECT_EQ(streamed.out, held.out) << name << streamed.err;
    EXPECT_EQ(replayed.out, held.out) << name << replayed.err;
  }
}

// What Python's pickle would run (os.system) is never run: one line names the file, the
// byte and the opcode, and nothing is reported.
TEST_F(TorchSnapshot, APickleThatWouldRunACommandIsRefused) {
  const std::string marker = dir.file("pwned");
  const std::string command = "touch " + marker;
  std::string bytes =
      "\x80\x02"
      "cposix\nsystem\nq";
  bytes += '\0';
  bytes += 'X';
  const uint32_t length = uint32_t(command.size());
  bytes.append(reinterpret_cast<const char*>(&length), 4);
  bytes += command + "q\x01\x85q\x02Rq\x03.";
  const std::string file = dir.file("snapshot.pickle");
  std::ofstream(file, std::ios::binary) << bytes;
  for (const char* command_name : {"report", "replay"}) {
    ProcessResult r = memtap({command_name, file});
    ASSERT_TRUE(r.exited) << describe(r);
    EXPECT_EQ(r.exit_code, 1);
    EXPECT_EQ(r.err, std::string("memtap ") + command_name + ": " + file +
                         ": byte 2: refused opcode GLOBAL (0x63): it would import a name; memtap "
                         "reads only plain data (dicts, lists, strings, numbers) from a pickle\n");
    EXPECT_TRUE(r.out.empty()) << r.out;
  }
  EXPECT_FALSE(std::filesystem::exists(marker));
}

}  // namespace
}  // namespace memtap::e2e
