// C stacks sent as return addresses (common/address_stack.h) and symbolised by the session
// with the modules each process reported (Batch.modules; monitor/symbols/symbolizer.h).
//
// Pinned: a row's Call Stack(C) is the symbolised text, not the addresses, and a stack used
// twice is one session string, symbolised once; the addresses' text never reaches the
// string sink; a fork() child symbolises with the modules its parent reported; an older
// agent's symbolised text stays as it came, as does address-like text used as a mark's
// name; a module with a relative path, or with its end below its start, refuses its batch.
#include <algorithm>
#include <string>
#include <vector>

#include "monitor/symbols/symbolizer.h"
#include "tests/unit/engine/session_support.h"

namespace memtap {
namespace session_test {
namespace {

const LoadedModule kProgram{"/abs/st", 0x555500000000, 0x555500000000, 0x555500004000, "\x01\x02"};
const LoadedModule kLibc{"/usr/lib/libc.so.6", 0x7f0000000000, 0x7f0000001000, 0x7f0000200000, ""};
// Innermost first: the program twice, then libc.
constexpr uint64_t kStack[] = {0x555500001161, 0x555500001203, 0x7f0000029d90};
const char* const kStackText = "0x555500001161\n0x555500001203\n0x7f0000029d90";

Bytes batch_with_modules(uint32_t pid, uint64_t instance, uint64_t sequence, uint64_t watermark_ns,
                         const std::vector<LoadedModule>& modules, const Strings& strings,
                         const std::vector<Thread>& threads) {
  capnp::MallocMessageBuilder b;
  auto batch = header(b, pid, instance, sequence).getBody().initBatch();
  fill_batch(batch, watermark_ns, threads, 0, strings);
  auto list = batch.initModules(unsigned(modules.size()));
  for (size_t i = 0; i < modules.size(); ++i) {
    list[i].setPath(modules[i].path);
    list[i].setLoadBias(modules[i].load_bias);
    list[i].setStart(modules[i].start);
    list[i].setEnd(modules[i].end);
    list[i].setBuildId(capnp::Data::Reader(
        reinterpret_cast<const kj::byte*>(modules[i].build_id.data()), modules[i].build_id.size()));
  }
  return pack(b);
}

// What the Symbolizer makes of kStack with these modules: the text the rows must carry.
std::string symbolised(const std::vector<LoadedModule>& modules) {
  Symbolizer symbolizer;
  for (const LoadedModule& m : modules) symbolizer.add_module(m);
  return symbolizer.stack_text(kStack, 3);
}

class CStackSession : public SessionTest {
 protected:
  std::vector<std::string> c_stacks() const {
    std::vector<std::string> out;
    for (const DumpRow& r : rows) {
      if (r.event == DumpEvent::kMalloc) out.push_back(text(r.stack_c));
    }
    return out;
  }
};

TEST_F(CStackSession, RowsCarryTheSymbolisedStackOncePerDistinctStack) {
  feed(hello(kPid, kInst));
  feed(batch_with_modules(kPid, kInst, 1, kFar, {kProgram, kLibc}, {{7, kStackText}},
                          {{kPid,
                            {ev_ctx(2000, Kind::C_STACK, 7), ev_malloc(2001, 0x9000, 5 << 20),
                             ev_ctx(2002, Kind::C_STACK, 7), ev_malloc(2003, 0xa000, 5 << 20)}}}));
  feed(bye(kPid, kInst, 2, 3000));
  const std::string want = symbolised({kProgram, kLibc});
  ASSERT_NE(want.find("/abs/st"), std::string::npos) << want;
  EXPECT_EQ(c_stacks(), (std::vector<std::string>{want, want}));
  EXPECT_EQ(std::count(strings.begin(), strings.end(), want), 1);
  EXPECT_EQ(std::count(strings.begin(), strings.end(), std::string(kStackText)), 0)
      << "the addresses' text is no session string";
  EXPECT_EQ(process(kPid).unresolved_strings, 0u);
}

TEST_F(CStackSession, ModulesOfALaterBatchSymboliseTheStacksItDefines) {
  feed(hello(kPid, kInst));
  feed(batch_with_modules(kPid, kInst, 1, 1500, {kLibc}, {}, {}));
  feed(batch_with_modules(kPid, kInst, 2, kFar, {kProgram}, {{7, kStackText}},
                          {{kPid, {ev_ctx(2000, Kind::C_STACK, 7), ev_malloc(2001, 0x9000, 64)}}}));
  feed(bye(kPid, kInst, 3, 3000));
  EXPECT_EQ(c_stacks(), (std::vector<std::string>{symbolised({kLibc, kProgram})}));
}

TEST_F(CStackSession, AForkChildSymbolisesWithItsParentsModules) {
  feed(hello(kPid, kInst));
  feed(batch_with_modules(kPid, kInst, 1, kFar, {kProgram, kLibc}, {},
                          {{kPid, {ev_fork(2000, kChild)}}}));
  feed(bye(kPid, kInst, 2, 2500));
  HelloArgs child;
  child.ppid = kPid;
  child.forked_from_pid = kPid;
  child.mono_ns = 2100;
  feed(hello(kChild, kChildInst, child));
  feed(batch_with(kChild, kChildInst, 1, kFar, {{3, kStackText}},
                  {{kChild, {ev_ctx(2200, Kind::C_STACK, 3), ev_malloc(2201, 0x9000, 64)}}}));
  feed(bye(kChild, kChildInst, 2, 3000));
  EXPECT_EQ(c_stacks(), (std::vector<std::string>{symbolised({kProgram, kLibc})}));
}

TEST_F(CStackSession, OtherTextStaysAsItCame) {
  const std::string old_agent = "/abs/st(deep_leaf_alloc+0x11) [0x555500001161]\n/abs/st(+0x1203)";
  feed(hello(kPid, kInst));
  feed(batch_with_modules(kPid, kInst, 1, kFar, {kProgram}, {{1, old_agent}, {2, "0x10"}},
                          {{kPid,
                            {ev_ctx(2000, Kind::C_STACK, 1), ev_malloc(2001, 0x9000, 64),
                             ev_ctx(2002, Kind::MARK, 2)}}}));
  feed(bye(kPid, kInst, 2, 3000));
  EXPECT_EQ(c_stacks(), (std::vector<std::string>{old_agent}));
  auto mark = std::find_if(rows.begin(), rows.end(),
                           [](const DumpRow& r) { return r.event == DumpEvent::kMstx; });
  ASSERT_NE(mark, rows.end());
  EXPECT_EQ(text(mark->name), "0x10");
}

TEST_F(CStackSession, AModuleWithARelativePathOrAnInvertedRangeRefusesItsBatch) {
  feed(hello(kPid, kInst));
  LoadedModule relative = kProgram;
  relative.path = "st";
  EXPECT_NE(feed_rejected(batch_with_modules(kPid, kInst, 1, kFar, {kLibc, relative}, {}, {}))
                .find("batch.modules[1].path: \"st\", expected an absolute path or [vdso]"),
            std::string::npos);
  LoadedModule inverted = kProgram;
  std::swap(inverted.start, inverted.end);
  EXPECT_NE(feed_rejected(batch_with_modules(kPid, kInst, 1, kFar, {inverted}, {}, {}))
                .find("batch.modules[0]: start"),
            std::string::npos);
  LoadedModule vdso = kLibc;
  vdso.path = "[vdso]";
  feed(batch_with_modules(kPid, kInst, 1, kFar, {vdso}, {}, {}));
}

}  // namespace
}  // namespace session_test
}  // namespace memtap
