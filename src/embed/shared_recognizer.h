// One Recognizer used from many threads, for embedding programs (the C API, the Python
// package). Each thread owns its streams and feeds them itself (resampling and features run on
// that thread, in parallel); engine work is serialized, and streams that several threads want
// decoded at the same time go through the engine together: the thread that finds no round
// running advances every stream waiting at that moment (group commit), so N threads feeding
// N streams share batched engine calls without a scheduler thread of their own.
#pragma once

#include <condition_variable>
#include <memory>
#include <mutex>
#include <span>
#include <vector>

#include "stream/recognizer.h"

namespace voxrt::embed {

class SharedRecognizer;

// A stream opened through a SharedRecognizer; closing it (destruction) waits for a round in
// progress, since its state slot goes back to the recognizer's pool.
class SharedStream {
 public:
  ~SharedStream();
  SharedStream(const SharedStream&) = delete;
  SharedStream& operator=(const SharedStream&) = delete;

  // Feeding is the owning thread's own work: not while decode() runs for this stream.
  stream::Stream& stream() { return *stream_; }
  const stream::Stream& stream() const { return *stream_; }
  SharedRecognizer& owner() const { return *owner_; }

 private:
  friend class SharedRecognizer;
  SharedStream(std::shared_ptr<SharedRecognizer> owner, std::unique_ptr<stream::Stream> stream)
      : owner_(std::move(owner)), stream_(std::move(stream)) {}
  std::shared_ptr<SharedRecognizer> owner_;
  std::unique_ptr<stream::Stream> stream_;
};

class SharedRecognizer : public std::enable_shared_from_this<SharedRecognizer> {
 public:
  static Expected<std::shared_ptr<SharedRecognizer>> create(const stream::RecognizerConfig& config);

  Expected<std::unique_ptr<SharedStream>> open_stream(const stream::StreamOptions& options = {});
  // Runs every chunk the given streams have ready, together with the streams other threads are
  // decoding at the same time. A stream must not be in two decode() calls at once. When the
  // engine fails, every stream of that round gets the error. Returns the engine calls of the
  // round that ran them (shared with the other streams of that round).
  Expected<int> decode(std::span<SharedStream* const> streams);

  const stream::Recognizer& recognizer() const { return *recognizer_; }
  // Rounds run and engine calls made so far (fewer rounds than decode() calls: batching).
  long long rounds() const;
  long long engine_calls() const;

 private:
  struct Waiter {
    std::span<SharedStream* const> streams;
    bool done = false;
    Status status;
    int engine_calls = 0;
  };

  explicit SharedRecognizer(std::shared_ptr<stream::Recognizer> recognizer)
      : recognizer_(std::move(recognizer)) {}
  friend class SharedStream;
  // Runs one round for every waiter queued now; called with `lock` held, returns with it held.
  void lead_round(std::unique_lock<std::mutex>& lock);
  void close(std::unique_ptr<stream::Stream> stream);

  std::shared_ptr<stream::Recognizer> recognizer_;
  mutable std::mutex mutex_;
  std::condition_variable round_done_;
  std::vector<Waiter*> waiting_;
  bool round_running_ = false;
  long long rounds_ = 0;
  long long engine_calls_ = 0;
};

}  // namespace voxrt::embed
