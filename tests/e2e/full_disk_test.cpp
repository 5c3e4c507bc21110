// A full disk under `memtap run`, for real: the recording goes to a file system that fills.
//
// The recording stops with one message naming the file and the error, at once, while the
// program runs; the program carries on with its output unchanged; the live analyses go on
// (the summary's report counts every event); the monitor holds no queue for the disk
// (its resident memory stays put through 600,000 more events); the summary says where the
// recording stopped and how many events were not recorded; `memtap report` reads the
// `.partial` file and says it stopped, `memtap recover` says why it cannot finish it on the
// full disk and finishes it once there is room.
//
// The file system: a 8 MiB tmpfs in a private mount namespace (`unshare -rm`, util-linux),
// which is a disk that really fills (ENOSPC). Where user namespaces are refused (some
// containers), a file size limit instead (`ulimit -f` with SIGXFSZ ignored: writes past it
// fail with EFBIG, a full disk for each file). The test is skipped, saying why, only when
// neither can be had.
#include <gtest/gtest.h>
#include <sqlite3.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "tests/e2e/db_query.h"
#include "tests/e2e/e2e_support.h"

namespace memtap::e2e {
namespace {

const std::string kStreamer = MEMTAP_TEST_STREAMER;

std::string read_file(const std::string& path) {
  std::ifstream in(path);
  std::stringstream text;
  text << in.rdbuf();
  return text.str();
}

bool contains(const std::string& text, const std::string& part) {
  return text.find(part) != std::string::npos;
}

std::string program_path(const std::vector<std::string>& candidates) {
  for (const std::string& path : candidates) {
    if (access(path.c_str(), X_OK) == 0) return path;
  }
  return "";
}

// How the test fills a file system.
enum class Filler { kTmpfs, kFileSizeLimit };

// "" when `unshare -rm` can mount a tmpfs here, else why not.
std::string tmpfs_problem(const TempDir& dir, const std::string& unshare) {
  if (unshare.empty()) return "no unshare program (util-linux)";
  const std::string probe = dir.file("probe");
  if (mkdir(probe.c_str(), 0700) != 0) return "cannot make " + probe;
  ProcessResult r =
      run_process(spec_in(dir, {unshare, "-rm", "/bin/sh", "-c",
                                "mount -t tmpfs -o size=1m memtap-probe \"$1\"", "sh", probe}),
                  kProcessTimeout);
  rmdir(probe.c_str());
  if (r.exited && r.exit_code == 0) return "";
  return "unshare -rm and mount -t tmpfs: " + describe(r) + ": " + r.err;
}

// "" when a file size limit makes writes fail with EFBIG here, else why not.
std::string file_size_limit_problem(const TempDir& dir) {
  ProcessResult r =
      run_process(spec_in(dir, {"/bin/sh", "-c",
                                "ulimit -f 8 && trap '' XFSZ && head -c 16384 /dev/zero > \"$1\"",
                                "sh", dir.file("probe_fsize")}),
                  kProcessTimeout);
  unlink(dir.file("probe_fsize").c_str());
  if (r.exited && r.exit_code != 0 && contains(r.err, "File too large")) return "";
  return "ulimit -f: " + describe(r) + ": " + r.err;
}

// The script that records onto the filling disk, then reads what it left there. Its
// arguments: the disk's directory, a directory for the results, memtap, the program. Only
// `memtap run` talks on the script's stdin, stdout and stderr (the test drives the program
// and watches memtap); the rest goes into files.
std::string script(Filler filler) {
  std::string s = "set -u\n";
  if (filler == Filler::kTmpfs) {
    s += "mount -t tmpfs -o size=8m memtap-full-disk \"$1\" || exit 97\n"
         "MEMTAP_PROGRESS_MS=100 \"$3\" run -o \"$1/x.db\" -- \"$4\"\n";
  } else {
    // 16384 blocks of 512 bytes: no file may grow past 8 MiB.
    s += "(ulimit -f 16384 && trap '' XFSZ && MEMTAP_PROGRESS_MS=100 exec \"$3\" run -o "
         "\"$1/x.db\" -- \"$4\")\n";
  }
  s += "echo $? > \"$2/run.rc\"\n";
  if (filler == Filler::kTmpfs) {
    // What room the stop gave back (the queue on disk, the reserve) is taken, as another
    // process on the disk would: the file must read and say why it ends where it does.
    s += "cat /dev/zero > \"$1/ballast\" 2> /dev/null\n";
  }
  s += "\"$3\" report \"$1/x.db.partial\" > \"$2/report.out\" 2> \"$2/report.err\"\n"
       "echo $? > \"$2/report.rc\"\n";
  if (filler == Filler::kTmpfs) {
    s += "\"$3\" recover \"$1/x.db.partial\" > \"$2/recover_full.out\" 2> \"$2/recover_full.err\"\n"
         "echo $? > \"$2/recover_full.rc\"\n"
         "rm -f \"$1/ballast\"\n"
         "mount -o remount,size=256m \"$1\" || exit 98\n";
  }
  s += "\"$3\" recover \"$1/x.db.partial\" > \"$2/recover.out\" 2> \"$2/recover.err\"\n"
       "echo $? > \"$2/recover.rc\"\n"
       "cp \"$1/x.db\" \"$2/x.db\"\n";
  return s;
}

// The values of `key=` in memtap's progress lines, in order.
std::vector<uint64_t> progress_values(const std::string& err, const std::string& key) {
  std::vector<uint64_t> values;
  for (const std::string& line : split_lines(err)) {
    if (line.rfind("memtap: progress ", 0) != 0) continue;
    const size_t at = line.find(" " + key + "=");
    if (at != std::string::npos)
      values.push_back(strtoull(line.c_str() + at + key.size() + 2, nullptr, 10));
  }
  return values;
}

// The last progress line's value of `key` (0 if none).
uint64_t last_progress(const std::string& err, const std::string& key) {
  const std::vector<uint64_t> values = progress_values(err, key);
  return values.empty() ? 0 : values.back();
}

class FullDisk : public ::testing::Test {
 protected:
  // Sends one command to the program and waits for its reply line.
  void command(Process& run, const std::string& line, const std::string& reply) {
    const size_t lines_before = split_lines(run.out()).size();
    ASSERT_TRUE(run.write_stdin(line + "\n"));
    ASSERT_TRUE(run.wait_for_output(
        [&](const std::string& out, const std::string&) {
          return split_lines(out).size() > lines_before && out.back() == '\n';
        },
        kProcessTimeout))
        << "no reply to '" << line << "'\n"
        << run.err();
    EXPECT_EQ(split_lines(run.out()).back(), reply) << "after '" << line << "'";
  }

  // Waits for a progress line whose `key` is at least `value`.
  void wait_progress(Process& run, const std::string& key, uint64_t value) {
    EXPECT_TRUE(run.wait_for_output(
        [&](const std::string&, const std::string& err) {
          return last_progress(err, key) >= value;
        },
        kProcessTimeout))
        << "no progress line with " << key << " >= " << value << "\n"
        << run.err();
  }

  void run_with(Filler filler) {
    TempDir dir;
    ASSERT_TRUE(dir.ok());
    const std::string disk = dir.file("disk");
    const std::string results = dir.file("results");
    ASSERT_EQ(mkdir(disk.c_str(), 0700), 0);
    ASSERT_EQ(mkdir(results.c_str(), 0700), 0);
    const std::string partial = disk + "/x.db.partial";
    std::vector<std::string> argv;
    if (filler == Filler::kTmpfs) {
      argv = {program_path({"/usr/bin/unshare", "/bin/unshare"}), "-rm"};
    }
    for (const std::string& a : {std::string("/bin/sh"), std::string("-c"), script(filler),
                                 std::string("sh"), disk, results, kMemtapBin, kStreamer}) {
      argv.push_back(a);
    }
    ProcessSpec spec = spec_in(dir, argv);
    spec.pipe_stdin = true;
    std::string error;
    std::unique_ptr<Process> run = Process::start(spec, &error);
    ASSERT_TRUE(run) << error;

    // Recorded: the writer commits at least every second. The stop comes after this.
    command(*run, "alloc 2000 64", "ok 128000");
    wait_progress(*run, "written", 2000);
    ASSERT_EQ(last_progress(run->err(), "not_recorded"), 0u) << run->err();
    // 200,000 MALLOC rows, some 36 MB of them: the disk fills while the program runs, and
    // memtap says so at once, while it still runs.
    command(*run, "alloc 200000 64", "ok 12928000");
    ASSERT_TRUE(run->wait_for_output(
        [](const std::string&, const std::string& err) {
          return contains(err, "later events are counted as not recorded\n");
        },
        kProcessTimeout))
        << run->err();
    command(*run, "free", "ok 0");
    // The monitor's memory through 600,000 events after the stop: a queue for the disk
    // would hold them (about 100 bytes each, 60 MB). Each round is analysed before the next
    // (the analyses' own queue is bounded at a million rows, and a program faster than them
    // would fill it), and the memory is measured once two rounds like the measured ones
    // have brought the analyses to their own high-water mark.
    uint64_t analysed = 404000;
    auto round = [&] {
      command(*run, "alloc 50000 64", "ok 3200000");
      command(*run, "free", "ok 0");
      analysed += 100000;
      wait_progress(*run, "analysed", analysed);
    };
    wait_progress(*run, "analysed", analysed);
    round();
    round();
    const uint64_t rss_before = last_progress(run->err(), "rss_kib");
    const uint64_t not_recorded_before = last_progress(run->err(), "not_recorded");
    for (int i = 0; i < 6; ++i) round();
    const uint64_t rss_after = last_progress(run->err(), "rss_kib");
    const uint64_t not_recorded_after = last_progress(run->err(), "not_recorded");
    EXPECT_GE(not_recorded_after - not_recorded_before, 600000u);
    EXPECT_LT(rss_after, rss_before + 24 * 1024)
        << "the monitor grew from " << rss_before << " KiB to " << rss_after << " KiB";
    fprintf(stderr,
            "memtap e2e: monitor resident %llu KiB before, %llu KiB after 600,000 events past the "
            "stop\n",
            (unsigned long long)rss_before, (unsigned long long)rss_after);

    ASSERT_TRUE(run->write_stdin("quit\n"));
    run->close_stdin();
    ProcessResult r = run->wait(std::chrono::seconds(120));
    ASSERT_TRUE(r.exited) << describe(r) << "\n" << r.err;
    ASSERT_EQ(r.exit_code, 0) << r.err;  // the script's own end
    const std::string& err = r.err;

    // The program's own output and exit, unchanged; memtap's status says the recording
    // failed (2, as for any recording that failed while the program succeeded).
    std::string expected = "ok 128000\nok 12928000\nok 0\n";
    for (int i = 0; i < 8; ++i) expected += "ok 3200000\nok 0\n";
    EXPECT_EQ(r.out, expected);
    EXPECT_EQ(read_file(results + "/run.rc"), "2\n") << err;

    // One message when it stopped, naming the file and the error, and where it stopped.
    std::smatch m;
    const std::regex said(
        std::string("memtap: recording stopped after ") + kCountRegex +
        " events, [^(\n]+ into the session "
        "\\(at [0-9:]+\\): ([^\n]*)\\. The live analyses go on, and so does the program; later "
        "events are counted as not recorded\n");
    ASSERT_TRUE(std::regex_search(err, m, said)) << err;
    const uint64_t recorded = count_read(m[1].str());
    const std::string reason = m[2].str();
    EXPECT_GE(recorded, 2000u);  // what had been committed before
    EXPECT_LT(recorded, 200000u);
    EXPECT_EQ(reason.rfind(partial, 0), 0u) << reason;
    if (filler == Filler::kTmpfs) {
      // The database or its queue on disk, whichever met the full disk first.
      EXPECT_TRUE(contains(reason, "database or disk is full [SQLITE_FULL]") ||
                  contains(reason, "No space left on device"))
          << reason;
    } else {
      EXPECT_TRUE(contains(reason, "File too large")) << reason;
    }
    size_t count = 0;
    for (size_t at = err.find("later events are counted"); at != std::string::npos;
         at = err.find("later events are counted", at + 1)) {
      ++count;
    }
    EXPECT_EQ(count, 1u) << err;

    // The summary: where it stopped, what the file holds, what was not recorded, and the
    // live report of every event.
    EXPECT_TRUE(
        contains(err, "memtap: recording stopped after " + count_said(recorded) + " events, "))
        << err;
    const std::regex holds("memtap: " + std::regex_replace(partial, std::regex("[.]"), "\\.") +
                           " holds those " + count_said(recorded) + " events, up to [^;]+; " +
                           kCountRegex +
                           " events after them were not recorded "
                           "\\(the report below counts them all\\)\\. Once the disk has room, "
                           "'memtap recover [^']+' makes it a finished recording\n");
    ASSERT_TRUE(std::regex_search(err, m, holds)) << err;
    const uint64_t not_recorded = count_read(m[1].str());
    // Every event of the program's: 2,000 and 200,000 blocks allocated and freed, then
    // eight rounds of 50,000.
    EXPECT_GE(recorded + not_recorded, 2u * (202000 + 8 * 50000));
    ASSERT_TRUE(
        std::regex_search(err, m,
                          std::regex(std::string("memtap report: live \\(memscope_dump\\), ") +
                                     kCountRegex + " events\n")))
        << err;
    EXPECT_EQ(count_read(m[1].str()), recorded + not_recorded) << err;
    EXPECT_TRUE(contains(err, "ended by exit code 0")) << err;
    EXPECT_FALSE(contains(err, "none were lost")) << err;
    EXPECT_FALSE(contains(err, "memtap run: recording failed")) << err;

    // The file on the disk it filled: read, and saying where it stopped.
    EXPECT_EQ(read_file(results + "/report.rc"), "0\n") << read_file(results + "/report.err");
    const std::string report = read_file(results + "/report.out");
    EXPECT_TRUE(contains(report, "memtap report: " + partial + " (memscope_dump), " +
                                     count_said(recorded) + " events\n"))
        << report;
    EXPECT_TRUE(
        contains(report, "  the recording stopped after " + count_said(recorded) + " events, "))
        << report;
    EXPECT_TRUE(contains(report, count_said(not_recorded) + " events after them were not recorded"))
        << report;
    EXPECT_TRUE(contains(report, "'memtap recover " + partial + "'")) << report;

    if (filler == Filler::kTmpfs) {
      // Still full: recover says so and leaves the file to try again.
      EXPECT_EQ(read_file(results + "/recover_full.rc"), "1\n");
      const std::string full = read_file(results + "/recover_full.err");
      EXPECT_EQ(full.rfind("memtap recover: " + partial + ": ", 0), 0u) << full;
      EXPECT_TRUE(contains(full, "database or disk is full") ||
                  contains(full, "No space left on device"))
          << full;
      EXPECT_TRUE(contains(full, "free some space on its disk and run memtap recover again"))
          << full;
    }
    EXPECT_EQ(read_file(results + "/recover.rc"), "0\n") << read_file(results + "/recover.err");
    const std::string recovered = read_file(results + "/recover.err");
    EXPECT_TRUE(
        contains(recovered, disk + "/x.db: " + count_said(recorded) + " events of 1 process"))
        << recovered;
    EXPECT_TRUE(
        contains(recovered, "the recording had stopped after " + count_said(recorded) + " events"))
        << recovered;

    std::unique_ptr<DbQuery> db = DbQuery::open(results + "/x.db", &error);
    ASSERT_TRUE(db) << error;
    EXPECT_EQ(db->scalar_int("SELECT COUNT(*) FROM memscope_dump"), int64_t(recorded));
    EXPECT_EQ(db->scalar_int("SELECT MAX(ID) FROM memscope_dump"), int64_t(recorded) - 1);
    auto meta = [&](const std::string& key) {
      return db->scalar_int("SELECT CAST(value AS INTEGER) FROM memtap_meta WHERE key = '" + key +
                            "'");
    };
    EXPECT_EQ(meta("complete"), 1);
    EXPECT_EQ(meta("recovered"), 1);
    EXPECT_EQ(meta("rows_recorded"), int64_t(recorded));
    EXPECT_EQ(meta("rows_not_recorded"), int64_t(not_recorded));
    EXPECT_EQ(db->scalar_int("SELECT COUNT(*) FROM memtap_session WHERE ended_by = 'exit code 0' "
                             "AND command_line = '" +
                             kStreamer + "'"),
              1);
    // A prefix of the session in time: nothing after the last row kept.
    EXPECT_GT(meta("recorded_until_ns"), 0);
    EXPECT_EQ(db->scalar_int("SELECT COUNT(*) FROM memscope_dump WHERE \"Timestamp(ns)\" > "
                             "(SELECT CAST(value AS INTEGER) FROM memtap_meta "
                             "WHERE key = 'recorded_until_ns')"),
              0);
  }
};

TEST_F(FullDisk, RecordingStopsWhereTheFileSystemFilledAndTheProgramGoesOn) {
  TempDir probe_dir;
  ASSERT_TRUE(probe_dir.ok());
  const std::string tmpfs =
      tmpfs_problem(probe_dir, program_path({"/usr/bin/unshare", "/bin/unshare"}));
  if (tmpfs.empty()) {
    run_with(Filler::kTmpfs);
    return;
  }
  // Not silently: the same behaviour, through the other way a file system refuses.
  const std::string fsize = file_size_limit_problem(probe_dir);
  if (!fsize.empty())
    GTEST_SKIP() << "no way to fill a file system here: " << tmpfs << "; " << fsize;
  fprintf(stderr, "memtap e2e: no private tmpfs here (%s): a file size limit fills the disk\n",
          tmpfs.c_str());
  run_with(Filler::kFileSizeLimit);
}

// A file size limit (EFBIG) stops the recording as a full disk does; checked wherever the
// tmpfs is used above, so that both refusals are tested.
TEST_F(FullDisk, AFileSizeLimitStopsTheRecordingAsAFullDiskDoes) {
  TempDir probe_dir;
  ASSERT_TRUE(probe_dir.ok());
  const std::string fsize = file_size_limit_problem(probe_dir);
  if (!fsize.empty()) GTEST_SKIP() << "file size limits do not work here: " << fsize;
  run_with(Filler::kFileSizeLimit);
}

// The room the recording keeps below a file size limit is memtap's: the program it runs
// has the limit the user set (the shell's `ulimit -f` reads it back in 512-byte blocks).
TEST(FileSizeLimit, TheProgramUnderMemtapRunKeepsItsOwn) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string fsize = file_size_limit_problem(dir);
  if (!fsize.empty()) GTEST_SKIP() << "file size limits do not work here: " << fsize;
  ProcessResult r = run_process(
      spec_in(dir, {"/bin/sh", "-c",
                    "ulimit -f 16384 && exec \"$1\" run -o \"$2\" -- /bin/sh -c 'ulimit -f'", "sh",
                    kMemtapBin, dir.file("x.db")}),
      kProcessTimeout);
  ASSERT_TRUE(r.exited) << describe(r) << "\n" << r.err;
  EXPECT_EQ(r.exit_code, 0) << r.err;
  EXPECT_EQ(r.out, "16384\n") << r.err;
  EXPECT_TRUE(contains(r.err, "memtap: recording written to " + dir.file("x.db"))) << r.err;
}

// A recording in WAL mode whose log is gone (its writer closed cleanly, as the recorder does
// when a full disk stopped it and its last checkpoint had room) is read through a -shm file
// that must be made first: on a full disk or a read-only file system SQLite cannot, and
// refuses the read with an I/O error. memtap reads such a file as the immutable file it is,
// and `memtap recover` on the full disk says to free space.
TEST(WalModeWithoutLog, ReadsOnAFullDiskAndAReadOnlyFileSystem) {
  TempDir dir;
  ASSERT_TRUE(dir.ok());
  const std::string unshare = program_path({"/usr/bin/unshare", "/bin/unshare"});
  const std::string tmpfs = tmpfs_problem(dir, unshare);
  if (!tmpfs.empty()) GTEST_SKIP() << "no private tmpfs here: " << tmpfs;

  // msMemScope's own recording, switched to WAL mode and closed: the log and -shm removed,
  // the header saying WAL (read and write versions 2).
  const std::string wal_db = dir.file("wal.db.partial");
  std::filesystem::copy_file(std::string(MEMTAP_SHARED_DATA_DIR) +
                                 "/msmemscope/msinsight__memscope_dump_20260527062213.db",
                             wal_db);
  std::filesystem::permissions(
      wal_db, std::filesystem::perms::owner_read | std::filesystem::perms::owner_write);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(wal_db.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db, "PRAGMA journal_mode=WAL; SELECT COUNT(*) FROM memscope_dump", nullptr,
                         nullptr, nullptr),
            SQLITE_OK);
  ASSERT_EQ(sqlite3_close(db), SQLITE_OK);
  ASSERT_FALSE(std::filesystem::exists(wal_db + "-wal"));
  ASSERT_FALSE(std::filesystem::exists(wal_db + "-shm"));
  const std::string header = read_file(wal_db).substr(18, 2);
  ASSERT_EQ(header, std::string("\x02\x02", 2));

  ProcessResult here = run_process(spec_in(dir, {kMemtapBin, "report", wal_db}), kProcessTimeout);
  ASSERT_TRUE(here.exited && here.exit_code == 0) << describe(here) << "\n" << here.err;
  ASSERT_TRUE(contains(here.out, "memtap report: " + wal_db + " (memscope_dump), ")) << here.out;

  // $1: the full disk, $2: the read-only one, $3: results, $4: memtap, $5: the file.
  const std::string full = dir.file("full");
  const std::string read_only = dir.file("read_only");
  const std::string results = dir.file("results");
  for (const std::string& d : {full, read_only, results}) ASSERT_EQ(mkdir(d.c_str(), 0700), 0);
  const std::string script =
      "set -u\n"
      "mount -t tmpfs -o size=1m memtap-full-disk \"$1\" || exit 97\n"
      "cp \"$5\" \"$1/x.db.partial\" && cp \"$5\" \"$2/x.db.partial\" || exit 98\n"
      "cat /dev/zero > \"$1/ballast\" 2> /dev/null\n"
      "mount --bind \"$2\" \"$2\" && mount -o remount,bind,ro \"$2\" || exit 99\n"
      "for d in full read_only; do\n"
      "  [ $d = full ] && at=$1 || at=$2\n"
      "  \"$4\" report \"$at/x.db.partial\" > \"$3/$d.out\" 2> \"$3/$d.err\"\n"
      "  echo $? > \"$3/$d.rc\"\n"
      "done\n"
      "\"$4\" recover \"$1/x.db.partial\" > /dev/null 2> \"$3/recover.err\"\n"
      "echo $? > \"$3/recover.rc\"\n";
  ProcessResult r = run_process(spec_in(dir, {unshare, "-rm", "/bin/sh", "-c", script, "sh", full,
                                              read_only, results, kMemtapBin, wal_db}),
                                kProcessTimeout);
  ASSERT_TRUE(r.exited && r.exit_code == 0) << describe(r) << "\n" << r.err;

  // The same report as where the file was made, but for the path.
  for (const std::string d : {"full", "read_only"}) {
    SCOPED_TRACE(d);
    EXPECT_EQ(read_file(results + "/" + d + ".rc"), "0\n") << read_file(results + "/" + d + ".err");
    const std::string at = d == "full" ? full : read_only;
    EXPECT_EQ(
        std::regex_replace(
            read_file(results + "/" + d + ".out"),
            std::regex(std::regex_replace(at + "/x.db.partial", std::regex("[.]"), "\\.")), wal_db),
        here.out);
  }
  EXPECT_EQ(read_file(results + "/recover.rc"), "1\n");
  const std::string recover = read_file(results + "/recover.err");
  EXPECT_TRUE(contains(recover, "No space left on device")) << recover;
  EXPECT_TRUE(contains(recover, "free some space on its disk and run memtap recover again"))
      << recover;
}

}  // namespace
}  // namespace memtap::e2e
