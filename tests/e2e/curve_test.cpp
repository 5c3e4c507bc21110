// Streaming from other machines: `memtap keygen`, a monitor that accepts only agents with
// one of its keys (ZeroMQ CURVE, over real TCP on loopback), agents with the right keys,
// the wrong ones or none, and the endpoints a monitor refuses to bind.
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zmq.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "tests/e2e/db_query.h"
#include "tests/e2e/e2e_support.h"
#include "tests/e2e/pattern_checks.h"
#include "tests/e2e/recording_checks.h"

namespace memtap::e2e {
namespace {

std::string read_text(const std::string& path) {
  std::ifstream in(path);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

mode_t mode_of(const std::string& path) {
  struct stat st {};
  return lstat(path.c_str(), &st) == 0 ? (st.st_mode & 07777) : 0;
}

class Curve : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(dir.ok()) << "cannot create a temporary directory";
    ASSERT_TRUE(zmq_has("curve")) << "libzmq without CURVE (libsodium)";
    keys = dir.file("keys");
    ProcessResult r = memtap({"keygen", keys});
    ASSERT_TRUE(r.exited && r.exit_code == 0) << describe(r) << r.err;
  }

  ProcessResult memtap(std::vector<std::string> args) {
    args.insert(args.begin(), kMemtapBin);
    return run_process(spec_in(dir, args), kProcessTimeout);
  }

  std::unique_ptr<Process> start_tcp_recorder(const std::string& db,
                                              const std::vector<std::string>& args,
                                              std::string* endpoint,
                                              const std::string& listen = "tcp://127.0.0.1:*") {
    return e2e::start_tcp_recorder(dir, db, args, endpoint, listen);
  }

  // The agent preloaded, streaming to `endpoint` with the keys of `key_dir` ("": none).
  ProcessSpec agent_spec(std::vector<std::string> argv, const std::string& endpoint,
                         const std::string& key_dir) {
    ProcessSpec spec = preloaded_spec(dir, std::move(argv), endpoint);
    if (!key_dir.empty()) spec.env_set.push_back("MEMTAP_KEYS=" + key_dir);
    return spec;
  }

  // A key directory made of files copied from others: {source directory, file name}.
  std::string key_dir_of(const std::string& name,
                         const std::vector<std::pair<std::string, std::string>>& files) {
    const std::string path = dir.file(name);
    std::filesystem::create_directory(path);
    for (const auto& [from, file] : files) {
      std::filesystem::copy_file(from + "/" + file, path + "/" + file);
    }
    return path;
  }

  // Runs alloc_pattern under the agent and returns what it printed about itself.
  PatternRun run_pattern(const ProcessSpec& spec) {
    ProcessResult r = run_process(spec, kProcessTimeout);
    PatternRun run;
    EXPECT_TRUE(r.exited && r.exit_code == 0) << describe(r) << "\nstderr:\n" << r.err;
    std::string error;
    EXPECT_TRUE(parse_pattern_output(r.out, &run, &error)) << error;
    run.expected_ppid = getpid();
    run.command_line = kAllocPattern;
    return run;
  }

  TempDir dir;
  std::string keys;
};

TEST_F(Curve, KeygenWritesPrivateKeyPairsAndNeverReplacesOne) {
  EXPECT_EQ(mode_of(keys), 0700u);
  for (const char* owner : {"monitor", "agent"}) {
    SCOPED_TRACE(owner);
    const std::string secret_file = keys + "/" + owner + ".key";
    const std::string public_file = keys + "/" + owner + ".pub";
    EXPECT_EQ(mode_of(secret_file), 0600u);
    const std::string secret = read_text(secret_file);
    const std::string public_key = read_text(public_file);
    ASSERT_EQ(secret.size(), 41u) << "40 Z85 characters and a newline";
    ASSERT_EQ(public_key.size(), 41u);
    char derived[41];
    ASSERT_EQ(zmq_curve_public(derived, secret.substr(0, 40).c_str()), 0) << secret;
    EXPECT_EQ(public_key, std::string(derived) + "\n") << "the .pub is the .key's public key";
  }
  EXPECT_NE(read_text(keys + "/monitor.key"), read_text(keys + "/agent.key"));

  const std::string before = read_text(keys + "/agent.key");
  ProcessResult again = memtap({"keygen", keys});
  ASSERT_TRUE(again.exited) << describe(again);
  EXPECT_NE(again.exit_code, 0);
  EXPECT_NE(again.err.find(keys + "/monitor.key"), std::string::npos) << again.err;
  EXPECT_NE(again.err.find("never replaces"), std::string::npos) << again.err;
  EXPECT_EQ(read_text(keys + "/agent.key"), before);

  // A link planted where a key goes is not followed: its target is not created.
  const std::string planted = dir.file("planted");
  std::filesystem::create_directory(planted);
  std::filesystem::create_symlink(dir.file("target.key"), planted + "/agent.key");
  ProcessResult linked = memtap({"keygen", planted});
  ASSERT_TRUE(linked.exited) << describe(linked);
  EXPECT_NE(linked.exit_code, 0);
  EXPECT_NE(linked.err.find(planted + "/agent.key"), std::string::npos) << linked.err;
  EXPECT_FALSE(std::filesystem::exists(dir.file("target.key")));
  EXPECT_FALSE(std::filesystem::exists(planted + "/monitor.key")) << "nothing half-written";
}

TEST_F(Curve, AgentWithTheKeysRecordsCompletely) {
  std::string endpoint;
  const std::string db = dir.file("curve.db");
  std::unique_ptr<Process> recorder = start_tcp_recorder(db, {"--keys", keys}, &endpoint);
  ASSERT_TRUE(recorder);
  WallWindow window;
  window.begin_ns = realtime_now_ns();
  PatternRun run = run_pattern(agent_spec({kAllocPattern}, endpoint, keys));
  window.end_ns = realtime_now_ns();
  ProcessResult stopped = stop_recorder(*recorder);
  ASSERT_TRUE(stopped.exited && stopped.exit_code == 0) << describe(stopped) << stopped.err;

  RecordingData rec;
  std::string error;
  ASSERT_TRUE(load_recording(db, &rec, &error)) << error;
  expect_well_formed(rec, window);
  expect_alloc_pattern(rec, run);
  EXPECT_EQ(rec.meta["connections_refused"], "0");
}

// `memtap run --connect ... --keys DIR`: the program's agent gets MEMTAP_KEYS.
TEST_F(Curve, RunConnectsWithKeys) {
  std::string endpoint;
  const std::string db = dir.file("run.db");
  std::unique_ptr<Process> recorder = start_tcp_recorder(db, {"--keys", keys}, &endpoint);
  ASSERT_TRUE(recorder);
  ProcessSpec spec =
      spec_in(dir, {kMemtapBin, "run", "--connect", endpoint, "--keys", keys, "--", kAllocPattern});
  PatternRun run = run_pattern(spec);
  ProcessResult stopped = stop_recorder(*recorder);
  ASSERT_TRUE(stopped.exited && stopped.exit_code == 0) << describe(stopped) << stopped.err;
  std::string error;
  std::unique_ptr<DbQuery> q = DbQuery::open(db, &error);
  ASSERT_TRUE(q) << error;
  EXPECT_EQ(q->scalar_int("SELECT bye_received FROM memtap_session WHERE pid = " +
                          std::to_string(run.pid)),
            1)
      << stopped.err;
}

// Agents the monitor does not accept: none of their events is recorded, the program runs
// exactly as without memtap, and the monitor says whom it refused and counts them. An
// accepted agent streaming in the same session afterwards is recorded as usual.
TEST_F(Curve, AgentsWithoutAnAcceptedKeyAreRefused) {
  ProcessResult other = memtap({"keygen", dir.file("other")});
  ASSERT_TRUE(other.exited && other.exit_code == 0) << describe(other) << other.err;
  struct Case {
    const char* what;
    std::string key_dir;
    const char* monitor_says;
  };
  const Case cases[] = {
      // The agent may notice first and hang up: the monitor sees either.
      {"no MEMTAP_KEYS", "", "MEMTAP_KEYS"},
      {"another agent key pair",
       key_dir_of("mixed", {{dir.file("other"), "agent.key"},
                            {dir.file("other"), "agent.pub"},
                            {keys, "monitor.pub"}}),
       "refused an agent from 127.0.0.1"},
      {"another key directory altogether", dir.file("other"), "monitor.pub is not this monitor's"},
  };
  std::string endpoint;
  const std::string db = dir.file("refused.db");
  std::unique_ptr<Process> recorder = start_tcp_recorder(db, {"--keys", keys}, &endpoint);
  ASSERT_TRUE(recorder);
  const std::vector<std::string> argv = {kExitCode, "4", "two words", ""};
  ProcessResult plain = run_process(spec_in(dir, argv), kProcessTimeout);
  ASSERT_TRUE(plain.exited) << describe(plain);
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    ProcessResult traced = run_process(agent_spec(argv, endpoint, c.key_dir), kProcessTimeout);
    ASSERT_TRUE(traced.exited) << describe(traced) << traced.err;
    EXPECT_EQ(traced.exit_code, plain.exit_code) << traced.err;
    EXPECT_EQ(traced.out, plain.out);
    ASSERT_TRUE(recorder->wait_for_output(
        [&](const std::string&, const std::string& err) {
          return err.find(c.monitor_says) != std::string::npos;
        },
        kProcessTimeout))
        << recorder->err();
  }
  PatternRun accepted = run_pattern(agent_spec({kAllocPattern}, endpoint, keys));
  ProcessResult stopped = stop_recorder(*recorder);
  ASSERT_TRUE(stopped.exited && stopped.exit_code == 0) << describe(stopped) << stopped.err;
  EXPECT_NE(stopped.err.find("from agents without an accepted key"), std::string::npos)
      << "the summary counts them: " << stopped.err;

  std::string error;
  std::unique_ptr<DbQuery> q = DbQuery::open(db, &error);
  ASSERT_TRUE(q) << error;
  const std::string recorded =
      "(" + std::to_string(accepted.pid) + ", " + std::to_string(accepted.child_pid) + ")";
  EXPECT_EQ(q->scalar_int("SELECT COUNT(*) FROM memtap_session WHERE pid NOT IN " + recorded), 0)
      << "only the accepted agent's processes";
  EXPECT_EQ(q->scalar_int("SELECT COUNT(*) FROM memscope_dump WHERE \"Process Id\" NOT IN " +
                          recorded + " AND \"Process Id\" IS NOT NULL"),
            0);
  EXPECT_GT(q->scalar_int("SELECT COUNT(*) FROM memscope_dump WHERE \"Process Id\" = " +
                          std::to_string(accepted.pid)),
            0);
  EXPECT_GE(q->scalar_int("SELECT CAST(value AS INTEGER) FROM memtap_meta WHERE key = "
                          "'connections_refused'"),
            3)
      << "one at least for each refused agent";
}

// Keys an agent cannot use: it says which file once, records nothing, and the program runs
// as it would without memtap.
TEST_F(Curve, UnusableKeyFilesLeaveTheProgramAlone) {
  struct Case {
    const char* what;
    std::string key_dir;
    std::string named;  // the file the warning names
  };
  const std::string open_secret =
      key_dir_of("open", {{keys, "agent.key"}, {keys, "agent.pub"}, {keys, "monitor.pub"}});
  std::filesystem::permissions(open_secret + "/agent.key", std::filesystem::perms::group_read,
                               std::filesystem::perm_options::add);
  const std::string missing = key_dir_of("missing", {{keys, "agent.key"}, {keys, "agent.pub"}});
  const std::string short_key = key_dir_of("short", {{keys, "agent.key"}, {keys, "agent.pub"}});
  std::ofstream(short_key + "/monitor.pub") << "tooshort\n";
  ProcessResult other = memtap({"keygen", dir.file("other")});
  ASSERT_TRUE(other.exited && other.exit_code == 0) << describe(other) << other.err;
  const std::string mismatched = key_dir_of(
      "mismatched", {{keys, "agent.key"}, {dir.file("other"), "agent.pub"}, {keys, "monitor.pub"}});
  const Case cases[] = {
      {"a secret key others can read", open_secret, open_secret + "/agent.key"},
      {"agent.pub of another pair", mismatched, "agent.pub is not the public key of agent.key"},
      {"monitor.pub missing", missing, missing + "/monitor.pub"},
      {"a key of the wrong size", short_key, short_key + "/monitor.pub"},
  };
  std::string endpoint;
  const std::string db = dir.file("unusable.db");
  std::unique_ptr<Process> recorder = start_tcp_recorder(db, {"--keys", keys}, &endpoint);
  ASSERT_TRUE(recorder);
  const std::vector<std::string> argv = {kExitCode, "4", "two words", ""};
  ProcessResult plain = run_process(spec_in(dir, argv), kProcessTimeout);
  for (const Case& c : cases) {
    SCOPED_TRACE(c.what);
    ProcessResult traced = run_process(agent_spec(argv, endpoint, c.key_dir), kProcessTimeout);
    ASSERT_TRUE(traced.exited) << describe(traced) << traced.err;
    EXPECT_EQ(traced.exit_code, plain.exit_code) << traced.err;
    EXPECT_EQ(traced.out, plain.out);
    const std::vector<std::string> lines = split_lines(traced.err);
    ASSERT_EQ(lines.size(), 1u) << "one warning:\n" << traced.err;
    EXPECT_NE(lines[0].find(c.named), std::string::npos) << lines[0];
    EXPECT_NE(lines[0].find("not recorded"), std::string::npos) << lines[0];
  }
  ProcessResult stopped = stop_recorder(*recorder);
  ASSERT_TRUE(stopped.exited && stopped.exit_code == 0) << describe(stopped) << stopped.err;
  EXPECT_EQ(stopped.err.find("refused"), std::string::npos)
      << "the agents never tried to connect: " << stopped.err;
  std::string error;
  std::unique_ptr<DbQuery> q = DbQuery::open(db, &error);
  ASSERT_TRUE(q) << error;
  EXPECT_EQ(q->scalar_int("SELECT COUNT(*) FROM memtap_session"), 0);
}

// Beyond loopback a monitor listens only with keys, or with --insecure and a warning.
TEST_F(Curve, InsecureListensBeyondLoopbackWithAWarning) {
  std::string endpoint;
  std::unique_ptr<Process> recorder =
      start_tcp_recorder(dir.file("open.db"), {"--insecure"}, &endpoint, "tcp://0.0.0.0:*");
  ASSERT_TRUE(recorder);
  ProcessResult stopped = stop_recorder(*recorder);
  ASSERT_TRUE(stopped.exited && stopped.exit_code == 0) << describe(stopped) << stopped.err;
  const std::string warning = split_lines(stopped.err)[0];
  EXPECT_NE(warning.find("WARNING"), std::string::npos) << stopped.err;
  EXPECT_NE(warning.find(endpoint), std::string::npos) << stopped.err;
  EXPECT_NE(warning.find("--insecure"), std::string::npos) << stopped.err;

  ProcessResult with_keys = memtap({"record", "--listen", "tcp://0.0.0.0:*", "--keys",
                                    dir.file("nowhere"), "-o", dir.file("k.db")});
  ASSERT_TRUE(with_keys.exited) << describe(with_keys);
  EXPECT_NE(with_keys.exit_code, 0);
  EXPECT_NE(with_keys.err.find(dir.file("nowhere") + "/monitor.key"), std::string::npos)
      << "a key directory without keys names the file: " << with_keys.err;
}

}  // namespace
}  // namespace memtap::e2e
