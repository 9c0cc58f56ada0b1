// What the C API's opaque handles hold. Only the C API's own files see these definitions.
#pragma once

#include <deque>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "embed/shared_recognizer.h"
#include "voxrt/voxrt_c.h"

struct voxrt_engine {
  std::string path;
  std::map<std::string, std::string> metadata;
};

struct voxrt_recognizer {
  std::shared_ptr<voxrt::embed::SharedRecognizer> shared;
};

struct voxrt_stream {
  std::unique_ptr<voxrt::embed::SharedStream> shared;
  // Results taken from the stream, handed out one per voxrt_stream_poll.
  std::deque<voxrt::stream::StreamResult> pending;
  // Reused by voxrt_stream_accept_s16.
  std::vector<float> converted;
};
