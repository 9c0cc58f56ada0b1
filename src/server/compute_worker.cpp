#include "server/compute_worker.h"

#include <algorithm>
#include <cstdint>
#include <functional>

#include "backends/device_backend.h"
#include "core/thread_name.h"
#include "runtime/device_plugin.h"
#include "server/protocol.h"

namespace voxrt::server {

namespace {

backends::DeviceBackend* cuda_backend_or_null() {
  auto backend = runtime::load_device_backend(DeviceKind::kCuda);
  return backend ? *backend : nullptr;
}

}  // namespace

Expected<std::unique_ptr<ComputeWorker>> ComputeWorker::create(
    const ServerConfig& config, std::shared_ptr<ServerMetrics> metrics,
    std::optional<ComputeDevice> device) {
  VOXRT_RETURN_IF_ERROR(config.validate());
  auto worker = std::unique_ptr<ComputeWorker>(new ComputeWorker(config, std::move(metrics)));
  if (device && device->cuda) {
    backends::DeviceBackend* backend = cuda_backend_or_null();
    if (!backend) {
      return unsupported("serve: --devices ", device->ordinal, ": ",
                         runtime::load_device_backend(DeviceKind::kCuda).status().message());
    }
    // The engine's weights and the worker's sessions go to the device current on the thread
    // that loads and runs them.
    VOXRT_RETURN_IF_ERROR(backend->select_device(device->ordinal));
  }
  VOXRT_ASSIGN_OR_RETURN(worker->recognizer_, stream::Recognizer::create(config.recognizer));
  worker->metrics_->slots_capacity.Increment(config.recognizer.max_streams);
  const bool engine_on_gpu = worker->recognizer_->engine_device() == DeviceKind::kCuda;
  if (device && device->cuda != engine_on_gpu) {
    return invalid_argument("serve: --devices ", device->to_string(), ": the engine ",
                            config.recognizer.engine_path, " was built for ",
                            engine_on_gpu ? "cuda" : "cpu",
                            " (voxrt build --device); serve it with --devices ",
                            engine_on_gpu ? "0 (a GPU ordinal)" : "cpu");
  }
  if (device) worker->device_ = *device;
  worker->device_.cuda = engine_on_gpu;
  if (config.front_end_threads > 1) {
    worker->front_end_pool_ = std::make_unique<ThreadPool>(config.front_end_threads);
  }
  worker->thread_ = std::thread([w = worker.get(), explicit_device = device.has_value()] {
    name_this_thread("voxrt-worker");
    if (explicit_device && w->device_.cuda)
      (void)cuda_backend_or_null()->select_device(w->device_.ordinal);
    w->run();
  });
  return worker;
}

ComputeWorker::~ComputeWorker() {
  if (thread_.joinable()) drain_and_stop();
  // Gauges count up and down, so a model version's workers can come and go (hot reload).
  if (recognizer_) metrics_->slots_capacity.Decrement(config_.recognizer.max_streams);
}

Expected<StreamId> ComputeWorker::admit(std::shared_ptr<StreamSink> sink) {
  if (draining_.load()) return failed_precondition("the server is shutting down");
  int admitted = admitted_.load();
  do {
    if (admitted >= config_.recognizer.max_streams) {
      return resource_exhausted("all ", config_.recognizer.max_streams,
                                " streams are in use (--max-streams); try again later");
    }
  } while (!admitted_.compare_exchange_weak(admitted, admitted + 1));
  metrics_->active_streams.Increment();
  version_metrics_.active_streams.Increment();
  version_metrics_.streams_total.Increment();
  streams_admitted_total_.fetch_add(1);
  const StreamId id = next_id_.fetch_add(1);
  Command open;
  open.kind = Command::Kind::kOpen;
  open.sink = std::move(sink);
  {
    std::lock_guard lock(mutex_);
    inboxes_[id];
  }
  push(id, std::move(open));
  return id;
}

void ComputeWorker::push(StreamId id, Command command) {
  {
    std::lock_guard lock(mutex_);
    auto it = inboxes_.find(id);
    if (it == inboxes_.end()) return;  // already closed: nothing more to do for it
    it->second.commands.push_back(std::move(command));
    if (!it->second.listed) {
      it->second.listed = true;
      inboxes_with_commands_.push_back(id);
    }
    has_commands_ = true;
  }
  wake_.notify_one();
}

void ComputeWorker::configure(StreamId id, StreamSettings settings) {
  {
    std::lock_guard lock(mutex_);
    auto it = inboxes_.find(id);
    if (it == inboxes_.end()) return;
    it->second.max_buffered_samples = settings.max_buffered_samples;
    it->second.feed_budget_samples =
        static_cast<long long>(settings.sample_rate_hz) * config_.max_feed_ms_per_round / 1000;
    it->second.min_frame_cost_samples =
        std::max<long long>(1, static_cast<long long>(settings.sample_rate_hz) / 100);
  }
  Command command;
  command.kind = Command::Kind::kConfigure;
  command.settings = std::move(settings);
  push(id, std::move(command));
}

bool ComputeWorker::push_audio(StreamId id, std::vector<float> samples,
                               Clock::time_point received) {
  bool over_bound = false;
  {
    std::lock_guard lock(mutex_);
    auto it = inboxes_.find(id);
    if (it == inboxes_.end()) return false;
    Inbox& inbox = it->second;
    Command command;
    command.cost_samples =
        std::max(static_cast<long long>(samples.size()), inbox.min_frame_cost_samples);
    inbox.buffered_samples += command.cost_samples;
    command.kind = Command::Kind::kAudio;
    command.samples = std::move(samples);
    command.received = received;
    inbox.commands.push_back(std::move(command));
    if (!inbox.listed) {
      inbox.listed = true;
      inboxes_with_commands_.push_back(id);
    }
    has_commands_ = true;
    if (inbox.max_buffered_samples > 0 && inbox.buffered_samples > inbox.max_buffered_samples) {
      inbox.reading_paused = true;
      over_bound = true;
    }
  }
  wake_.notify_one();
  return over_bound;
}

void ComputeWorker::finish(StreamId id, Clock::time_point received, std::string close_reason) {
  Command command;
  command.kind = Command::Kind::kEof;
  command.received = received;
  command.close_reason = std::move(close_reason);
  push(id, std::move(command));
}

void ComputeWorker::cancel(StreamId id) {
  Command command;
  command.kind = Command::Kind::kCancel;
  push(id, std::move(command));
}

void ComputeWorker::drain_and_stop(std::chrono::milliseconds timeout) {
  draining_.store(true);
  {
    std::lock_guard lock(mutex_);
    if (!drain_requested_) drain_deadline_ = Clock::now() + timeout;
    drain_requested_ = true;
  }
  wake_.notify_one();
  if (thread_.joinable()) thread_.join();
}

void ComputeWorker::take_commands(std::vector<Taken>& out, bool everything) {
  // Only inboxes with commands are listed; one whose audio is over this round's budget stays
  // listed for the next round.
  inboxes_visiting_.swap(inboxes_with_commands_);
  inboxes_with_commands_.clear();
  for (StreamId id : inboxes_visiting_) {
    auto found = inboxes_.find(id);
    if (found == inboxes_.end()) continue;  // reaped since it was listed
    Inbox& inbox = found->second;
    long long taken_samples = 0;
    // Audio per stream per round is bounded by time at the stream's rate (16 kHz until known).
    const long long budget = inbox.feed_budget_samples;
    while (!inbox.commands.empty()) {
      Command& front = inbox.commands.front();
      if (front.kind == Command::Kind::kAudio) {
        const auto size = static_cast<long long>(front.samples.size());
        if (!everything && taken_samples > 0 && taken_samples + size > budget) break;
        taken_samples += size;
        inbox.buffered_samples -= front.cost_samples;
      }
      out.push_back(Taken{id, std::move(front), false});
      inbox.commands.pop_front();
    }
    inbox.listed = !inbox.commands.empty();
    if (inbox.listed) inboxes_with_commands_.push_back(id);
    if (inbox.reading_paused && !inbox.throttle_reported) {
      inbox.throttle_reported = true;
      Taken note{id, Command{}, false};
      note.command.kind = Command::Kind::kAudio;  // empty audio: marks the throttle warning
      note.command.received = Clock::time_point::min();
      out.push_back(std::move(note));
    }
    if (inbox.reading_paused && inbox.buffered_samples <= inbox.max_buffered_samples / 2) {
      inbox.reading_paused = false;
      inbox.throttle_reported = false;
      out.push_back(Taken{id, Command{}, true});
    }
  }
  inboxes_visiting_.clear();
  has_commands_ = !inboxes_with_commands_.empty();
}

void ComputeWorker::for_each_stream(std::size_t count, const std::function<void(std::size_t)>& fn) {
  // Below a few streams per thread the hand-off costs more than the work.
  constexpr std::int64_t kStreamsPerRange = 4;
  if (!front_end_pool_ || count < 2 * kStreamsPerRange) {
    for (std::size_t i = 0; i < count; ++i) fn(i);
    return;
  }
  front_end_pool_->parallel_for(static_cast<std::int64_t>(count), kStreamsPerRange,
                                [&](std::int64_t begin, std::int64_t end) {
                                  for (std::int64_t i = begin; i < end; ++i)
                                    fn(static_cast<std::size_t>(i));
                                });
}

void ComputeWorker::apply(std::vector<Taken>& taken) {
  // Opening inserts into live_, so it happens before any stream is fed in parallel.
  for (Taken& t : taken) {
    if (!t.resume && t.command.kind == Command::Kind::kOpen) apply_one(t.id, t.command);
  }
  // take_commands() keeps each stream's commands together and in order: one thread applies one
  // stream's run of commands (resampling, VAD, features), different streams run in parallel.
  struct Run {
    std::size_t begin = 0;
    std::size_t end = 0;
    Live* live = nullptr;
  };
  std::vector<Run> runs;
  for (std::size_t begin = 0; begin < taken.size();) {
    std::size_t end = begin + 1;
    while (end < taken.size() && taken[end].id == taken[begin].id) ++end;
    auto it = live_.find(taken[begin].id);
    if (it != live_.end()) {
      join_round(it->first, it->second);
      runs.push_back(Run{begin, end, &it->second});
    }
    begin = end;
  }
  for_each_stream(runs.size(), [&](std::size_t r) {
    for (std::size_t i = runs[r].begin; i < runs[r].end; ++i) {
      Taken& t = taken[i];
      if (t.resume) {
        if (!runs[r].live->closed) runs[r].live->sink->resume_reading();
      } else if (t.command.kind != Command::Kind::kOpen) {
        apply_one(t.id, t.command);
      }
    }
    // One thread per stream here, so its flag needs no lock; the count is shared.
    Live& live = *runs[r].live;
    if (!live.counted_ready && !live.closed && live.stream && live.stream->chunks_pending() > 0) {
      live.counted_ready = true;
      ready_streams_.fetch_add(1);
    }
  });
  taken.clear();
}

void ComputeWorker::mark_closing(StreamId id) {
  std::lock_guard lock(closing_mutex_);
  closing_.push_back(id);
}

void ComputeWorker::apply_one(StreamId id, Command& command) {
  if (command.kind == Command::Kind::kOpen) {
    Live& live = live_[id];
    live.sink = std::move(command.sink);
    return;
  }
  auto it = live_.find(id);
  if (it == live_.end()) return;
  Live& live = it->second;
  if (command.kind == Command::Kind::kCancel) {
    if (!live.closed) {
      live.closed = true;
      mark_closing(id);
    }
    return;
  }
  if (live.closed) return;
  switch (command.kind) {
    case Command::Kind::kConfigure:
      if (live.stream) {
        fail(id, live, "bad_config", "config after the stream started", kClosePolicy);
        return;
      }
      live.settings = std::move(command.settings);
      (void)open_stream(id, live);
      return;
    case Command::Kind::kAudio: {
      if (command.received == Clock::time_point::min()) {
        metrics_->count_refusal("throttled");
        live.warning = "throttled: more than " + std::to_string(config_.max_buffered_ms) +
                       " ms of audio queued; the server reads again when half of it is decoded";
        return;
      }
      if (live.eof) return;  // audio after eof (or during shutdown) is ignored
      if (!live.stream && !open_stream(id, live)) return;
      Status accepted = live.stream->accept_pcm(command.samples);
      if (!accepted) {
        fail(id, live, "bad_audio", accepted.message(), kClosePolicy);
        return;
      }
      metrics_->audio_seconds_total.Increment(static_cast<double>(command.samples.size()) /
                                              live.settings.sample_rate_hz);
      live.unanswered.push_back(command.received);
      live.last_fed = command.received;
      return;
    }
    case Command::Kind::kEof: {
      if (live.eof) return;
      if (!live.stream && !open_stream(id, live)) return;
      Status finished = live.stream->input_finished();
      if (!finished) {
        fail(id, live, "bad_audio", finished.message(), kClosePolicy);
        return;
      }
      live.eof = true;
      live.eof_received = command.received;
      live.close_reason = std::move(command.close_reason);
      return;
    }
    case Command::Kind::kOpen:
    case Command::Kind::kCancel: return;
  }
}

bool ComputeWorker::open_stream(StreamId id, Live& live) {
  stream::StreamOptions options;
  options.sample_rate_hz = live.settings.sample_rate_hz;
  options.decoder = live.settings.decoder;
  options.use_lm = live.settings.use_lm;
  options.decoding = live.settings.decoding;
  options.whisper = live.settings.whisper;
  options.filling_partials = live.settings.filling_partials;
  const auto& phrases = live.settings.phrase_list;
  // Hotwords need beam search in some families (CTC): a stream that sends them without choosing
  // a decoder gets it there; the transducer's greedy search takes them too.
  const bool needs_beam = !phrases.empty() && recognizer_->hotwords_need_beam_search();
  if (needs_beam && !options.decoder) options.decoder = stream::DecoderKind::kBeam;
  if (needs_beam && options.decoder == stream::DecoderKind::kGreedy) {
    live.warning = "phrase_list ignored: the stream asked for the greedy decoder";
  } else {
    // A phrase the model cannot spell is left out with a warning; the stream goes on.
    for (std::size_t i = 0; i < phrases.size(); ++i) {
      auto phrase = recognizer_->normalise_hotword(phrases[i]);
      if (phrase) {
        options.hotwords.push_back(std::move(*phrase));
      } else {
        live.warning += (live.warning.empty() ? "" : "; ") + std::string("phrase_list[") +
                        std::to_string(i) + "] ignored: " + phrase.status().message();
      }
    }
  }
  auto opened = recognizer_->open_stream(options);
  if (!opened) {
    fail(id, live, "bad_config", opened.status().message(), kClosePolicy);
    return false;
  }
  live.stream = std::move(*opened);
  metrics_->slots_in_use.Increment();
  return true;
}

void ComputeWorker::fail(StreamId id, Live& live, std::string_view kind, const std::string& message,
                         int close_code) {
  metrics_->count_error(kind);
  if (kind == "engine") {
    engine_errors_.fetch_add(1);
    version_metrics_.engine_errors_total.Increment();
  }
  live.sink->send_text(error_json(kind, message));
  live.sink->close(close_code, std::string(kind));
  live.closed = true;
  mark_closing(id);
}

void ComputeWorker::reap() {
  // Gauges count up and down (not set), so that several workers can share them.
  for (StreamId id : closing_) {
    auto it = live_.find(id);
    if (it == live_.end()) continue;
    if (it->second.stream) metrics_->slots_in_use.Decrement();
    live_.erase(it);  // the Stream's destructor returns its slot
    {
      std::lock_guard lock(mutex_);
      inboxes_.erase(id);
    }
    admitted_.fetch_sub(1);
    metrics_->active_streams.Decrement();
    version_metrics_.active_streams.Decrement();
  }
  closing_.clear();
}

void ComputeWorker::join_round(StreamId id, Live& live) {
  if (live.in_round) return;
  live.in_round = true;
  round_members_.push_back(id);
}

Clock::time_point ComputeWorker::oldest_ready_frame() const {
  Clock::time_point oldest = Clock::now();
  for (StreamId id : round_members_) {
    auto it = live_.find(id);
    if (it == live_.end()) continue;
    const Live& live = it->second;
    if (!live.closed && live.stream && live.stream->chunks_pending() > 0 &&
        !live.unanswered.empty())
      oldest = std::min(oldest, live.unanswered.front());
  }
  return oldest;
}

void ComputeWorker::begin_drain() {
  drain_started_ = true;
  const auto now = Clock::now();
  for (auto& [id, live] : live_) {
    if (live.closed) continue;
    if (!live.stream || live.settings.cancel_on_drain) {
      live.sink->close(kCloseGoingAway, "server shutting down");
      live.closed = true;
      closing_.push_back(id);
      continue;
    }
    if (!live.eof) {
      (void)live.stream->input_finished();
      live.eof = true;
      live.eof_received = now;
    }
    join_round(id, live);
  }
}

void ComputeWorker::close_remaining_after_drain_timeout() {
  for (auto& [id, live] : live_) {
    if (live.closed) continue;
    metrics_->count_error("drain_timeout");
    live.sink->close(kCloseGoingAway, "server shutting down (drain timeout)");
    live.closed = true;
    closing_.push_back(id);
  }
  reap();
}

void ComputeWorker::run_round() {
  std::vector<stream::Stream*> streams;
  std::vector<StreamId> ids;
  std::vector<long long> pending;
  for (StreamId id : round_members_) {
    auto it = live_.find(id);
    if (it == live_.end()) continue;
    Live& live = it->second;
    live.in_round = false;
    live.counted_ready = false;
    if (live.closed || !live.stream) continue;
    const auto chunks = static_cast<long long>(live.stream->chunks_pending());
    if (chunks > 0 || !live.unanswered.empty() || (live.eof && !live.stream->finished())) {
      streams.push_back(live.stream.get());
      ids.push_back(id);
      pending.push_back(chunks);
    }
  }
  round_members_.clear();
  ready_streams_.store(0);
  if (ids.empty()) return;
  // Recognizer::advance runs the k-th pending chunk of every stream together, max_batch at a
  // time; replay that here for the batch-size histogram.
  long long total_chunks = 0;
  for (long long p : pending) total_chunks += p;
  const long long max_batch = recognizer_->config().max_batch;
  for (long long layer = 0;; ++layer) {
    long long count = 0;
    for (long long p : pending) count += p > layer ? 1 : 0;
    if (count == 0) break;
    for (long long left = count; left > 0; left -= max_batch)
      metrics_->batch_size.Observe(static_cast<double>(std::min(left, max_batch)));
  }
  const auto start = Clock::now();
  for (StreamId id : ids) {
    for (const auto& received : live_[id].unanswered)
      metrics_->queue_delay_seconds.Observe(
          std::chrono::duration<double>(start - received).count());
  }
  auto calls = recognizer_->advance(streams);
  const auto end = Clock::now();
  if (!calls) {
    for (StreamId id : ids) fail(id, live_[id], "engine", calls.status().message(), kCloseInternal);
    return;
  }
  if (total_chunks > 0) {
    metrics_->engine_seconds.Observe(std::chrono::duration<double>(end - start).count());
    metrics_->engine_calls_total.Increment(*calls);
    metrics_->count_chunks(total_chunks);
  }
  for_each_stream(ids.size(), [&](std::size_t i) {
    Live& live = live_.at(ids[i]);
    answer(ids[i], live, live.stream->take_results());
  });
  // Streams with work left (a finishing stream, chunks held back by the VAD or the wake word)
  // stay for the next round, as every open stream used to.
  for (StreamId id : ids) {
    Live& live = live_.at(id);
    if (live.closed) continue;
    const bool chunks_left = live.stream->chunks_pending() > 0;
    if (chunks_left || (live.eof && !live.stream->finished())) {
      join_round(id, live);
      if (chunks_left) {
        live.counted_ready = true;
        ready_streams_.fetch_add(1);
      }
    }
  }
}

void ComputeWorker::answer(StreamId id, Live& live, std::vector<stream::StreamResult> results) {
  const auto now = Clock::now();
  auto seconds_since = [&](Clock::time_point t) {
    return std::chrono::duration<double>(now - t).count();
  };
  auto take_warning = [&] {
    std::string warning;
    warning.swap(live.warning);
    return warning;
  };
  const bool stream_done = live.eof && live.stream->finished();
  std::vector<std::string> finals;
  for (const auto& r : results) {
    if (!r.result.is_final) {
      live.partial = r.result.text;
      if (!live.partial.empty() && !live.partial_nonempty_sent) {
        live.partial_nonempty_sent = true;
        live.first_partial_ms = 1000 * seconds_since(live.last_fed);
        metrics_->first_partial_latency_seconds.Observe(live.first_partial_ms / 1000);
      }
      continue;
    }
    const double final_s = seconds_since(stream_done ? live.eof_received : live.last_fed);
    const FinalFigures figures{r.endpoint == decode::EndpointReason::kNone
                                   ? "eof"
                                   : decode::endpoint_reason_name(r.endpoint),
                               live.first_partial_ms, 1000 * final_s};
    finals.push_back(final_json(r.result, live.settings.words, take_warning(), &figures));
    metrics_->final_latency_seconds.Observe(final_s);
    live.partial.clear();
    live.partial_nonempty_sent = false;
    live.first_partial_ms = -1;
  }
  // Vosk clients wait for a final after eof; the Recognizer gives none when the last utterance
  // already ended at an endpoint, so answer with an empty one.
  if (stream_done && finals.empty() && !live.final_after_eof_sent) {
    decode::DecodingResult empty;
    empty.is_final = true;
    const FinalFigures figures{"eof", -1, 1000 * seconds_since(live.eof_received)};
    finals.push_back(final_json(empty, live.settings.words, take_warning(), &figures));
    metrics_->final_latency_seconds.Observe(figures.final_ms / 1000);
  }
  if (stream_done) live.final_after_eof_sent = true;
  // Vosk clients wait for one reply per audio frame: finals answer the first frame, partials
  // the others; finals with no frame left to answer (end of stream) follow.
  for (const auto& received : live.unanswered) {
    metrics_->reply_latency_seconds.Observe(seconds_since(received));
    version_metrics_.reply_latency_seconds.Observe(seconds_since(received));
    if (!finals.empty()) {
      for (auto& f : finals) live.sink->send_text(std::move(f));
      finals.clear();
    } else {
      live.sink->send_text(partial_json(live.partial, take_warning()));
    }
  }
  live.unanswered.clear();
  for (auto& f : finals) live.sink->send_text(std::move(f));
  if (stream_done) {
    live.sink->close(drain_started_ ? kCloseGoingAway : kCloseNormal,
                     drain_started_ ? "server shutting down" : live.close_reason);
    live.closed = true;
    mark_closing(id);
  }
}

void ComputeWorker::run() {
  std::vector<Taken> taken;
  for (;;) {
    bool drain = false;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return has_commands_ || drain_requested_; });
      drain = drain_requested_;
      take_commands(taken, drain);
    }
    apply(taken);
    reap();
    if (drain) {
      if (!drain_started_) begin_drain();
      run_round();
      reap();
      if (live_.empty()) break;
      if (Clock::now() >= drain_deadline_) {
        close_remaining_after_drain_timeout();
        break;
      }
      continue;
    }
    if (config_.max_queue_delay_us > 0) {
      int ready = ready_streams_.load();
      if (ready > 0 && ready < recognizer_->config().max_batch) {
        const Clock::time_point oldest = oldest_ready_frame();
        const auto deadline = oldest + std::chrono::microseconds(config_.max_queue_delay_us);
        while (ready < recognizer_->config().max_batch && Clock::now() < deadline) {
          {
            std::unique_lock lock(mutex_);
            wake_.wait_until(lock, deadline, [&] { return has_commands_ || drain_requested_; });
            if (!has_commands_) break;
            take_commands(taken, false);
          }
          apply(taken);
          ready = ready_streams_.load();
        }
      }
    }
    run_round();
    reap();
  }
}

}  // namespace voxrt::server
