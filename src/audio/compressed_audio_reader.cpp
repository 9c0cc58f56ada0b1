#include "audio/compressed_audio_reader.h"

#ifndef VOXRT_HAVE_FFMPEG

namespace voxrt::audio {

Expected<std::unique_ptr<EncodedAudioReader>> open_compressed_reader(std::string,
                                                                     std::string_view source_name) {
  return invalid_argument(source_name,
                          ": not a format libsndfile reads, and this build has no "
                          "FFmpeg (WebM/MP4 recordings need -DVOXRT_FFMPEG=ON)");
}

}  // namespace voxrt::audio

#else

#include <algorithm>
#include <cstring>
#include <deque>
#include <memory>
#include <vector>

extern "C" {
#include <libavcodec/avcodec.h>
#include <libavformat/avformat.h>
#include <libavutil/opt.h>
#include <libswresample/swresample.h>
}

namespace voxrt::audio {
namespace {

// Demuxers (by FFmpeg's names) and decoders an upload may use: browser recordings and the
// common compressed formats libsndfile lacks.
constexpr const char* kFormats = "matroska,webm,mov,mp4,m4a,3gp,3g2,mj2,ogg,aac,mp3";
constexpr const char* kCodecs = "opus,vorbis,aac,mp3,mp3float,flac,pcm_s16le,pcm_f32le";
constexpr int kIoBufferBytes = 1 << 16;

struct Memory {
  std::string bytes;
  std::int64_t position = 0;
};

int read_memory(void* opaque, std::uint8_t* buffer, int size) {
  auto* memory = static_cast<Memory*>(opaque);
  const auto left = static_cast<std::int64_t>(memory->bytes.size()) - memory->position;
  if (left <= 0) return AVERROR_EOF;
  const auto n = static_cast<int>(std::min<std::int64_t>(left, size));
  std::memcpy(buffer, memory->bytes.data() + memory->position, static_cast<std::size_t>(n));
  memory->position += n;
  return n;
}

std::int64_t seek_memory(void* opaque, std::int64_t offset, int whence) {
  auto* memory = static_cast<Memory*>(opaque);
  const auto size = static_cast<std::int64_t>(memory->bytes.size());
  if ((whence & AVSEEK_SIZE) != 0) return size;
  std::int64_t target = offset;
  switch (whence & ~AVSEEK_FORCE) {
    case SEEK_SET: break;
    case SEEK_CUR: target += memory->position; break;
    case SEEK_END: target += size; break;
    default: return AVERROR(EINVAL);
  }
  if (target < 0 || target > size) return AVERROR(EINVAL);
  memory->position = target;
  return target;
}

std::string av_error_text(int code) {
  char text[AV_ERROR_MAX_STRING_SIZE] = {};
  av_strerror(code, text, sizeof(text));
  return text;
}

struct IoContextCloser {
  void operator()(AVIOContext* io) const {
    if (io == nullptr) return;
    av_freep(&io->buffer);
    avio_context_free(&io);
  }
};
struct FormatCloser {
  void operator()(AVFormatContext* format) const { avformat_close_input(&format); }
};
struct CodecCloser {
  void operator()(AVCodecContext* codec) const { avcodec_free_context(&codec); }
};
struct PacketCloser {
  void operator()(AVPacket* packet) const { av_packet_free(&packet); }
};
struct FrameCloser {
  void operator()(AVFrame* frame) const { av_frame_free(&frame); }
};
struct ResamplerCloser {
  void operator()(SwrContext* swr) const { swr_free(&swr); }
};

// Decoded frames -> mono floats (the resampler only downmixes and converts the sample format).
class Downmixer {
 public:
  Downmixer() = default;
  Downmixer(const Downmixer&) = delete;
  Downmixer& operator=(const Downmixer&) = delete;
  ~Downmixer() { av_channel_layout_uninit(&layout_); }

  Status append(const AVFrame& frame, std::string_view source_name, std::vector<float>& out) {
    // A decoder may change the sample format or channel layout between frames (a crafted or
    // broken stream does; audio_bytes_fuzz found one whose later frame had fewer planes than
    // the resampler was set up for, and swr_convert read a null plane): the resampler is set
    // up again for the new frames. The sample rate cannot change: the reader announced it.
    if (swr_ &&
        (frame.format != format_ || av_channel_layout_compare(&frame.ch_layout, &layout_) != 0)) {
      swr_.reset();
    }
    if (frame.sample_rate != sample_rate_ && sample_rate_ != 0) {
      return corrupt(source_name, ": expected every decoded frame at ", sample_rate_,
                     " Hz (the first frame's rate), found a frame at ", frame.sample_rate, " Hz");
    }
    if (frame.nb_samples <= 0) return Status::ok();
    const int planes = av_sample_fmt_is_planar(static_cast<AVSampleFormat>(frame.format))
                           ? frame.ch_layout.nb_channels
                           : 1;
    if (frame.extended_data == nullptr || planes < 1) {
      return corrupt(source_name, ": a decoded frame without sample data (",
                     frame.ch_layout.nb_channels, " channels)");
    }
    for (int plane = 0; plane < planes; ++plane) {
      if (frame.extended_data[plane] == nullptr) {
        return corrupt(source_name, ": a decoded frame without data for plane ", plane, " of ",
                       planes);
      }
    }
    if (!swr_) {
      SwrContext* swr = nullptr;
      AVChannelLayout mono = AV_CHANNEL_LAYOUT_MONO;
      // FFmpeg 5.1 takes the layouts as non-const pointers; it only reads them.
      const int error = swr_alloc_set_opts2(&swr, &mono, AV_SAMPLE_FMT_FLT, frame.sample_rate,
                                            const_cast<AVChannelLayout*>(&frame.ch_layout),
                                            static_cast<AVSampleFormat>(frame.format),
                                            frame.sample_rate, 0, nullptr);
      swr_.reset(swr);
      if (error < 0 || swr_init(swr) < 0) {
        swr_.reset();
        return unsupported(source_name, ": cannot convert ", frame.ch_layout.nb_channels,
                           "-channel audio to mono: ", av_error_text(error));
      }
      format_ = frame.format;
      sample_rate_ = frame.sample_rate;
      av_channel_layout_uninit(&layout_);
      if (av_channel_layout_copy(&layout_, &frame.ch_layout) < 0) {
        swr_.reset();
        return corrupt(source_name, ": cannot copy the frame's channel layout");
      }
    }
    const std::size_t at = out.size();
    out.resize(at + static_cast<std::size_t>(frame.nb_samples));
    auto* destination = reinterpret_cast<std::uint8_t*>(out.data() + at);
    const int converted =
        swr_convert(swr_.get(), &destination, frame.nb_samples,
                    const_cast<const std::uint8_t**>(frame.extended_data), frame.nb_samples);
    if (converted < 0) return corrupt(source_name, ": ", av_error_text(converted));
    out.resize(at + static_cast<std::size_t>(converted));
    return Status::ok();
  }

 private:
  std::unique_ptr<SwrContext, ResamplerCloser> swr_;
  // What swr_ was set up for.
  int format_ = -1;
  int sample_rate_ = 0;
  AVChannelLayout layout_{};
};

// The FFmpeg reader: demuxes and decodes packets only as far as read() asks for samples.
class CompressedAudioReader : public EncodedAudioReader {
 public:
  CompressedAudioReader(std::string bytes, std::string_view source_name) : name_(source_name) {
    memory_.bytes = std::move(bytes);
  }

  Status open() {
    av_log_set_level(AV_LOG_QUIET);  // errors come back as Status, not on stderr
    auto* io_buffer = static_cast<std::uint8_t*>(av_malloc(kIoBufferBytes));
    if (io_buffer == nullptr) return resource_exhausted(name_, ": out of memory");
    io_.reset(avio_alloc_context(io_buffer, kIoBufferBytes, 0, &memory_, read_memory, nullptr,
                                 seek_memory));
    if (!io_) {
      av_free(io_buffer);
      return resource_exhausted(name_, ": out of memory");
    }
    AVFormatContext* raw_format = avformat_alloc_context();
    if (raw_format == nullptr) return resource_exhausted(name_, ": out of memory");
    raw_format->pb = io_.get();
    raw_format->flags |= AVFMT_FLAG_CUSTOM_IO;
    raw_format->format_whitelist = av_strdup(kFormats);
    raw_format->codec_whitelist = av_strdup(kCodecs);
    // avformat_open_input frees the context when it fails.
    int error = avformat_open_input(&raw_format, nullptr, nullptr, nullptr);
    if (error < 0) {
      return invalid_argument(name_, ": not a WebM/Matroska/MP4 audio file FFmpeg opens (",
                              av_error_text(error), ")");
    }
    format_.reset(raw_format);
    error = avformat_find_stream_info(format_.get(), nullptr);
    if (error < 0) return corrupt(name_, ": ", av_error_text(error));
    const AVCodec* decoder = nullptr;
    stream_index_ = av_find_best_stream(format_.get(), AVMEDIA_TYPE_AUDIO, -1, -1, &decoder, 0);
    if (stream_index_ < 0 || decoder == nullptr) {
      return unsupported(name_, ": a ", format_->iformat->name,
                         " file with no audio stream voxrt can decode (codecs: ", kCodecs, ")");
    }
    codec_.reset(avcodec_alloc_context3(decoder));
    if (!codec_) return resource_exhausted(name_, ": out of memory");
    error = avcodec_parameters_to_context(codec_.get(), format_->streams[stream_index_]->codecpar);
    if (error >= 0) {
      AVDictionary* options = nullptr;
      av_dict_set(&options, "codec_whitelist", kCodecs, 0);
      error = avcodec_open2(codec_.get(), decoder, &options);
      av_dict_free(&options);
    }
    if (error < 0) {
      return unsupported(name_, ": cannot open the ", decoder->name,
                         " decoder: ", av_error_text(error));
    }
    if (codec_->sample_rate <= 0) return corrupt(name_, ": no sample rate in the stream");
    packet_.reset(av_packet_alloc());
    frame_.reset(av_frame_alloc());
    if (!packet_ || !frame_) return resource_exhausted(name_, ": out of memory");
    return Status::ok();
  }

  int sample_rate_hz() const override { return codec_->sample_rate; }
  int source_channels() const override { return codec_->ch_layout.nb_channels; }
  std::optional<long long> declared_frames() const override {
    const AVStream* stream = format_->streams[stream_index_];
    if (stream->duration <= 0 || stream->time_base.den == 0) return std::nullopt;
    return av_rescale_q(stream->duration, stream->time_base, AVRational{1, codec_->sample_rate});
  }

 protected:
  Expected<std::size_t> read_frames(std::size_t max_frames, std::vector<float>& out) override {
    // Decode until this read is served or the file ends; samples beyond it wait in pending_.
    while (pending_.size() < max_frames && !finished_) VOXRT_RETURN_IF_ERROR(decode_more());
    const std::size_t n = std::min(max_frames, pending_.size());
    out.insert(out.end(), pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(n));
    pending_.erase(pending_.begin(), pending_.begin() + static_cast<std::ptrdiff_t>(n));
    return n;
  }

 private:
  // Receives every frame the decoder has ready into pending_.
  Status drain() {
    for (;;) {
      const int got = avcodec_receive_frame(codec_.get(), frame_.get());
      if (got == AVERROR(EAGAIN) || got == AVERROR_EOF) return Status::ok();
      if (got < 0) return corrupt(name_, ": ", codec_->codec->name, ": ", av_error_text(got));
      if (frame_->sample_rate != codec_->sample_rate) {
        return unsupported(name_, ": the sample rate changes mid-stream (", codec_->sample_rate,
                           " -> ", frame_->sample_rate, " Hz)");
      }
      scratch_.clear();
      VOXRT_RETURN_IF_ERROR(downmix_.append(*frame_, name_, scratch_));
      pending_.insert(pending_.end(), scratch_.begin(), scratch_.end());
      av_frame_unref(frame_.get());
    }
  }

  // One more packet of the audio stream (or the decoder's flush at the end).
  Status decode_more() {
    const int error = av_read_frame(format_.get(), packet_.get());
    if (error == AVERROR_EOF) {
      avcodec_send_packet(codec_.get(), nullptr);  // flush
      finished_ = true;
      return drain();
    }
    if (error < 0) return corrupt(name_, ": ", av_error_text(error));
    if (packet_->stream_index == stream_index_) {
      const int sent = avcodec_send_packet(codec_.get(), packet_.get());
      // A damaged packet is skipped, as players do; the rest of the recording still decodes.
      if (sent < 0 && sent != AVERROR_INVALIDDATA) {
        av_packet_unref(packet_.get());
        return corrupt(name_, ": ", codec_->codec->name, ": ", av_error_text(sent));
      }
    }
    av_packet_unref(packet_.get());
    return drain();
  }

  Memory memory_;
  std::string name_;
  // Declared in the order they must be freed in reverse: the format reads through io_.
  std::unique_ptr<AVIOContext, IoContextCloser> io_;
  std::unique_ptr<AVFormatContext, FormatCloser> format_;
  std::unique_ptr<AVCodecContext, CodecCloser> codec_;
  std::unique_ptr<AVPacket, PacketCloser> packet_;
  std::unique_ptr<AVFrame, FrameCloser> frame_;
  Downmixer downmix_;
  int stream_index_ = -1;
  bool finished_ = false;
  std::vector<float> scratch_;
  std::deque<float> pending_;
};

}  // namespace

Expected<std::unique_ptr<EncodedAudioReader>> open_compressed_reader(std::string bytes,
                                                                     std::string_view source_name) {
  auto reader = std::make_unique<CompressedAudioReader>(std::move(bytes), source_name);
  VOXRT_RETURN_IF_ERROR(reader->open());
  return std::unique_ptr<EncodedAudioReader>(std::move(reader));
}

}  // namespace voxrt::audio

#endif  // VOXRT_HAVE_FFMPEG
