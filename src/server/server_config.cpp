#include "server/server_config.h"

#include <algorithm>
#include <charconv>
#include <fstream>
#include <sstream>

namespace voxrt::server {

Expected<std::vector<ComputeDevice>> parse_devices(std::string_view text) {
  std::vector<ComputeDevice> devices;
  if (text == "auto") return devices;
  bool any_cpu = false, any_gpu = false;
  std::size_t begin = 0;
  while (begin <= text.size()) {
    const std::size_t end = std::min(text.find(',', begin), text.size());
    const std::string_view item = text.substr(begin, end - begin);
    ComputeDevice device;
    if (item == "cpu") {
      any_cpu = true;
    } else {
      int ordinal = 0;
      const auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), ordinal);
      if (item.empty() || ec != std::errc() || ptr != item.data() + item.size() || ordinal < 0 ||
          ordinal > 255) {
        return invalid_argument("serve: --devices '", text, "': '", item,
                                "' is neither cpu nor a GPU ordinal 0..255 (expected auto, cpu, "
                                "cpu,cpu or 0,1,...)");
      }
      device.cuda = true;
      device.ordinal = ordinal;
      any_gpu = true;
    }
    devices.push_back(device);
    begin = end + 1;
  }
  if (any_cpu && any_gpu) {
    return invalid_argument("serve: --devices '", text,
                            "': an engine runs on one kind of device; list CPUs or GPUs, not both");
  }
  return devices;  // ServerConfig::validate bounds the count
}

Expected<std::string> read_auth_token_file(const std::string& path) {
  std::ifstream in(path);
  if (!in) return io_error("--auth-token-file ", path, ": cannot open it");
  std::string line;
  std::getline(in, line);
  auto is_space = [](char c) {
    return c == ' ' || c == '\t' || c == '\r' || c == '\n' || c == '\v' || c == '\f';
  };
  std::size_t begin = 0, end = line.size();
  while (begin < end && is_space(line[begin])) ++begin;
  while (end > begin && is_space(line[end - 1])) --end;
  const std::string token = line.substr(begin, end - begin);
  if (token.empty()) {
    return invalid_argument("--auth-token-file ", path,
                            ": expected the token on its first line, found ",
                            line.empty() ? "an empty line" : "only white space",
                            " (refusing to start without authentication)");
  }
  for (std::size_t i = 0; i < token.size(); ++i) {
    const auto c = static_cast<unsigned char>(token[i]);
    if (c < 0x21 || c == 0x7f) {
      return invalid_argument("--auth-token-file ", path, ": the token holds white space or a ",
                              "control character at byte ", begin + i,
                              "; expected one word of printable characters");
    }
  }
  return token;
}

Status ServerConfig::validate() const {
  // With a repository the engine path is each version's, filled in when it is loaded.
  if (repo_path.empty()) {
    VOXRT_RETURN_IF_ERROR(recognizer.validate());
  }
  if (port < 0 || port > 65535)
    return invalid_argument("serve: --port must be 0..65535, got ", port);
  if (host.empty()) return invalid_argument("serve: --host is empty");
  if (io_threads < 1 || io_threads > 256)
    return invalid_argument("serve: --threads must be 1..256, got ", io_threads);
  if (front_end_threads < 1 || front_end_threads > 256)
    return invalid_argument("serve: --front-end-threads must be 1..256, got ", front_end_threads);
  if (max_queue_delay_us < 0 || max_queue_delay_us > 1000000)
    return invalid_argument("serve: --max-queue-delay-us must be 0..1000000, got ",
                            max_queue_delay_us);
  if (max_message_bytes < 2 || max_message_bytes > (64u << 20))
    return invalid_argument("serve: --max-message-bytes must be 2..67108864, got ",
                            max_message_bytes);
  if (max_buffered_ms < 100 || max_buffered_ms > 600000)
    return invalid_argument("serve: --max-buffered-ms must be 100..600000, got ", max_buffered_ms);
  if (idle_timeout_s < 1 || idle_timeout_s > 86400)
    return invalid_argument("serve: --idle-timeout-s must be 1..86400, got ", idle_timeout_s);
  if (max_connections_per_ip < 1)
    return invalid_argument("serve: --max-connections-per-ip must be >= 1, got ",
                            max_connections_per_ip);
  if (max_upload_bytes < 44) return invalid_argument("serve: max_upload_bytes must be >= 44");
  if (devices.size() > 64)
    return invalid_argument("serve: --devices lists ", devices.size(), " workers; at most 64");
  if (!devices.empty() && recognizer.max_streams < static_cast<int>(devices.size())) {
    return invalid_argument("serve: --max-streams ", recognizer.max_streams, " is fewer than the ",
                            devices.size(), " compute workers");
  }
  if (max_upload_audio_s < 1 || max_upload_audio_s > 86400)
    return invalid_argument("serve: --max-upload-audio-s must be 1..86400, got ",
                            max_upload_audio_s);
  if (upload_threads < 1 || upload_threads > 64)
    return invalid_argument("serve: --upload-threads must be 1..64, got ", upload_threads);
  if (max_pending_uploads < 1 || max_pending_uploads > 10000)
    return invalid_argument("serve: --max-pending-uploads must be 1..10000, got ",
                            max_pending_uploads);
  if (max_reply_queue_bytes < 4096 || max_reply_queue_bytes > (256u << 20))
    return invalid_argument("serve: --max-reply-queue-bytes must be 4096..268435456, got ",
                            max_reply_queue_bytes);
  if (malloc_mmap_threshold_kib < 0 || malloc_mmap_threshold_kib > 32768)
    return invalid_argument("serve: --malloc-mmap-threshold-kib must be 0..32768, got ",
                            malloc_mmap_threshold_kib);
  if (max_connections < 0)
    return invalid_argument(
        "serve: --max-connections must be >= 0 (0: from the descriptor "
        "limit), got ",
        max_connections);
  if (header_timeout_s < 1 || header_timeout_s > 3600)
    return invalid_argument("serve: --header-timeout-s must be 1..3600, got ", header_timeout_s);
  if (drain_timeout_s < 0 || drain_timeout_s > 3600)
    return invalid_argument("serve: --drain-timeout-s must be 0..3600, got ", drain_timeout_s);
  if (canary_percent < 0 || canary_percent > 99)
    return invalid_argument("serve: --canary must be 0..99 (percent of new streams), got ",
                            canary_percent);
  if (repo_poll_ms < 100 || repo_poll_ms > 3600000)
    return invalid_argument("serve: --repo-poll-ms must be 100..3600000, got ", repo_poll_ms);
  if (repo_target != "cpu" && repo_target != "cuda")
    return invalid_argument("serve: --repo-target must be cpu or cuda, got '", repo_target, "'");
  if (max_feed_ms_per_round < 20)
    return invalid_argument("serve: max_feed_ms_per_round must be >= 20, got ",
                            max_feed_ms_per_round);
  return Status::ok();
}

std::string ServerConfig::to_string() const {
  std::ostringstream out;
  std::string device_list;
  for (const ComputeDevice& d : devices)
    device_list += (device_list.empty() ? "" : ",") + d.to_string();
  out << "listen=" << host << ":" << port << " devices=" << (devices.empty() ? "auto" : device_list)
      << " io_threads=" << io_threads << " front_end_threads=" << front_end_threads
      << " max_queue_delay_us=" << max_queue_delay_us
      << " auth=" << (auth_token.empty() ? "off" : "bearer")
      << " max_message_bytes=" << max_message_bytes << " max_buffered_ms=" << max_buffered_ms
      << " idle_timeout_s=" << idle_timeout_s
      << " max_connections_per_ip=" << max_connections_per_ip << " max_connections="
      << (max_connections == 0 ? std::string("auto") : std::to_string(max_connections))
      << " max_upload_bytes=" << max_upload_bytes << " max_upload_audio_s=" << max_upload_audio_s
      << " upload_threads=" << upload_threads << " max_pending_uploads=" << max_pending_uploads
      << " max_reply_queue_bytes=" << max_reply_queue_bytes
      << " malloc_mmap_threshold_kib=" << malloc_mmap_threshold_kib
      << " header_timeout_s=" << header_timeout_s << " drain_timeout_s=" << drain_timeout_s
      << (repo_path.empty() ? std::string()
                            : " repo=" + repo_path + " repo_target=" + repo_target +
                                  " canary_percent=" + std::to_string(canary_percent))
      << " recognizer={" << recognizer.to_string() << "}";
  return out.str();
}

}  // namespace voxrt::server
