// The CPU memtap takes while the program it traces runs, and all it can take after.
//
// memtap's threads used to step back with nice 19. That protects the program, but a nice
// value cannot be lowered again without privilege, so once the program had ended the
// monitor still finished the recording at 1.5 % of a core beside any other busy process:
// 115x the plain run's time beside two busy loops. Instead they stay at the program's
// priority and pace themselves: while the program runs and every core is busy, each keeps
// to a small share of a core (a minimum, so that memtap falls behind at a bounded rate
// instead of starving), rising with how far behind it is; with a core idle, or once the
// program has ended, they take what they need.
#pragma once

#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>

namespace memtap {

// What the pacers of one live recording follow. Set by the side that knows (the program
// ran or ended; how far behind the monitor is); read by every pacing thread.
struct CpuShare {
  std::atomic<bool> limited{false};  // the program runs: keep to the share on busy cores
  // The share of a core each pacing thread keeps to while limited and the cores are busy,
  // in thousandths.
  std::atomic<uint32_t> permille{kMinPermille};
  // The share of a thread that serves only the live window (its drawing, its block index),
  // set beside `permille` (view_share).
  std::atomic<uint32_t> view_permille{kMinPermille};

  // MEMTAP_CPU_SHARE (percent of a core per thread) sets the minimum; the share rises from
  // it with the backlog up to kMaxPermille (share_while_running).
  static constexpr uint32_t kMinPermille = 25;
  static constexpr uint32_t kMaxPermille = 500;

  // Whether work other than memtap's fills the cores, as whoever looks at the traced
  // processes last saw it (LiveRecording: the program's threads and other processes', not
  // the agents' sender and ZeroMQ threads): 1 yes, 0 no, -1 not known (then
  // cores_busy_without_me, which cannot tell an agent's threads from the program's).
  std::atomic<int> cores_full{-1};
  // The usable CPUs the program's and other work's runnable threads leave, as last seen
  // (RecentRunnable): -1 when not known (not looked at, or the program has ended).
  std::atomic<int> spare_cores{-1};
  // Tests: asked instead of either.
  bool (*cores_busy)() = nullptr;
};

// The minimum share: MEMTAP_CPU_SHARE in percent of a core (0.1-100), else kMinPermille.
uint32_t min_share_permille();

// The share for a monitor that is `behind_s` seconds behind the live rate: the minimum
// while it keeps up, rising linearly to kMaxPermille (half a core) at 2 s behind. A pure function,
// so that the rule is tested directly.
uint32_t share_for_backlog(uint32_t min_permille, double behind_s);

// The share while the program runs, from what the machine's runnable threads are now: the
// program's own (`program`: less the agent's sender and ZeroMQ threads) and other
// processes' (`others`: neither the program nor memtap's), on `cpus` usable CPUs.
//  - The program's threads fill every core: the minimum until memtap is kPatienceSeconds
//    behind, then rising with the backlog beyond that as share_for_backlog rises. The
//    program first: a burst's backlog is caught up once it leaves a core (a two-thread
//    allocation storm lost 0.1 s of its 0.17 to a receiving thread whose backlog grew in
//    its first milliseconds). But not at any lag: at the minimum whatever the backlog, two
//    threads that kept both cores busy for 20 s while making 600 K events a second left the
//    live view 20.7 s behind at the end, and growing (a longer run would have filled the
//    agent's buffers and lost events); bounded, memtap never falls arbitrarily behind.
//  - Other work fills what the program leaves (another job, a compile, busy loops): memtap
//    competes with it at kMaxPermille a thread, as any process would, and so finishes the
//    recording sooner once the program has ended: each CPU second it takes now comes
//    mostly out of the other work's share, where after the program it would be a second
//    the user waits. (Beside two busy loops, `memtap run` of a 6-step script: 7.25 s
//    median with the backlog rule, 7.05 s with this one, twelve runs each alternating.)
//  - Otherwise a core is left to memtap's threads (the agent's among them, as in a
//    one-thread allocation storm), and CpuShare::cores_full tells the pacers not to wait;
//    the share, which rises with the backlog (share_for_backlog), counts only where the
//    cores are judged by cores_busy_without_me (before the first look).
uint32_t share_while_running(uint32_t min_permille, double behind_s, int program, int others,
                             int cpus);
// The share of a thread that serves only the live window, beside the recording's threads'
// `share`: the minimum while the program's own threads fill every core (`program` of `cpus`),
// else `share`. Their share rises with the backlog so that the recording catches up; drawing
// more often, or indexing blocks sooner, catches nothing up. Under a program whose two
// threads kept both cores busy, `memtap run --gui` let it do 0.73 of its plain work against
// 0.88 headless: the window's drawing and its block index took 3.7 s of the first 18 s, at
// the share that the 10 s backlog had raised to half a core. At this share: 0.82. Beside
// other work they compete as the recording's threads do.
uint32_t view_share(uint32_t share, uint32_t min_permille, int program, int cpus);
// How far behind memtap lets itself fall while the program's own threads fill every core,
// before its share rises: further than a burst leaves it (`import torch` in the two ranks of
// train_multirank.py on two cores, their 4.4 M events: 5.4-5.8 s behind at most), and the
// agents' buffers hold that much of a sustained 600 K events a second many times over.
constexpr double kPatienceSeconds = 8.0;

// The threads a live recording keeps busy at once beside the program: the agent's sender,
// and memtap's receiving, analysis and writer threads.
inline constexpr int kLiveRecordingThreads = 4;

// Whether a live recording's writer leaves the CPU to the live view (MemscopeWriterOptions::
// live_behind): while the program runs and the live view is behind, unless the cores the
// program and other work leave (`spare_cores`, -1: not known) give each of the recording's
// threads one. On two cores SQLite would take a fifth of the CPU the engine needs to keep
// up; with cores to spare, holding the writer back made nothing faster: on a lent H200 (16
// CPUs) 4.4 M of the 5.7 M rows of a 5-step PyTorch script waited on disk, and the recording
// was complete 6.7-8.6 s after the program.
bool writer_leaves_the_cpu(bool live_behind, bool program_runs, int spare_cores);

// Whether other processes keep every core this process may run on busy: /proc/loadavg's
// runnable count minus this process's own runnable threads, against the CPUs of the
// affinity mask. False when that cannot be read (pacing then never waits). Only the caller
// used to be taken off: on two cores a one-thread program plus memtap's own receiving
// thread looked like busy cores, so the engine kept to 2.5 % of a core beside an idle one
// and the live view showed nothing until the program had ended.
bool cores_busy_without_me();

// The rule, apart from where its figures come from: `runnable` threads on the machine, of
// which `mine` are this process's, on `cpus` usable CPUs.
bool others_fill_the_cores(int runnable, int mine, int cpus);

// This process's threads that are running or runnable now (/proc/self/task/*/stat state R),
// or -1 when they cannot be read.
int my_runnable_threads();

// The threads of a traced process that are running or runnable now: the program's own, and
// the agent's (its sender and ZeroMQ threads: `memtap-*`, `*ZMQbg/*`). Zeros when they
// cannot be read (the process has ended).
struct ProgramThreads {
  int program = 0;
  int agent = 0;
};
ProgramThreads program_runnable_threads(uint32_t pid);

// The last few looks at the traced program's runnable threads and at other work's. The
// program counts as many threads as at any of them: a PyTorch step's intra-op threads sleep
// between operators, and a look that fell between two left memtap's threads unpaced while
// the next one ran (training 1.06x plain, against 1.00-1.02). Other work counts as little
// as at any of them: a kernel thread or a shell that happens to run at one look is no
// contest.
class RecentRunnable {
 public:
  static constexpr size_t kLooks = 4;
  void add(int program, int others);
  // One look, as the agent's catch-up thread and the monitor both take it: `program` runnable
  // threads of the traced programs, `memtap` of memtap's own (the agents' threads, the
  // monitor's), `machine` of the whole machine (-1: unknown). Other work is what is left:
  // memtap's threads are not work memtap must stand behind (counted as others', they made a
  // one-thread program on two cores look like busy cores, and the pacers kept to their
  // share while the other core had room). Returns CpuShare::cores_full's value: whether the
  // program and other work, as recently seen, fill the `cpus` (1, 0; -1: unknown).
  int look(int program, int memtap, int machine, int cpus);
  int program() const;
  int others() const;
  // The `cpus` the program and other work, as recently seen, leave: 0 when they fill them
  // (look() returns 1 then).
  int spare_cores(int cpus) const;

 private:
  std::array<int, kLooks> program_{};
  std::array<int, kLooks> others_{};
  size_t looks_ = 0;
};

// The runnable threads of the whole machine (/proc/loadavg's fourth field), or -1.
int machine_runnable_threads();

// The calling thread's time spent runnable but waiting for a CPU (the second field of
// /proc/thread-self/schedstat), or 0 when the kernel does not say.
uint64_t thread_run_delay_ns();

// The CPUs this process may run on (its affinity mask).
int usable_cpus();

// One thread's pacing (not shared between threads). Call pace() between units of work.
class CpuPacer {
 public:
  // Which of the share's rates the thread keeps to: the recording's (`permille`) or, for a
  // thread that serves only the live window, `view_permille`.
  enum class Follows { kRecording, kView };
  explicit CpuPacer(const CpuShare* share, Follows follows = Follows::kRecording)
      : share_(share), follows_(follows) {}
  // Returns at once unless the share is limited, this thread has used more than its share
  // of a core (with a burst of kBurstNs), and the cores are busy; then sleeps until it is
  // back within its share or the limit is lifted.
  // `waited_on`, when set, says another memtap thread is blocked until this one makes
  // progress (the receiving thread on a full engine queue): the thread then neither waits
  // nor owes what it uses meanwhile. Pacing a thread the pipeline waits for paces all of it,
  // and the share, which the blocked thread sets, then never rose: the engine analysed 8,192
  // rows in a millisecond and slept a second, for the whole run.
  void pace(const std::atomic<bool>* waited_on = nullptr);

  // pace()'s accounting without clocks or sleeps, for tests: given the monotonic and this
  // thread's CPU clock now, and whether the cores are busy (asked only when over the
  // share), the nanoseconds to wait before the thread is back within its share; 0: none.
  int64_t owed_wait_ns(uint64_t wall_ns, uint64_t cpu_ns, bool (*cores_busy)());
  // The same while the thread is waited on: what it used is forgiven, as on an idle core.
  void waited_on(uint64_t wall_ns, uint64_t cpu_ns);

  // The sleeps pace() has taken (tests).
  uint64_t waits() const { return waits_; }

  // What says whether the cores are busy: the test's probe, CpuShare::cores_full when
  // known, else cores_busy_without_me.
  bool (*busy_probe() const)();

 private:
  static constexpr int64_t kBurstNs = 20'000'000;
  uint32_t permille_now() const;

  const CpuShare* share_;
  Follows follows_;
  int64_t credit_ns_ = kBurstNs;  // CPU time this thread may still use before it waits
  uint64_t last_wall_ns_ = 0;
  uint64_t last_cpu_ns_ = 0;
  uint32_t last_permille_ = CpuShare::kMinPermille;  // the share at the previous call
  bool was_limited_ = false;                         // at the previous call
  uint64_t waits_ = 0;
};

}  // namespace memtap
