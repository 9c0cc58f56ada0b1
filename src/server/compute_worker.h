// The one compute thread of the server (STYLE.md 11): it owns the Recognizer and is the only
// thread that calls Recognizer::advance; with front_end_threads > 1 it hands the per-stream work
// of a round (feeding audio, turning results into replies) to a pool, one stream per thread at
// a time, and the engine call stays one batched call. Network threads only hand it
// commands (open, audio, eof, cancel) through per-stream bounded queues; each round the worker
// drains the queues, feeds the streams, and advances every stream with a ready chunk in one
// call, which batches ready chunks across streams (the dynamic batcher). Replies go back through
// each stream's StreamSink, which posts them to the connection's own executor.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <functional>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <thread>
#include <unordered_map>
#include <vector>

#include "core/thread_pool.h"
#include "server/server_config.h"
#include "server/server_metrics.h"
#include "stream/recognizer.h"

namespace voxrt::server {

using Clock = std::chrono::steady_clock;
using StreamId = std::uint64_t;

// Called on the worker thread; implementations must only post to their connection and return.
class StreamSink {
 public:
  virtual ~StreamSink() = default;
  // One JSON text message for the client (replies in the order of the frames they answer).
  virtual void send_text(std::string message) = 0;
  // The stream is over (after the messages already sent): close with this WebSocket code.
  virtual void close(int close_code, std::string reason) = 0;
  // The stream's queued audio drained below the bound: the connection may read again.
  virtual void resume_reading() = 0;
};

struct StreamSettings {
  int sample_rate_hz = 16000;
  bool words = false;
  std::vector<std::string> phrase_list;
  // The client's decoding choices (protocol.h ClientConfig); unset: the server's.
  std::optional<stream::DecoderKind> decoder;
  std::optional<bool> use_lm;
  stream::DecodingChoices decoding;
  // Whisper-family models: the client's initial prompt and temperatures; unset: the server's.
  stream::WhisperStreamChoices whisper;
  // Growing-window partials (RecognizerConfig::partial_interval_ms); off for uploads, whose
  // partials nobody reads.
  bool filling_partials = true;
  // Audio this stream may queue ahead of the model, in samples (0: no bound); beyond it
  // push_audio() asks the caller to stop reading. Every frame counts as at least 10 ms of audio,
  // so a flood of empty frames (each of which gets a reply) is throttled like audio.
  long long max_buffered_samples = 0;
  // A graceful shutdown closes this stream at once (StreamSink::close with 1001,
  // "shutting_down") instead of decoding the rest of its audio: uploads, so that live streams'
  // finals are not held back behind hours of queued audio.
  bool cancel_on_drain = false;
};

// WebSocket close codes the worker uses (RFC 6455).
inline constexpr int kCloseNormal = 1000;
inline constexpr int kCloseGoingAway = 1001;
inline constexpr int kClosePolicy = 1008;
inline constexpr int kCloseTooBig = 1009;
inline constexpr int kCloseInternal = 1011;
inline constexpr int kCloseTryLater = 1013;

class ComputeWorker {
 public:
  // `device`: where this worker runs (its engine is loaded there); nullopt: where the engine was
  // built for, on the current device. Refused when the engine was built for another kind.
  static Expected<std::unique_ptr<ComputeWorker>> create(
      const ServerConfig& config, std::shared_ptr<ServerMetrics> metrics,
      std::optional<ComputeDevice> device = std::nullopt);
  ~ComputeWorker();
  ComputeWorker(const ComputeWorker&) = delete;
  ComputeWorker& operator=(const ComputeWorker&) = delete;

  // ---- called from network threads ----
  // Reserves one of max_streams; refused (resource_exhausted / failed_precondition) when all are
  // taken or the server is shutting down.
  Expected<StreamId> admit(std::shared_ptr<StreamSink> sink);
  // Opens the recognizer stream (once, before any audio).
  void configure(StreamId id, StreamSettings settings);
  // Queues samples; returns true when the stream is now over its bound and the caller should
  // stop reading until StreamSink::resume_reading().
  bool push_audio(StreamId id, std::vector<float> samples, Clock::time_point received);
  // End of input: the final result follows, then the stream closes with 1000 (1001 during a
  // drain) and `close_reason` ("eof"; "idle_timeout" when the server ends a silent stream).
  void finish(StreamId id, Clock::time_point received, std::string close_reason = "eof");
  // The client is gone or misbehaved: drop the stream and free its slot without replies.
  void cancel(StreamId id);
  // Graceful shutdown: refuse new streams, finish every live one (finals sent) except those
  // marked cancel_on_drain, then stop the thread. Streams still open after `timeout` are closed
  // with 1001 and no final (counted as drain_timeout). Blocks until done.
  void drain_and_stop(std::chrono::milliseconds timeout = std::chrono::hours(1));

  int admitted_streams() const { return admitted_.load(); }
  // Streams admitted since start, and those that ended with an engine error (the model router
  // retires a version whose streams fail too often).
  long long streams_admitted_total() const { return streams_admitted_total_.load(); }
  long long engine_errors() const { return engine_errors_.load(); }
  int slots_in_use() const { return recognizer_->streams_open(); }
  bool draining() const { return draining_.load(); }
  int capacity() const { return config_.recognizer.max_streams; }
  const ComputeDevice& device() const { return device_; }
  const stream::Recognizer& recognizer() const { return *recognizer_; }

 private:
  struct Command {
    enum class Kind { kOpen, kConfigure, kAudio, kEof, kCancel };
    Kind kind = Kind::kAudio;
    std::vector<float> samples;
    // What the audio counts against the stream's bound: its samples, at least 10 ms' worth.
    long long cost_samples = 0;
    Clock::time_point received;
    std::string close_reason;  // kEof
    StreamSettings settings;
    std::shared_ptr<StreamSink> sink;
  };
  // Shared between network threads and the worker, under mutex_.
  struct Inbox {
    std::deque<Command> commands;
    long long buffered_samples = 0;
    long long max_buffered_samples = 0;  // 0: no bound (HTTP uploads, bounded by their size)
    long long feed_budget_samples = 16000;
    long long min_frame_cost_samples = 160;  // 10 ms at the stream's rate
    bool reading_paused = false;
    bool throttle_reported = false;
    // In inboxes_with_commands_: the worker visits only inboxes that have something, so a round
    // costs what arrived, not the number of open streams.
    bool listed = false;
  };
  // Worker thread only.
  struct Live {
    std::shared_ptr<StreamSink> sink;
    StreamSettings settings;
    std::unique_ptr<stream::Stream> stream;
    // Receive times of frames fed and not yet answered (one reply each).
    std::deque<Clock::time_point> unanswered;
    Clock::time_point last_fed;
    Clock::time_point eof_received;
    std::string close_reason = "eof";
    std::string partial;
    bool partial_nonempty_sent = false;
    // The current utterance's first-partial latency (FinalFigures), -1 before its first partial.
    double first_partial_ms = -1;
    bool eof = false;
    bool closed = false;
    bool final_after_eof_sent = false;
    std::string warning;
    // In round_members_ (fed, finishing or with chunks left since the last round).
    bool in_round = false;
    // Counted in ready_streams_ (has a chunk for the engine).
    bool counted_ready = false;
  };
  struct Taken {
    StreamId id = 0;
    Command command;
    bool resume = false;
  };

  ComputeWorker(const ServerConfig& config, std::shared_ptr<ServerMetrics> metrics)
      : config_(config),
        metrics_(std::move(metrics)),
        version_metrics_(metrics_->version_metrics(config.model_label, config.version_label)) {}
  void push(StreamId id, Command command);
  void run();
  // Moves queued commands out (at most max_feed_ms_per_round of audio per stream unless
  // `everything`); needs mutex_ held.
  void take_commands(std::vector<Taken>& out, bool everything);
  void apply(std::vector<Taken>& taken);
  void apply_one(StreamId id, Command& command);
  bool open_stream(StreamId id, Live& live);
  void join_round(StreamId id, Live& live);
  // The oldest unanswered frame of a stream with a chunk ready (now when there is none).
  Clock::time_point oldest_ready_frame() const;
  void run_round();
  // fn(i) for i in [0, count), each i on one thread; on the front-end pool when there is one.
  void for_each_stream(std::size_t count, const std::function<void(std::size_t)>& fn);
  // Thread-safe: apply_one and answer may run on front-end threads.
  void mark_closing(StreamId id);
  void answer(StreamId id, Live& live, std::vector<stream::StreamResult> results);
  void fail(StreamId id, Live& live, std::string_view kind, const std::string& message,
            int close_code);
  // Destroys the streams marked closed (their slots return to the pool).
  void reap();
  void begin_drain();

  ServerConfig config_;
  std::shared_ptr<ServerMetrics> metrics_;
  // This worker's model version's own metrics (labels from config_.model_label/version_label).
  ServerMetrics::VersionMetrics version_metrics_;
  ComputeDevice device_;
  std::shared_ptr<stream::Recognizer> recognizer_;
  std::atomic<int> admitted_{0};
  std::atomic<long long> streams_admitted_total_{0};
  std::atomic<long long> engine_errors_{0};
  std::atomic<bool> draining_{false};
  std::atomic<StreamId> next_id_{1};

  std::mutex mutex_;
  std::condition_variable wake_;
  std::unordered_map<StreamId, Inbox> inboxes_;
  std::vector<StreamId> inboxes_with_commands_;
  std::vector<StreamId> inboxes_visiting_;  // take_commands' scratch (keeps its capacity)
  bool has_commands_ = false;
  bool drain_requested_ = false;

  std::unordered_map<StreamId, Live> live_;
  // Streams the next round looks at; a stream that got no command and has nothing left is not
  // visited, so the per-round cost follows the traffic, not the open streams.
  std::vector<StreamId> round_members_;
  std::atomic<int> ready_streams_{0};
  std::mutex closing_mutex_;
  std::vector<StreamId> closing_;
  std::unique_ptr<ThreadPool> front_end_pool_;
  bool drain_started_ = false;
  Clock::time_point drain_deadline_ = Clock::time_point::max();  // under mutex_ until drain
  // Closes every stream still open with 1001 and no final: the drain ran out of time.
  void close_remaining_after_drain_timeout();
  std::thread thread_;
};

}  // namespace voxrt::server
