#include "progress_bar.h"

#include <unistd.h>

#include <cstdio>

namespace voxrt::cli {

ProgressBar::ProgressBar() : interactive_(::isatty(STDERR_FILENO) != 0) {}
ProgressBar::~ProgressBar() {
  finish();
}

void ProgressBar::update(const std::string& stage, int done, int total, const std::string& detail) {
  if (!interactive_) {
    // Non-terminals get one line when a stage starts and when it ends.
    if (stage != last_stage_ || done == total) {
      std::fprintf(stderr, "[voxrt] %-9s %d/%d %s\n", stage.c_str(), done, total, detail.c_str());
    }
    last_stage_ = stage;
    return;
  }
  constexpr int kWidth = 30;
  const int filled = total > 0 ? done * kWidth / total : kWidth;
  std::string bar(static_cast<std::size_t>(filled), '#');
  bar.resize(kWidth, ' ');
  std::string shown = detail.size() > 40 ? detail.substr(0, 37) + "..." : detail;
  std::fprintf(stderr, "\r\033[K%-9s [%s] %d/%d %s", stage.c_str(), bar.c_str(), done, total,
               shown.c_str());
  std::fflush(stderr);
  open_line_ = true;
  last_stage_ = stage;
}

void ProgressBar::finish() {
  if (interactive_ && open_line_) std::fputc('\n', stderr);
  open_line_ = false;
}

}  // namespace voxrt::cli
