#include "server/upload_pool.h"

#include <atomic>
#include <nlohmann/json.hpp>

#include "audio/encoded_audio_reader.h"
#include "core/thread_name.h"
#include "server/protocol.h"
#include "server/transcription_request.h"

namespace voxrt::server {

namespace http = boost::beast::http;

// Audio is read and queued in pieces of this length, so one long file shares the worker with
// live streams and never sits decoded in memory.
constexpr int kUploadPieceMs = 1000;

// One upload: decoded and fed on an upload thread; its stream's replies come back on a compute
// worker thread (StreamSink), and the HTTP answer is given exactly once by whichever side ends it.
class UploadJob : public StreamSink, public std::enable_shared_from_this<UploadJob> {
 public:
  UploadJob(UploadPool& pool, UploadPool::Reservation reservation, HttpRequest request,
            UploadPool::Respond respond)
      : pool_(pool),
        reservation_(std::move(reservation)),
        request_(std::move(request)),
        respond_(std::move(respond)),
        http_version_(request_.version()),
        keep_alive_(request_.keep_alive()) {}

  // Upload thread: parse, decode, feed; returns when all audio is queued or the upload ended.
  void run();
  // Any thread: stop feeding, answer 503, drop the stream.
  void cancel() {
    {
      std::lock_guard lock(mutex_);
      cancelled_ = true;
    }
    wake_.notify_all();
  }
  void answer_shutting_down() {
    respond_once(error(http::status::service_unavailable, "shutting_down",
                       "the server is shutting down; send the upload again"));
  }

  // StreamSink (compute worker thread).
  void send_text(std::string message) override;
  void close(int close_code, std::string reason) override;
  void resume_reading() override {
    {
      std::lock_guard lock(mutex_);
      resumed_ = true;
    }
    wake_.notify_all();
  }

 private:
  HttpResponse error(http::status status, std::string_view kind, std::string_view message) const {
    return error_response(http_version_, keep_alive_, status, kind, message);
  }
  void respond_once(HttpResponse response) {
    if (responded_.exchange(true)) return;
    respond_(std::move(response));
    std::lock_guard lock(mutex_);
    reservation_.reset();  // the place is free once the client has its answer
  }
  // Answers with `response` after dropping the stream (its slot goes back to the pool).
  void end_early(HttpResponse response) {
    if (admitted_) workers_->cancel(id_);
    respond_once(std::move(response));
  }

  UploadPool& pool_;
  std::optional<UploadPool::Reservation> reservation_;
  HttpRequest request_;
  UploadPool::Respond respond_;
  const unsigned http_version_;
  const bool keep_alive_;
  std::string response_format_ = "json";
  stream::WhisperStreamChoices whisper_;  // the request's prompt and temperatures
  // The compute workers of the model version this upload was admitted to.
  std::shared_ptr<WorkerPool> workers_;
  StreamId id_ = 0;
  bool admitted_ = false;
  std::atomic<bool> responded_{false};
  // Decoded duration, for verbose_json; written by the upload thread before finish().
  double duration_s_ = 0;

  std::mutex mutex_;
  std::condition_variable wake_;
  bool resumed_ = false;
  bool closed_ = false;
  bool cancelled_ = false;

  // Compute worker thread only.
  std::vector<TranscriptionSegment> segments_;
  std::string error_kind_;
  std::string error_message_;
};

void UploadJob::run() {
  {
    std::lock_guard lock(mutex_);
    if (cancelled_) return answer_shutting_down();
  }
  const auto content_type = request_[http::field::content_type];
  auto parsed = parse_transcription_request(
      std::string_view(content_type.data(), content_type.size()), request_.body());
  if (!parsed) {
    pool_.metrics_->count_error("bad_upload");
    return respond_once(error(http::status::bad_request, "bad_upload", parsed.status().message()));
  }
  response_format_ = parsed->response_format;
  whisper_ = parsed->whisper;
  // The body is not needed any more; the file's bytes move into the reader.
  request_.body().clear();
  request_.body().shrink_to_fit();
  auto reader = audio::EncodedAudioReader::open(std::move(parsed->file_bytes), "uploaded file");
  if (!reader) {
    pool_.metrics_->count_error("bad_upload");
    return respond_once(error(http::status::bad_request, "bad_upload", reader.status().message()));
  }
  audio::EncodedAudioReader& audio = **reader;
  const int rate = audio.sample_rate_hz();
  if (rate < kMinSampleRateHz || rate > kMaxSampleRateHz) {
    pool_.metrics_->count_error("bad_upload");
    return respond_once(error(http::status::bad_request, "bad_upload",
                              str_cat("the file's sample rate is ", rate, " Hz; expected ",
                                      kMinSampleRateHz, "..", kMaxSampleRateHz)));
  }
  const long long max_frames =
      static_cast<long long>(rate) * static_cast<long long>(pool_.config_.max_upload_audio_s);
  auto too_long = [&](std::string_view what) {
    pool_.metrics_->count_refusal("upload_too_long");
    return error(http::status::payload_too_large, "upload_too_long",
                 str_cat("the audio ", what, " longer than the server's limit of ",
                         pool_.config_.max_upload_audio_s, " s (--max-upload-audio-s)"));
  };
  if (audio.declared_frames() && *audio.declared_frames() > max_frames) {
    return respond_once(too_long("is declared"));
  }
  // OpenAI's `model` field names a model of the repository (ignored with a single engine).
  auto admission = pool_.models_.admit(parsed->model, shared_from_this());
  if (!admission) {
    if (admission.status().code() == StatusCode::kNotFound) {
      pool_.metrics_->count_refusal("model_not_found");
      return respond_once(
          error(http::status::not_found, "model_not_found", admission.status().message()));
    }
    const bool draining = pool_.models_.draining();
    pool_.metrics_->count_refusal(draining ? "shutting_down" : "max_streams");
    return respond_once(error(http::status::service_unavailable,
                              draining ? "shutting_down" : "max_streams",
                              admission.status().message()));
  }
  workers_ = std::move(admission->pool);
  id_ = admission->id;
  admitted_ = true;
  StreamSettings settings;
  settings.sample_rate_hz = rate;
  settings.words = true;
  // Formats with times: Whisper-family models give them only decoding with timestamp tokens
  // (other families ignore the choice).
  if (response_format_ != "json" && response_format_ != "text") settings.decoding.timestamps = true;
  settings.whisper = whisper_;
  settings.filling_partials = false;
  settings.max_buffered_samples =
      static_cast<long long>(rate) * pool_.config_.max_buffered_ms / 1000;
  settings.cancel_on_drain = true;
  workers_->configure(id_, settings);
  const auto piece = static_cast<std::size_t>(rate) * kUploadPieceMs / 1000;
  for (;;) {
    std::vector<float> samples;
    auto got = audio.read(piece, samples);
    if (!got) {
      pool_.metrics_->count_error("bad_upload");
      return end_early(error(http::status::bad_request, "bad_upload", got.status().message()));
    }
    if (*got == 0) break;
    if (audio.frames_read() > max_frames) return end_early(too_long("is"));
    const bool over_bound = workers_->push_audio(id_, std::move(samples), Clock::now());
    std::unique_lock lock(mutex_);
    if (over_bound) wake_.wait(lock, [&] { return resumed_ || closed_ || cancelled_; });
    resumed_ = false;
    if (closed_) return;  // the worker ended the stream and answered
    if (cancelled_) {
      lock.unlock();
      return end_early(error(http::status::service_unavailable, "shutting_down",
                             "the server is shutting down; send the upload again"));
    }
  }
  duration_s_ = static_cast<double>(audio.frames_read()) / rate;
  workers_->finish(id_, Clock::now());
  // The answer comes through close() once the worker has decoded the rest.
}

void UploadJob::send_text(std::string message) {
  auto reply = nlohmann::json::parse(message, nullptr, false);
  if (reply.is_discarded() || !reply.is_object()) return;
  if (reply.contains("error")) {
    error_message_ = reply.value("error", std::string("error"));
    error_kind_ = reply.value("kind", std::string("error"));
    return;
  }
  if (!reply.contains("text")) return;  // partials do not matter for an upload
  TranscriptionSegment segment;
  segment.text = reply.value("text", std::string());
  if (reply.contains("result") && reply["result"].is_array()) {
    for (const auto& w : reply["result"]) {
      decode::WordResult word;
      word.word = w.value("word", std::string());
      word.start_s = w.value("start", 0.0);
      word.end_s = w.value("end", 0.0);
      word.confidence = w.value("conf", 0.0f);
      segment.words.push_back(std::move(word));
    }
  }
  segment.language = reply.value("language", std::string());
  if (reply.contains("segments") && reply["segments"].is_array()) {
    for (const auto& t : reply["segments"]) {
      segment.timed.push_back(
          {t.value("text", std::string()), t.value("start", 0.0), t.value("end", 0.0)});
    }
  }
  segments_.push_back(std::move(segment));
}

void UploadJob::close(int close_code, std::string reason) {
  if (!error_kind_.empty()) {
    respond_once(error(
        error_kind_ == "engine" ? http::status::internal_server_error : http::status::bad_request,
        error_kind_, error_message_));
  } else if (close_code == kCloseNormal) {
    auto formatted = format_transcription(segments_, response_format_, duration_s_);
    respond_once(make_response(http_version_, keep_alive_, http::status::ok,
                               std::move(formatted.body), std::move(formatted.content_type)));
  } else if (close_code == kCloseGoingAway) {
    answer_shutting_down();
  } else {
    respond_once(error(http::status::bad_request, reason, reason));
  }
  {
    std::lock_guard lock(mutex_);
    closed_ = true;
  }
  wake_.notify_all();
}

// ---- the pool ----------------------------------------------------------------------------------

UploadPool::Reservation::~Reservation() {
  if (pool_) pool_->release_place();
}

UploadPool::UploadPool(const ServerConfig& config, ModelRouter& models,
                       std::shared_ptr<ServerMetrics> metrics)
    : config_(config), models_(models), metrics_(std::move(metrics)) {
  for (int i = 0; i < config_.upload_threads; ++i) {
    threads_.emplace_back([this] {
      name_this_thread("voxrt-upload");
      run();
    });
  }
}

UploadPool::~UploadPool() {
  cancel_all();
  {
    std::lock_guard lock(mutex_);
    stopping_ = true;
  }
  wake_.notify_all();
  for (auto& t : threads_) t.join();
}

std::optional<UploadPool::Reservation> UploadPool::reserve() {
  std::lock_guard lock(mutex_);
  if (cancelled_ || in_flight_ >= config_.max_pending_uploads) return std::nullopt;
  ++in_flight_;
  metrics_->uploads_in_flight.Increment();
  return Reservation(this);
}

void UploadPool::release_place() {
  std::lock_guard lock(mutex_);
  --in_flight_;
  metrics_->uploads_in_flight.Decrement();
}

int UploadPool::in_flight() const {
  std::lock_guard lock(mutex_);
  return in_flight_;
}

void UploadPool::submit(Reservation reservation, HttpRequest request, Respond respond) {
  auto job = std::make_shared<UploadJob>(*this, std::move(reservation), std::move(request),
                                         std::move(respond));
  {
    std::lock_guard lock(mutex_);
    if (!cancelled_) {
      queue_.push_back(std::move(job));
      wake_.notify_one();
      return;
    }
  }
  job->answer_shutting_down();
}

void UploadPool::cancel_all() {
  std::deque<std::shared_ptr<UploadJob>> queued;
  std::vector<std::shared_ptr<UploadJob>> running;
  {
    std::lock_guard lock(mutex_);
    cancelled_ = true;
    queued.swap(queue_);
    for (auto& weak : running_)
      if (auto job = weak.lock()) running.push_back(std::move(job));
  }
  for (auto& job : queued) job->answer_shutting_down();
  for (auto& job : running) job->cancel();
}

void UploadPool::run() {
  for (;;) {
    std::shared_ptr<UploadJob> job;
    {
      std::unique_lock lock(mutex_);
      wake_.wait(lock, [&] { return stopping_ || !queue_.empty(); });
      if (queue_.empty()) return;
      job = std::move(queue_.front());
      queue_.pop_front();
      running_.push_back(job);
    }
    job->run();
    std::lock_guard lock(mutex_);
    std::erase_if(running_, [&](const std::weak_ptr<UploadJob>& w) {
      auto held = w.lock();
      return !held || held == job;
    });
  }
}

}  // namespace voxrt::server
