// libFuzzer target: the whole server, not only its parsers (docs/security.md). The real
// voxrt::server::Server runs in this process on a loopback port with a tiny streaming model; each
// input becomes one client connection:
//   first byte % 3 == 0  raw HTTP: the rest of the input is sent as is, then the write side is
//                        closed (request lines, headers, bodies, uploads, upgrades);
//                   == 1  raw WebSocket: a valid upgrade, then the rest as raw frame bytes
//                        (headers, masks, opcodes, lengths, fragmentation as the fuzzer makes
//                        them);
//                   == 2  protocol messages: records [kind][length lo][length hi][payload...],
//                        kind even = text frame, odd = binary frame, each sent as one masked frame,
//                        then {"eof": 1}.
// The connection is read until the server closes it (or 2 s pass). A crash or sanitizer report in
// any server thread ends the run; every 64 inputs /healthz must answer, or the run aborts (a hang
// or a dead network thread). The engine is built at build time from
// bench/server/make_null_model.py (VOXRT_FUZZ_SERVER_ENGINE overrides its path).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <string_view>
#include <thread>

#include "server/server.h"

namespace {

using Clock = std::chrono::steady_clock;

std::unique_ptr<voxrt::server::Server> g_server;
std::thread g_server_thread;
int g_port = 0;

// libFuzzer ends with exit(): the server must be drained and its threads joined before static
// destructors run, or they would run under the network threads' feet.
void stop_server() {
  if (!g_server) return;
  g_server->shutdown();
  if (g_server_thread.joinable()) g_server_thread.join();
  g_server.reset();
}

int connect_to_server() {
  const int fd = ::socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_port = htons(static_cast<std::uint16_t>(g_port));
  ::inet_pton(AF_INET, "127.0.0.1", &address.sin_addr);
  if (::connect(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) != 0) {
    ::close(fd);
    return -1;
  }
  const int one = 1;
  ::setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  return fd;
}

bool send_all(int fd, std::string_view data) {
  while (!data.empty()) {
    const ssize_t n = ::send(fd, data.data(), data.size(), MSG_NOSIGNAL);
    if (n <= 0) return false;
    data.remove_prefix(static_cast<std::size_t>(n));
  }
  return true;
}

// Reads (and drops) until the server closes or `timeout` passes; returns the first bytes.
std::string read_until_closed(int fd, std::chrono::milliseconds timeout,
                              std::size_t keep_bytes = 256) {
  std::string head;
  const auto deadline = Clock::now() + timeout;
  char buffer[8192];
  for (;;) {
    const auto left =
        std::chrono::duration_cast<std::chrono::milliseconds>(deadline - Clock::now()).count();
    if (left <= 0) break;
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, static_cast<int>(left)) <= 0) break;
    const ssize_t n = ::recv(fd, buffer, sizeof(buffer), 0);
    if (n <= 0) break;
    if (head.size() < keep_bytes)
      head.append(buffer, std::min(static_cast<std::size_t>(n), keep_bytes - head.size()));
  }
  return head;
}

// Reads up to the end of an HTTP response header (the 101 of an upgrade).
bool read_upgrade_response(int fd) {
  std::string header;
  char c;
  const auto deadline = Clock::now() + std::chrono::seconds(2);
  while (header.size() < 4096 && Clock::now() < deadline) {
    pollfd p{fd, POLLIN, 0};
    if (::poll(&p, 1, 100) <= 0) continue;
    if (::recv(fd, &c, 1, 0) != 1) return false;
    header += c;
    if (header.size() >= 4 && header.compare(header.size() - 4, 4, "\r\n\r\n") == 0)
      return header.rfind("HTTP/1.1 101", 0) == 0;
  }
  return false;
}

constexpr std::string_view kUpgrade =
    "GET /fuzz HTTP/1.1\r\nHost: 127.0.0.1\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
    "Sec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\nSec-WebSocket-Version: 13\r\n\r\n";

// One masked client frame (RFC 6455 5.2); the mask is fixed (any mask is valid).
std::string client_frame(std::uint8_t opcode, std::string_view payload) {
  std::string frame;
  frame += static_cast<char>(0x80 | opcode);
  const std::size_t n = payload.size();
  if (n < 126) {
    frame += static_cast<char>(0x80 | n);
  } else if (n < 65536) {
    frame += static_cast<char>(0x80 | 126);
    frame += static_cast<char>(n >> 8);
    frame += static_cast<char>(n & 0xff);
  } else {
    frame += static_cast<char>(0x80 | 127);
    for (int shift = 56; shift >= 0; shift -= 8) frame += static_cast<char>((n >> shift) & 0xff);
  }
  const char mask[4] = {0x12, 0x34, 0x56, 0x78};
  frame.append(mask, 4);
  for (std::size_t i = 0; i < n; ++i) frame += static_cast<char>(payload[i] ^ mask[i % 4]);
  return frame;
}

void healthz_or_abort() {
  const int fd = connect_to_server();
  if (fd < 0) {
    std::fprintf(stderr, "server_connection_fuzz: cannot connect to the server\n");
    std::abort();
  }
  send_all(fd, "GET /healthz HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
  const std::string answer = read_until_closed(fd, std::chrono::seconds(5));
  ::close(fd);
  if (answer.rfind("HTTP/1.1 200", 0) != 0) {
    std::fprintf(stderr, "server_connection_fuzz: /healthz answered '%s'\n", answer.c_str());
    std::abort();
  }
}

std::string engine_path(const char* argv0) {
  if (const char* path = std::getenv("VOXRT_FUZZ_SERVER_ENGINE")) return path;
  std::string dir(argv0);
  dir = dir.substr(0, dir.rfind('/') + 1);
  return dir + "corpus/server_engine/server_model.engine";
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int* argc, char*** argv) {
  voxrt::server::ServerConfig config;
  config.recognizer.engine_path = engine_path((*argv)[0]);
  config.recognizer.max_streams = 16;
  config.port = 0;
  config.io_threads = 2;
  config.idle_timeout_s = 2;
  config.header_timeout_s = 2;
  config.max_upload_bytes = 1 << 20;
  config.max_upload_audio_s = 60;
  config.max_message_bytes = 256 * 1024;
  auto server = voxrt::server::Server::create(config);
  if (!server) {
    std::fprintf(stderr, "server_connection_fuzz: %s\n", server.status().message().c_str());
    std::abort();
  }
  g_server = std::move(*server);
  g_port = g_server->port();
  g_server_thread = std::thread([] { (void)g_server->run(); });
  std::atexit(stop_server);
  (void)argc;
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static long long inputs = 0;
  if (++inputs % 64 == 0) healthz_or_abort();
  if (size == 0) return 0;
  const int fd = connect_to_server();
  if (fd < 0) {
    // Out of ephemeral ports or descriptors for a moment: not the server's fault.
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
    return 0;
  }
  const std::string_view rest(reinterpret_cast<const char*>(data) + 1, size - 1);
  switch (data[0] % 3) {
    case 0: send_all(fd, rest); break;
    case 1:
      if (send_all(fd, kUpgrade) && read_upgrade_response(fd)) send_all(fd, rest);
      break;
    default: {
      if (!send_all(fd, kUpgrade) || !read_upgrade_response(fd)) break;
      std::string frames;
      for (std::size_t at = 0; at + 3 <= rest.size();) {
        const auto kind = static_cast<std::uint8_t>(rest[at]);
        const std::size_t length =
            static_cast<std::uint8_t>(rest[at + 1]) |
            (static_cast<std::size_t>(static_cast<std::uint8_t>(rest[at + 2])) << 8);
        at += 3;
        const std::string_view payload = rest.substr(at, std::min(length, rest.size() - at));
        at += payload.size();
        frames += client_frame(kind % 2 == 0 ? 0x1 : 0x2, payload);
      }
      frames += client_frame(0x1, R"({"eof": 1})");
      send_all(fd, frames);
      break;
    }
  }
  ::shutdown(fd, SHUT_WR);
  (void)read_until_closed(fd, std::chrono::seconds(2));
  ::close(fd);
  return 0;
}
