// A one-line progress bar for an epoch: `epoch 1/2 [=======>      ] 55% loss 0.4213 41.2k samples/s`,
// redrawn at most every 100 ms on a terminal; elsewhere (logs, CI) one line per 25% instead.
#pragma once
#include <chrono>
#include <cstdint>
#include <string>

namespace kiln::cli {

class ProgressBar {
 public:
  ProgressBar(std::string label, int64_t total_samples);
  // Records `samples` more done, with the running mean loss.
  void update(int64_t samples, double mean_loss);
  // Draws the final state and ends the line; returns the seconds since construction.
  double finish();

 private:
  void draw(bool force);
  std::string label_;
  int64_t total_, done_ = 0, drawn_done_ = -1;
  double loss_ = 0;
  bool terminal_;
  int last_quarter_ = 0;
  std::chrono::steady_clock::time_point start_, last_draw_;
};

}  // namespace kiln::cli
