// Synchronous access to a data source for tests: open a recording and wait until it is
// loaded and indexed, and ask the engine or the block index a question and wait for the
// answer.
#pragma once

#include <gtest/gtest.h>

#include <chrono>
#include <future>
#include <memory>
#include <string>
#include <thread>
#include <type_traits>

#include "monitor/viewdata/block_index.h"
#include "monitor/viewdata/data_source.h"

namespace memtap::test {

// Waits (up to 60 s, then fails) until the source has loaded and its block index has
// indexed everything it was given.
inline void wait_loaded(viewdata::DataSource& source) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(60);
  for (;;) {
    const viewdata::SourceStatus s = source.status();
    const viewdata::BlockIndexStatus b = source.blocks().status();
    if (s.loaded && b.queued_events == 0 && b.events_indexed + b.events_dropped == b.events_added) {
      return;
    }
    if (std::chrono::steady_clock::now() > deadline) {
      ADD_FAILURE() << "the source did not finish loading in 60 s";
      return;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

inline std::unique_ptr<viewdata::DataSource> open_loaded(const std::string& path) {
  std::string error;
  auto source = viewdata::open_recording(path, &error);
  EXPECT_NE(source, nullptr) << error;
  if (source) wait_loaded(*source);
  return source;
}

// f(const viewdata::EngineView&) on the engine's thread; its result.
template <class F>
auto engine_query(viewdata::DataSource& source, F f) {
  using R = std::invoke_result_t<F&, const viewdata::EngineView&>;
  std::promise<R> result;
  source.post([&](const viewdata::EngineView& e) { result.set_value(f(e)); });
  return result.get_future().get();
}

// f(viewdata::BlockQueries&) on the block index's thread; its result.
template <class F>
auto block_query(viewdata::DataSource& source, F f) {
  using R = std::invoke_result_t<F&, viewdata::BlockQueries&>;
  std::promise<R> result;
  source.blocks().post([&](viewdata::BlockQueries& q) { result.set_value(f(q)); });
  return result.get_future().get();
}

// Holds a block index's thread in a query until release() (or the end of the test): what
// is added meanwhile waits, in memory or on disk, however fast the index is.
class HeldBlockIndex {
 public:
  explicit HeldBlockIndex(viewdata::BlockIndex& index) {
    index.post([this, released = released_](viewdata::BlockQueries&) {
      holding_.set_value();
      released.wait();
    });
    holding_.get_future().wait();
  }
  ~HeldBlockIndex() { release(); }
  void release() {
    if (!done_) release_.set_value();
    done_ = true;
  }

 private:
  std::promise<void> holding_;  // a member: set on the index's thread, awaited here
  std::promise<void> release_;
  std::shared_future<void> released_ = release_.get_future().share();
  bool done_ = false;
};

}  // namespace memtap::test
