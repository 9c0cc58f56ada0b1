// N asio io_contexts, each run by one thread, instead of one io_context shared by N threads:
// with one shared context every read, write and post from every connection (and every reply the
// compute workers post) goes through that context's one scheduler lock and one epoll set, and at
// ~2,000 streams (100,000 frames a second each way) the network threads spent their time
// there. Here a connection lives on one context for its whole life (round-robin at accept), so
// the threads share nothing but the listening socket. Used by the server and the load generator.
#pragma once

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

#include <atomic>
#include <memory>
#include <string>
#include <vector>

namespace voxrt::server {

class IoContextPool {
 public:
  explicit IoContextPool(int contexts);
  IoContextPool(const IoContextPool&) = delete;
  IoContextPool& operator=(const IoContextPool&) = delete;

  int size() const { return static_cast<int>(contexts_.size()); }
  // The first context: the listener's, signals', and control posts'.
  boost::asio::io_context& first() { return *contexts_.front(); }
  // The context for the next connection (round-robin; any thread).
  boost::asio::io_context& next();
  // Runs every context, one thread each (the calling thread runs the first; the others are
  // named `thread_name`), until stop() or until a context runs out of work when `keep_alive` is
  // false. Returns when all threads have finished.
  void run(const std::string& thread_name, bool keep_alive);
  void stop();

 private:
  std::vector<std::unique_ptr<boost::asio::io_context>> contexts_;
  std::atomic<unsigned> next_{0};
};

}  // namespace voxrt::server
