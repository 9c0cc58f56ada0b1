// POST /v1/audio/transcriptions off the network threads (docs/server.md, docs/security.md): an
// upload's multipart body is parsed and its audio decoded on the pool's own threads, one second at
// a time, and fed to a compute worker as one stream under the same back-pressure as a live client
// (--max-buffered-ms). Memory per upload is bounded by its body and a few seconds of samples
// whatever the file decodes to, the decoded duration is bounded by --max-upload-audio-s, and a
// graceful shutdown answers every upload 503 at once so live streams' finals come first.
#pragma once

#include <condition_variable>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <thread>
#include <vector>

#include "server/http_messages.h"
#include "server/model_router.h"
#include "server/server_config.h"
#include "server/server_metrics.h"

namespace voxrt::server {

class UploadJob;

class UploadPool {
 public:
  UploadPool(const ServerConfig& config, ModelRouter& models,
             std::shared_ptr<ServerMetrics> metrics);
  ~UploadPool();
  UploadPool(const UploadPool&) = delete;
  UploadPool& operator=(const UploadPool&) = delete;

  // One of --max-pending-uploads places, taken when a request's header arrives so an upload the
  // server cannot take is refused before its body is read. Released when dropped unused or when
  // the upload it was given to has been answered.
  class Reservation {
   public:
    Reservation(Reservation&& other) noexcept : pool_(other.pool_) { other.pool_ = nullptr; }
    Reservation& operator=(Reservation&& other) noexcept {
      std::swap(pool_, other.pool_);
      return *this;
    }
    ~Reservation();

   private:
    friend class UploadPool;
    explicit Reservation(UploadPool* pool) : pool_(pool) {}
    UploadPool* pool_;
  };
  // nullopt when --max-pending-uploads are in flight or the server is shutting down.
  std::optional<Reservation> reserve();

  // Called exactly once per upload with its HTTP response, from an upload or compute thread.
  using Respond = std::function<void(HttpResponse)>;
  // Queues a complete request; its answer comes through `respond`.
  void submit(Reservation reservation, HttpRequest request, Respond respond);
  // Graceful shutdown: uploads queued or running are answered 503 (shutting_down) and their
  // streams cancelled; later submissions too. Returns at once.
  void cancel_all();
  int in_flight() const;

 private:
  friend class UploadJob;
  void run();
  void release_place();

  const ServerConfig config_;
  ModelRouter& models_;
  std::shared_ptr<ServerMetrics> metrics_;
  mutable std::mutex mutex_;
  std::condition_variable wake_;
  std::deque<std::shared_ptr<UploadJob>> queue_;
  std::vector<std::weak_ptr<UploadJob>> running_;
  int in_flight_ = 0;
  bool cancelled_ = false;
  bool stopping_ = false;
  std::vector<std::thread> threads_;
};

}  // namespace voxrt::server
