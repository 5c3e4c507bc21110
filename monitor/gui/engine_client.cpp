// See engine_client.h.
#include "monitor/gui/engine_client.h"

#include <pthread.h>

namespace memtap::gui {

EngineClient::EngineClient(viewdata::DataSource* source, QObject* parent)
    : QObject(parent), source_(source), link_(std::make_shared<Link>()) {
  link_->client = this;
  store_thread_ = std::thread([this] { store_loop(); });
}

EngineClient::~EngineClient() {
  {
    std::lock_guard lock(link_->mutex);
    link_->client = nullptr;
  }
  {
    std::lock_guard lock(store_mutex_);
    store_stop_ = true;
    store_tasks_.clear();
  }
  store_wake_.notify_all();
  store_thread_.join();
}

void EngineClient::run_on_store(std::function<void()> task) {
  {
    std::lock_guard lock(store_mutex_);
    store_tasks_.push_back(std::move(task));
  }
  store_wake_.notify_one();
}

void EngineClient::store_loop() {
  pthread_setname_np(pthread_self(), "memtap-store-q");
  std::unique_lock lock(store_mutex_);
  for (;;) {
    store_wake_.wait(lock, [&] { return store_stop_ || !store_tasks_.empty(); });
    if (store_stop_) return;
    std::function<void()> task = std::move(store_tasks_.front());
    store_tasks_.pop_front();
    lock.unlock();
    task();
    lock.lock();
  }
}

}  // namespace memtap::gui
