#include "embed/shared_recognizer.h"

namespace voxrt::embed {

SharedStream::~SharedStream() {
  if (owner_) owner_->close(std::move(stream_));
}

Expected<std::shared_ptr<SharedRecognizer>> SharedRecognizer::create(
    const stream::RecognizerConfig& config) {
  VOXRT_ASSIGN_OR_RETURN(auto recognizer, stream::Recognizer::create(config));
  return std::shared_ptr<SharedRecognizer>(new SharedRecognizer(std::move(recognizer)));
}

Expected<std::unique_ptr<SharedStream>> SharedRecognizer::open_stream(
    const stream::StreamOptions& options) {
  std::unique_lock lock(mutex_);
  // The slot pool and the engine's context belong to the round in progress.
  round_done_.wait(lock, [&] { return !round_running_; });
  VOXRT_ASSIGN_OR_RETURN(auto opened, recognizer_->open_stream(options));
  return std::unique_ptr<SharedStream>(new SharedStream(shared_from_this(), std::move(opened)));
}

void SharedRecognizer::close(std::unique_ptr<stream::Stream> stream) {
  std::unique_lock lock(mutex_);
  round_done_.wait(lock, [&] { return !round_running_; });
  stream.reset();
}

Expected<int> SharedRecognizer::decode(std::span<SharedStream* const> streams) {
  for (const SharedStream* s : streams) {
    if (s == nullptr || s->owner_.get() != this) {
      return invalid_argument("decode: a stream is null or was opened by another recognizer");
    }
  }
  Waiter me;
  me.streams = streams;
  std::unique_lock lock(mutex_);
  waiting_.push_back(&me);
  while (!me.done) {
    if (round_running_) {
      round_done_.wait(lock);
    } else {
      lead_round(lock);
    }
  }
  if (!me.status) return me.status;
  return me.engine_calls;
}

void SharedRecognizer::lead_round(std::unique_lock<std::mutex>& lock) {
  std::vector<Waiter*> round;
  round.swap(waiting_);
  round_running_ = true;
  lock.unlock();
  std::vector<stream::Stream*> streams;
  for (const Waiter* w : round) {
    for (SharedStream* s : w->streams) streams.push_back(s->stream_.get());
  }
  Expected<int> calls = recognizer_->advance(streams);
  lock.lock();
  round_running_ = false;
  ++rounds_;
  if (calls) engine_calls_ += *calls;
  for (Waiter* w : round) {
    w->status = calls.status();
    w->engine_calls = calls ? *calls : 0;
    w->done = true;
  }
  round_done_.notify_all();
}

long long SharedRecognizer::rounds() const {
  std::lock_guard lock(mutex_);
  return rounds_;
}

long long SharedRecognizer::engine_calls() const {
  std::lock_guard lock(mutex_);
  return engine_calls_;
}

}  // namespace voxrt::embed
