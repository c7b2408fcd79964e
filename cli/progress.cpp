#include "cli/progress.h"

#include <unistd.h>

#include <algorithm>
#include <cstdio>

namespace kiln::cli {

namespace {
constexpr int kWidth = 30;
double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}
}  // namespace

ProgressBar::ProgressBar(std::string label, int64_t total_samples)
    : label_(std::move(label)),
      total_(total_samples > 0 ? total_samples : 1),
      terminal_(isatty(fileno(stderr))),
      start_(std::chrono::steady_clock::now()),
      last_draw_(start_) {}

void ProgressBar::update(int64_t samples, double mean_loss) {
  done_ += samples;
  loss_ = mean_loss;
  draw(false);
}

double ProgressBar::finish() {
  draw(true);
  if (terminal_) std::fputc('\n', stderr);
  return seconds_since(start_);
}

void ProgressBar::draw(bool force) {
  const double fraction = double(done_) / double(total_);
  if (terminal_) {
    if (!force && seconds_since(last_draw_) < 0.1) return;
  } else {
    const int quarter = int(fraction * 4);
    if (quarter <= last_quarter_ && (!force || drawn_done_ == done_)) return;
    last_quarter_ = quarter;
  }
  last_draw_ = std::chrono::steady_clock::now();
  drawn_done_ = done_;
  const int filled = int(fraction * kWidth);
  std::string bar(kWidth, ' ');
  for (int i = 0; i < filled && i < kWidth; ++i) bar[i] = '=';
  if (filled < kWidth) bar[filled] = '>';
  const double rate = double(done_) / std::max(seconds_since(start_), 1e-9);
  std::fprintf(stderr, "%s%s [%s] %3d%% loss %.4f %.1fk samples/s%s", terminal_ ? "\r" : "", label_.c_str(),
               bar.c_str(), int(fraction * 100), loss_, rate / 1000, terminal_ ? "" : "\n");
  std::fflush(stderr);
}

}  // namespace kiln::cli
