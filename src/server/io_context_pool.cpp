#include "server/io_context_pool.h"

#include <optional>
#include <thread>

#include "core/thread_name.h"

namespace voxrt::server {

namespace net = boost::asio;

IoContextPool::IoContextPool(int contexts) {
  for (int i = 0; i < (contexts < 1 ? 1 : contexts); ++i)
    contexts_.push_back(std::make_unique<net::io_context>(1));  // one thread each
}

net::io_context& IoContextPool::next() {
  return *contexts_[next_.fetch_add(1, std::memory_order_relaxed) % contexts_.size()];
}

void IoContextPool::run(const std::string& thread_name, bool keep_alive) {
  using Guard = net::executor_work_guard<net::io_context::executor_type>;
  std::vector<std::optional<Guard>> guards(contexts_.size());
  if (keep_alive) {
    for (std::size_t i = 0; i < contexts_.size(); ++i)
      guards[i].emplace(net::make_work_guard(*contexts_[i]));
  }
  std::vector<std::thread> threads;
  for (std::size_t i = 1; i < contexts_.size(); ++i) {
    threads.emplace_back([this, i, thread_name] {
      name_this_thread(thread_name.c_str());
      contexts_[i]->run();
    });
  }
  contexts_.front()->run();
  for (auto& t : threads) t.join();
}

void IoContextPool::stop() {
  for (auto& context : contexts_) context->stop();
}

}  // namespace voxrt::server
