// Accepts TCP connections and decides at once whether to keep them (ConnectionLimits): over the
// per-address limit a connection gets its 429 without a byte being read, over the total it is
// closed. accept() failing for lack of file descriptors (EMFILE/ENFILE) no longer spins: one
// pending connection is shed with a reserve descriptor, the listener waits, and the failure is
// counted (voxrt_accept_errors_total{kind="descriptors"}).
#pragma once

#include <boost/asio/ip/tcp.hpp>
#include <boost/asio/steady_timer.hpp>
#include <memory>
#include <string>

#include "server/io_context_pool.h"
#include "server/server_shared.h"
#include "voxrt/status.h"

namespace voxrt::server {

class Listener : public std::enable_shared_from_this<Listener> {
 public:
  Listener(IoContextPool& pool, ServerShared& shared);
  ~Listener();

  Status open(const std::string& host, int port);
  int port() const { return acceptor_.local_endpoint().port(); }
  void start() { do_accept(); }
  void stop();

 private:
  void do_accept();
  void on_accept(boost::system::error_code ec, boost::asio::ip::tcp::socket socket);
  // Out of descriptors: frees the reserve, accepts and closes one pending connection, takes the
  // reserve back, and accepts again after a pause.
  void shed_one_and_pause();

  IoContextPool& pool_;
  boost::asio::ip::tcp::acceptor acceptor_;
  boost::asio::steady_timer pause_;
  ServerShared& shared_;
  int reserve_fd_ = -1;
};

}  // namespace voxrt::server
