// Untrusted senders against one Session: each kind of hostile input is refused (or dropped)
// and counted under its own name, and the good processes' rows come out as if it had never
// been sent.
#include <capnp/any.h>

#include <algorithm>
#include <string>
#include <vector>

#include "tests/unit/engine/session_support.h"

namespace memtap {
namespace {

using namespace session_test;  // NOLINT: the tests' own helpers

// `message` with another instanceSecret: what a sender that read pid and instance in a
// recording, but never saw the agent's messages, can write.
Bytes with_secret(const Bytes& message, uint64_t secret) {
  kj::ArrayPtr<const capnp::word> words(reinterpret_cast<const capnp::word*>(message.data()),
                                        message.size() / sizeof(capnp::word));
  capnp::FlatArrayMessageReader reader(words);
  capnp::MallocMessageBuilder b;
  b.setRoot(reader.getRoot<wire::Message>());
  b.getRoot<wire::Message>().setInstanceSecret(secret);
  return pack(b);
}

constexpr uint64_t kGuess = 0x5eed;

TEST_F(SessionTest, AMessageWithoutItsInstancesSecretIsAnotherSendersAndChangesNothing) {
  feed(hello(kPid, kInst));
  feed(batch(kPid, kInst, 1, kFar, {{7, {ev_malloc(2000, 0x1000, 64)}}}));
  const size_t rows_before = rows.size();

  std::string error = feed_rejected(
      with_secret(batch(kPid, kInst, 2, kFar, {{7, {ev_free(2100, 0x1000)}}}), kGuess));
  EXPECT_NE(error.find("batch from pid 100 instance 0xabc without that instance's secret"),
            std::string::npos)
      << error;
  // Nor can it end the process, or restart its sequence as a reconnection would.
  feed_rejected(with_secret(bye(kPid, kInst, 2, 3000), kGuess));
  feed_rejected(with_secret(hello(kPid, kInst), kGuess));
  EXPECT_EQ(session.input_counts().spoofed, 3u);
  EXPECT_EQ(session.rejected_messages(), 3u);

  // The process's own messages go on where they were: no gap, no reconnection, its free
  // pairs with its malloc.
  feed(batch(kPid, kInst, 2, kFar, {{7, {ev_free(2200, 0x1000)}}}));
  feed(bye(kPid, kInst, 3, 3000));
  const ProcessInfo p = process(kPid);
  EXPECT_EQ(p.messages_lost, 0u);
  EXPECT_EQ(p.reconnects, 0u);
  EXPECT_EQ(p.unmatched_frees, 0u);
  EXPECT_TRUE(p.bye_received);
  ASSERT_EQ(rows.size(), rows_before + 2);
  EXPECT_EQ(rows[rows_before], free_row(2200, kPid, 7, {0x1000, 64, 1}));
}

TEST_F(SessionTest, APendingHellosProcessCannotBeStartedByAnotherSender) {
  feed(hello(kPid, kInst));
  feed_rejected(with_secret(batch(kPid, kInst, 1, kFar, {{7, {ev_malloc(2000, 0x1000, 64)}}}), 0));
  EXPECT_EQ(session.input_counts().spoofed, 1u);
  EXPECT_EQ(session.pending_hellos(), 1u);
  feed(batch(kPid, kInst, 1, kFar, {{7, {ev_malloc(2000, 0x2000, 8)}}}));
  EXPECT_EQ(rows,
            (std::vector<DumpRow>{start_row(kPid), malloc_row(2000, kPid, 7, {0x2000, 8, 1})}));
}

TEST_F(SessionTest, EachKindOfRefusalHasItsOwnCount) {
  feed_rejected(hello(kPid, kInst, {.protocol_version = 7}));
  const std::string garbage = "random bytes, not a message";
  feed_rejected(garbage.data(), garbage.size());
  feed_rejected(batch(kPid, kInst, 1, kFar, {}));  // before its hello
  feed(hello(kPid, kInst));
  feed(batch(kPid, kInst, 1, kFar, {}));
  feed_rejected(batch(kPid, kInst, 1, kFar, {}));  // sequence seen
  feed_rejected(with_secret(batch(kPid, kInst, 2, kFar, {}), kGuess));
  const InputCounts& c = session.input_counts();
  EXPECT_EQ(c.protocol_version, 1u);
  EXPECT_EQ(c.malformed, 1u);
  EXPECT_EQ(c.unknown_process, 1u);
  EXPECT_EQ(c.out_of_order, 1u);
  EXPECT_EQ(c.spoofed, 1u);
  EXPECT_EQ(c.over_limit, 0u);
  EXPECT_EQ(c.rejected(), 5u);
  EXPECT_EQ(session.rejected_messages(), 5u);
}

// A list of zero-sized structs claims up to 2^29 elements in one word. Cap'n Proto's
// traversal limit refuses a claim beyond four elements per word of the message; within it,
// each would still be a 40-byte event (or a thread, or a string) the monitor allocates and
// holds: 20 times the message's size.
TEST_F(SessionTest, ListsThatClaimMoreElementsThanTheMessageHoldsAreRefused) {
  feed(hello(kPid, kInst));
  constexpr unsigned kClaim = 3000;  // elements; the messages are ~1000 words
  // Which list of the batch claims kClaim zero-sized elements; the other one pads the
  // message to ~8 KB, so that the claim is within the traversal limit.
  enum Claim { kEvents, kThreads, kStrings };
  auto claiming = [&](Claim claim) {
    capnp::MallocMessageBuilder b;
    auto batch_builder = header(b, kPid, kInst, 1).getBody().initBatch();
    if (claim == kStrings) {
      auto events = batch_builder.initThreads(1)[0].initEvents(250);
      for (unsigned i = 0; i < 250; ++i) events[i].setTsNs(2000);
    } else {
      auto pad = batch_builder.initStrings(1)[0];
      pad.setId(1);
      pad.setText(std::string(8000, 's'));
    }
    if (claim == kEvents) {
      auto thread = batch_builder.initThreads(1)[0];
      capnp::AnyStruct::Builder(kj::mv(thread))
          .getPointerSection()[0]
          .initAsListOfAnyStruct(0, 0, kClaim);
    } else {
      capnp::AnyStruct::Builder any(kj::mv(batch_builder));
      any.getPointerSection()[claim == kThreads ? 0 : 1].initAsListOfAnyStruct(0, 0, kClaim);
    }
    return pack(b);
  };
  std::string error = feed_rejected(claiming(kEvents));
  EXPECT_NE(error.find("batch.threads[0].events: 3000 elements of at least 32 bytes declared, "
                       "but the message holds 8"),
            std::string::npos)
      << error;
  error = feed_rejected(claiming(kThreads));
  EXPECT_NE(error.find("batch.threads: 3000 elements of at least 16 bytes"), std::string::npos)
      << error;
  error = feed_rejected(claiming(kStrings));
  EXPECT_NE(error.find("batch.strings: 3000 elements of at least 16 bytes"), std::string::npos)
      << error;
  EXPECT_EQ(session.input_counts().malformed, 3u);
  feed(batch(kPid, kInst, 1, kFar, {{7, {ev_malloc(2000, 0x1000, 8)}}}));  // sequence 1 unused
  EXPECT_EQ(process(kPid).messages_lost, 0u);
}

// No allocation of 2^63 bytes or more succeeds, and the agent records only those that did:
// a block (or an RSS) of that size is refused, since downstream it is an int64 byte count.
TEST_F(SessionTest, BlockSizesOf2To63OrMoreAreRefused) {
  feed(hello(kPid, kInst));
  const uint64_t huge = uint64_t{1} << 63;
  const std::pair<Kind, std::string> kinds[] = {{Kind::MALLOC, "malloc"},
                                                {Kind::MMAP, "mmap"},
                                                {Kind::DEVICE_MALLOC, "device block"},
                                                {Kind::PINNED_MALLOC, "pinned block"},
                                                {Kind::RSS_SAMPLE, "RSS sample"}};
  for (const auto& [kind, what] : kinds) {
    const std::string error =
        feed_rejected(batch(kPid, kInst, 1, kFar, {{7, {Ev{2000, kind, 0x1000, huge}}}}));
    EXPECT_NE(error.find("events[0].sizeBytes: " + what +
                         " of 9223372036854775808 bytes out of range, expected below 2^63"),
              std::string::npos)
        << error;
  }
  EXPECT_EQ(session.input_counts().malformed, 5u);
  // Just below: taken, however many of them (their sums are the analyses' to saturate).
  feed(batch(kPid, kInst, 1, kFar,
             {{7, {ev_malloc(2000, 0x1000, huge - 1), ev_malloc(2001, 0x2000, huge - 1)}}}));
  EXPECT_EQ(rows.back(), malloc_row(2001, kPid, 7, {0x2000, huge - 1, 2}));
}

TEST_F(SessionTest, AHelloLargerThanAnAgentsIsRefused) {
  capnp::MallocMessageBuilder b;
  auto h = header(b, kPid, kInst, 0).getBody().initHello();
  h.setHostname(std::string(300, 'h'));
  std::string error = feed_rejected(pack(b));
  EXPECT_NE(error.find("hello.hostname: 300 bytes, expected at most 255"), std::string::npos)
      << error;

  capnp::MallocMessageBuilder c;
  auto args = header(c, kPid, kInst, 0).getBody().initHello().initCommandLine(3);
  for (unsigned i = 0; i < 3; ++i) args.set(i, std::string(30000, 'a'));
  error = feed_rejected(pack(c));
  EXPECT_NE(error.find("hello.commandLine: 90003 bytes, expected at most 65536"), std::string::npos)
      << error;
  EXPECT_EQ(session.pending_hellos(), 0u);
}

// Thousands of Hellos over one connection, none followed by anything: only the newest few
// wait, the others give way, and a good agent's Hello over another connection is untouched.
TEST(HostileSession, AHelloStormKeepsOnlyItsConnectionsNewestHellosPending) {
  std::vector<DumpRow> rows;
  Session session([&](const DumpRow* r, size_t n) { rows.insert(rows.end(), r, r + n); });
  const SessionLimits limits;
  constexpr uint32_t kStorm = 5000;
  const MessagePeer storm{7, "127.0.0.9"};
  const MessagePeer good{8, "127.0.0.2"};
  for (uint32_t i = 0; i < kStorm; ++i) {
    const Bytes h = hello(10000 + i, 0x1000 + i);
    ASSERT_TRUE(session.ingest(h.data(), h.size(), storm).ok);
    if (i == kStorm / 2) {
      const Bytes g = hello(kPid, kInst);
      ASSERT_TRUE(session.ingest(g.data(), g.size(), good).ok);
    }
    ASSERT_LE(session.pending_hellos(), limits.max_pending_per_connection + 1);
  }
  EXPECT_EQ(session.input_counts().silent_hellos, kStorm - limits.max_pending_per_connection);
  const Bytes b = batch(kPid, kInst, 1, kFar, {{7, {ev_malloc(2000, 0x1000, 8)}}});
  ASSERT_TRUE(session.ingest(b.data(), b.size(), good).ok) << "the good Hello was kept";
  const Bytes y = bye(kPid, kInst, 2, 3000);
  ASSERT_TRUE(session.ingest(y.data(), y.size(), good).ok);
  session.finish();
  EXPECT_EQ(session.input_counts().silent_hellos, kStorm);
  EXPECT_EQ(session.rejected_messages(), 0u) << "a Hello is a valid message; it was dropped";
  ASSERT_EQ(session.processes().size(), 1u);
  EXPECT_EQ(session.processes()[0].pid, kPid);
  EXPECT_EQ(session.processes()[0].peer_address, "127.0.0.2");
  EXPECT_EQ(rows.size(), 3u);  // START, MALLOC, STOP: nothing of the storm
}

TEST(HostileSession, PendingHellosOfManyConnectionsAreBoundedInAll) {
  SessionLimits limits;
  limits.max_pending = 100;
  Session session({}, {}, limits);
  for (uint32_t i = 0; i < 1000; ++i) {
    const Bytes h = hello(10000 + i, 0x1000 + i);
    ASSERT_TRUE(session.ingest(h.data(), h.size(), MessagePeer{i, ""}).ok);
    ASSERT_LE(session.pending_hellos(), 100u);
  }
  EXPECT_EQ(session.input_counts().silent_hellos, 900u);
}

// A process that says Hello and nothing more (a fake, or an agent that died at once) would
// otherwise hold every later row back for as long as the session lasts.
TEST(HostileSession, APendingHelloNeitherStallsTheReleaseNorStaysForever) {
  std::vector<DumpRow> rows;
  Session session([&](const DumpRow* r, size_t n) { rows.insert(rows.end(), r, r + n); });
  const SessionLimits limits;
  constexpr uint64_t kSecond = 1'000'000'000;
  const int64_t horizon = epoch(30 * kSecond);
  session.set_horizon(horizon);
  const Bytes good = hello(kPid, kInst);
  ASSERT_TRUE(session.ingest(good.data(), good.size()).ok);
  // A Hello that claims a start long before (30 s): it holds back nothing older than
  // pending_timeout_ns (10 s) before the horizon it came at.
  const Bytes fake = hello(kPid2, kInst2, {.mono_ns = 1});
  ASSERT_TRUE(session.ingest(fake.data(), fake.size()).ok);
  const Bytes b =
      batch(kPid, kInst, 1, 100 * kSecond,
            {{7, {ev_malloc(15 * kSecond, 0x1000, 8), ev_malloc(25 * kSecond, 0x2000, 8)}}});
  ASSERT_TRUE(session.ingest(b.data(), b.size()).ok);
  EXPECT_EQ(rows.size(), 2u) << "START and the malloc at 15 s; the one at 25 s waits";
  EXPECT_EQ(session.running_pids(), (std::vector<uint32_t>{kPid, kPid2}));

  session.set_horizon(horizon + limits.pending_timeout_ns - 1);
  EXPECT_EQ(session.pending_hellos(), 1u);
  EXPECT_EQ(rows.size(), 2u);
  session.set_horizon(horizon + limits.pending_timeout_ns);
  EXPECT_EQ(session.pending_hellos(), 0u) << "nothing followed it in time";
  EXPECT_EQ(session.input_counts().silent_hellos, 1u);
  EXPECT_EQ(session.running_pids(), (std::vector<uint32_t>{kPid}));
  EXPECT_EQ(rows.size(), 3u) << "and what it held back went out";
  // What it sends now is of a process the session does not know.
  const Bytes late = batch(kPid2, kInst2, 1, kFar, {});
  EXPECT_FALSE(session.ingest(late.data(), late.size()).ok);
  EXPECT_EQ(session.input_counts().unknown_process, 1u);
}

// A fork event naming a child that never says Hello (it died at once, or the sender lied)
// holds the release back only as long as a pending Hello would.
TEST(HostileSession, AForkChildThatNeverSaysHelloIsWaitedForOnlySoLong) {
  std::vector<DumpRow> rows;
  Session session([&](const DumpRow* r, size_t n) { rows.insert(rows.end(), r, r + n); });
  const SessionLimits limits;
  constexpr uint64_t kSecond = 1'000'000'000;
  session.set_horizon(epoch(1 * kSecond));
  const Bytes h = hello(kPid, kInst);
  const Bytes b = batch(kPid, kInst, 1, 100 * kSecond,
                        {{7, {ev_fork(2 * kSecond, kChild), ev_malloc(3 * kSecond, 0x1000, 8)}}});
  ASSERT_TRUE(session.ingest(h.data(), h.size()).ok);
  ASSERT_TRUE(session.ingest(b.data(), b.size()).ok);
  session.set_horizon(epoch(5 * kSecond));
  EXPECT_EQ(rows.size(), 1u) << "START; the malloc after the fork waits for the child";
  EXPECT_EQ(session.running_pids(), (std::vector<uint32_t>{kPid, kChild}));
  session.set_horizon(epoch(2 * kSecond) + limits.pending_timeout_ns);
  EXPECT_EQ(rows.size(), 2u) << "no longer";
  EXPECT_EQ(session.running_pids(), (std::vector<uint32_t>{kPid}));
}

// A sender that says Hello, sends one Batch and never advances its watermark (and leaves a
// pool free open, which the release would wait at too): the other process's rows wait for it
// no more than stall_timeout_ns behind the present, and then go out as the horizon moves.
TEST_F(SessionTest, AProcessWhoseWatermarkStopsHoldsTheOthersBackOnlySoLong) {
  const SessionLimits limits;
  constexpr uint64_t kSecond = 1'000'000'000;
  auto ingest = [&](const Bytes& m) { ASSERT_TRUE(session.ingest(m.data(), m.size()).ok); };
  auto released_until = [&](uint64_t ts) {
    return std::all_of(rows.begin(), rows.end(),
                       [&](const DumpRow& r) { return r.timestamp_ns < epoch(ts); });
  };
  session.set_horizon(epoch(1 * kSecond));
  ingest(hello(kPid, kInst));
  ingest(hello(kPid2, kInst2));
  ingest(batch(kPid, kInst, 1, 1 * kSecond, {}));
  // Its last events just before its watermark: the pool free they end with stays open (its
  // completion may come within 20 us, past the watermark).
  constexpr uint64_t kHalf = kSecond - 100;
  ingest(batch(kPid2, kInst2, 1, 1 * kSecond,
               {{9,
                 {ev_malloc(kHalf, 0x9000, 8),
                  {kHalf + 1, Kind::DEVICE_STREAM, 0, 0, 0, 0},
                  {kHalf + 2, Kind::POOL_MALLOC, 0x7000, 64, 0, 0},
                  {kHalf + 3, Kind::DEVICE_STREAM, 0, 0, 0, 0},
                  {kHalf + 4, Kind::POOL_FREE, 0x7000, 0, 0, 0}}}}));
  uint64_t sequence = 2;
  // The good process allocates every second, its watermark a second ahead of the horizon.
  auto tick = [&](uint64_t second) {
    session.set_horizon(epoch(second * kSecond));
    ingest(batch(kPid, kInst, sequence++, (second + 1) * kSecond,
                 {{7, {ev_malloc(second * kSecond, 0x1000 + second * 0x100, 8)}}}));
  };
  const uint64_t limit_s = uint64_t(limits.stall_timeout_ns) / kSecond;
  for (uint64_t second = 2; second <= limit_s + 1; ++second) tick(second);
  // Horizon at 11 s: 10 s past the stuck watermark (1 s), not more. Nothing from the pool
  // free it left open on: the release waits there for its next batch.
  EXPECT_TRUE(released_until(kHalf + 4));
  EXPECT_EQ(process(kPid2).stalls, 0u);
  const size_t before = rows.size();
  tick(limit_s + 2);
  EXPECT_EQ(process(kPid2).stalls, 1u);
  EXPECT_EQ(process(kPid).stalls, 0u);
  EXPECT_GT(rows.size(), before + limit_s) << "the good process's mallocs went out";
  EXPECT_FALSE(released_until((limit_s + 1) * kSecond));
  EXPECT_EQ(session.running_pids(), (std::vector<uint32_t>{kPid, kPid2})) << "still running";
  EXPECT_EQ(session.laggard().pid, kPid2) << "what the release no longer waits for still lags";
  EXPECT_EQ(session.laggard().said_until_ns, epoch(1 * kSecond));
  // What it sends now is late, counted so, and still applied in its process's order.
  ingest(batch(kPid2, kInst2, 2, 2 * kSecond, {{9, {ev_free(kSecond + 5, 0x9000)}}}));
  EXPECT_EQ(process(kPid2).late_events, 1u);
  EXPECT_EQ(process(kPid2).unmatched_frees, 0u);
  EXPECT_EQ(rows.back(), free_row(kSecond + 5, kPid2, 9, {0x9000, 8, 1}));
  // Caught up, it is waited for again: the good process's malloc at 25 s waits for its
  // watermark (20 s), though the horizon is past it. It stalled once.
  ingest(batch(kPid2, kInst2, 3, (limit_s + 10) * kSecond, {}));
  session.set_horizon(epoch((limit_s + 19) * kSecond));
  ingest(batch(kPid, kInst, sequence++, (limit_s + 21) * kSecond,
               {{7, {ev_malloc((limit_s + 15) * kSecond, 0x5000, 8)}}}));
  EXPECT_TRUE(released_until((limit_s + 10) * kSecond));
  EXPECT_EQ(process(kPid2).stalls, 1u);
}

// Every process lags the horizon alike when the monitor itself is behind (ZeroMQ's queue, the
// agents' buffers): nobody is stalled and no row comes late; nor is a process alone, whose
// rows wait for nobody else's.
TEST_F(SessionTest, ProcessesThatLagThePresentAlikeAreNotStalled) {
  constexpr uint64_t kSecond = 1'000'000'000;
  auto ingest = [&](const Bytes& m) { ASSERT_TRUE(session.ingest(m.data(), m.size()).ok); };
  session.set_horizon(epoch(100 * kSecond));
  ingest(hello(kPid, kInst));
  ingest(hello(kPid2, kInst2));
  ingest(batch(kPid, kInst, 1, 2 * kSecond, {{7, {ev_malloc(1 * kSecond, 0x1000, 8)}}}));
  EXPECT_EQ(process(kPid).stalls, 0u) << "alone";
  ingest(batch(kPid2, kInst2, 1, 3 * kSecond, {{9, {ev_malloc(2 * kSecond, 0x2000, 8)}}}));
  ingest(batch(kPid, kInst, 2, 4 * kSecond, {{7, {ev_malloc(3 * kSecond, 0x1100, 8)}}}));
  ingest(batch(kPid2, kInst2, 2, 5 * kSecond, {{9, {ev_malloc(4 * kSecond, 0x2100, 8)}}}));
  EXPECT_EQ(process(kPid).stalls + process(kPid2).stalls, 0u);
  EXPECT_EQ(process(kPid).late_events + process(kPid2).late_events, 0u);
  ASSERT_FALSE(rows.empty());
  EXPECT_EQ(rows.back(), malloc_row(3 * kSecond, kPid, 7, {0x1100, 8, 3}))
      << "the malloc at 4 s waits for the first process's watermark (4 s)";
}

TEST(HostileSession, ProcessesBeyondTheLimitAreRefusedUntilOneEnds) {
  SessionLimits limits;
  limits.max_processes = 2;
  Session session({}, {}, limits);
  auto ingest = [&](const Bytes& m) { return session.ingest(m.data(), m.size()).ok; };
  for (uint32_t pid : {1u, 2u}) {
    ASSERT_TRUE(ingest(hello(pid, pid)));
    ASSERT_TRUE(ingest(batch(pid, pid, 1, kFar, {})));
  }
  EXPECT_FALSE(ingest(hello(3, 3)));
  EXPECT_FALSE(ingest(batch(3, 3, 1, kFar, {})));
  EXPECT_EQ(session.input_counts().over_limit, 1u);
  EXPECT_EQ(session.input_counts().unknown_process, 1u);
  // Pending Hellos do not count; their process is refused when it would be recorded.
  ASSERT_TRUE(ingest(bye(1, 1, 2, 5000)));
  ASSERT_TRUE(ingest(hello(4, 4)));
  ASSERT_TRUE(ingest(hello(5, 5)));
  ASSERT_TRUE(ingest(batch(4, 4, 1, kFar, {})));
  EXPECT_FALSE(ingest(batch(5, 5, 1, kFar, {})));
  EXPECT_EQ(session.input_counts().over_limit, 2u);
  EXPECT_EQ(session.pending_hellos(), 1u) << "it waits, as if that batch had not come";
  ASSERT_TRUE(ingest(bye(4, 4, 2, 6000)));
  ASSERT_TRUE(ingest(batch(5, 5, 2, kFar, {})));
  EXPECT_EQ(session.processes().size(), 4u);
}

}  // namespace
}  // namespace memtap
