// A one-line progress display on stderr for long work (builds, calibration): redrawn in place
// on a terminal, one line per stage otherwise (CI logs).
#pragma once

#include <string>

namespace voxrt::cli {

class ProgressBar {
 public:
  ProgressBar();
  ~ProgressBar();
  void update(const std::string& stage, int done, int total, const std::string& detail);
  void finish();

 private:
  bool interactive_;
  std::string last_stage_;
  bool open_line_ = false;
};

}  // namespace voxrt::cli
