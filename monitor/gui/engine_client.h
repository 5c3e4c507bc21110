// The window's one way to the data: a question goes to the thread that can answer it (the
// engine's, the block index's, or the store's own thread for SQL pages), and the answer
// comes back to the GUI thread as a queued call, so the window never waits on analysis or
// on SQLite. An answer for a widget that is gone is dropped.
//
//   client->ask(this, [req](const viewdata::EngineView& e) { return compute_curves(e, req); },
//               [this](viewdata::CurvesData d) { show(std::move(d)); });
//
// pending() counts questions not yet answered: a screenshot waits for it to reach 0.
#pragma once

#include <QMetaObject>
#include <QObject>
#include <QPointer>
#include <atomic>
#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <thread>
#include <type_traits>
#include <utility>

#include "monitor/viewdata/block_index.h"
#include "monitor/viewdata/data_source.h"

namespace memtap::gui {

class EngineClient : public QObject {
  Q_OBJECT

 public:
  explicit EngineClient(viewdata::DataSource* source, QObject* parent = nullptr);
  ~EngineClient() override;

  viewdata::DataSource& source() { return *source_; }
  viewdata::SourceStatus status() const { return source_->status(); }

  // compute(const viewdata::EngineView&) on the engine's thread, then done(result) here.
  template <class Compute, class Done>
  void ask(QObject* owner, Compute compute, Done done) {
    using R = std::invoke_result_t<Compute&, const viewdata::EngineView&>;
    auto reply = reply_to<R>(owner, std::move(done));
    source_->post([compute = std::move(compute), reply](const viewdata::EngineView& e) mutable {
      reply(compute(e));
    });
  }

  // compute(viewdata::BlockQueries&) on the block index's thread, then done(result) here.
  template <class Compute, class Done>
  void askBlocks(QObject* owner, Compute compute, Done done) {
    using R = std::invoke_result_t<Compute&, viewdata::BlockQueries&>;
    auto reply = reply_to<R>(owner, std::move(done));
    source_->blocks().post([compute = std::move(compute),
                            reply](viewdata::BlockQueries& q) mutable { reply(compute(q)); });
  }

  // compute() on the store's thread (SQL on the recording: event pages, trace slices),
  // then done(result) here. The store's questions are answered one at a time, in order.
  template <class Compute, class Done>
  void askStore(QObject* owner, Compute compute, Done done) {
    using R = std::invoke_result_t<Compute&>;
    auto reply = reply_to<R>(owner, std::move(done));
    run_on_store([compute = std::move(compute), reply]() mutable { reply(compute()); });
  }

  // Questions asked and not yet answered.
  int pending() const { return pending_.load(); }

 signals:
  // After each answer was delivered.
  void answered();

 private:
  // Holds the client while another thread delivers to it; cleared by the destructor, so an
  // answer computed after the window went away goes nowhere.
  struct Link {
    std::mutex mutex;
    EngineClient* client = nullptr;
  };

  template <class R, class Done>
  std::function<void(R)> reply_to(QObject* owner, Done done) {
    ++pending_;
    QPointer<QObject> guard(owner);
    std::shared_ptr<Link> link = link_;
    auto shared_done = std::make_shared<Done>(std::move(done));
    return [link, guard, shared_done](R result) {
      auto boxed = std::make_shared<R>(std::move(result));
      std::lock_guard lock(link->mutex);
      if (link->client == nullptr) return;
      EngineClient* client = link->client;
      QMetaObject::invokeMethod(
          client,
          [client, guard, shared_done, boxed]() {
            --client->pending_;
            if (guard) (*shared_done)(std::move(*boxed));
            emit client->answered();
          },
          Qt::QueuedConnection);
    };
  }

  void run_on_store(std::function<void()> task);
  void store_loop();

  viewdata::DataSource* source_;
  std::shared_ptr<Link> link_;
  std::atomic<int> pending_{0};

  std::mutex store_mutex_;
  std::condition_variable store_wake_;
  std::deque<std::function<void()>> store_tasks_;  // guarded by store_mutex_
  bool store_stop_ = false;                        // guarded by store_mutex_
  std::thread store_thread_;
};

}  // namespace memtap::gui
