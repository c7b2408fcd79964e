// Recurrent layers as libtorch 1.13 has them: nn::LSTM, nn::GRU, nn::RNN (tanh or relu) over whole
// sequences, and nn::LSTMCell, nn::GRUCell, nn::RNNCell for one step. Options, parameter names and
// order, initialization, forward signatures and printing follow libtorch, so a seeded program gets
// the same weights and outputs. The time loop is traced like any kiln program: one matmul projects
// the input of every step, then each step adds its hidden projection and computes its gates with
// elementwise ops, which fuse into few kernels per step.
//
// Beyond libtorch's C++ API (which rejects them), unbatched inputs work as in PyTorch 1.13's Python
// API: a 2-D sequence [T, input_size] with 2-D states for the layers, a 1-D input for the cells.
#pragma once
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "frontend/nn/module.h"
#include "frontend/nn/options.h"

namespace kiln {
// torch::optional<std::tuple<Tensor, Tensor>> in LSTM's forward.
using std::nullopt;
using std::optional;
}  // namespace kiln

namespace kiln::nn {

// --- options ---

// An RNN's nonlinearity: torch::kTanh or torch::kReLU.
class RNNNonlinearity {
 public:
  RNNNonlinearity(enumtype::kTanh) : relu_(false) {}
  RNNNonlinearity(enumtype::kReLU) : relu_(true) {}
  bool is_relu() const { return relu_; }
  // libtorch's enum name, as printed: "kTanh" or "kReLU".
  const char* name() const { return relu_ ? "kReLU" : "kTanh"; }

 private:
  bool relu_;
};

struct RNNOptions {
  using nonlinearity_t = RNNNonlinearity;
  RNNOptions(int64_t input_size, int64_t hidden_size) : input_size_(input_size), hidden_size_(hidden_size) {}
  KILN_ARG(int64_t, input_size);
  KILN_ARG(int64_t, hidden_size);
  KILN_ARG(int64_t, num_layers) = 1;
  KILN_ARG(nonlinearity_t, nonlinearity) = kTanh;
  KILN_ARG(bool, bias) = true;
  KILN_ARG(bool, batch_first) = false;
  KILN_ARG(double, dropout) = 0.0;
  KILN_ARG(bool, bidirectional) = false;
};

// proj_size > 0 projects each step's hidden state to that size with weight_hr (LSTM only).
struct LSTMOptions {
  LSTMOptions(int64_t input_size, int64_t hidden_size) : input_size_(input_size), hidden_size_(hidden_size) {}
  KILN_ARG(int64_t, input_size);
  KILN_ARG(int64_t, hidden_size);
  KILN_ARG(int64_t, num_layers) = 1;
  KILN_ARG(bool, bias) = true;
  KILN_ARG(bool, batch_first) = false;
  KILN_ARG(double, dropout) = 0.0;
  KILN_ARG(bool, bidirectional) = false;
  KILN_ARG(int64_t, proj_size) = 0;
};

struct GRUOptions {
  GRUOptions(int64_t input_size, int64_t hidden_size) : input_size_(input_size), hidden_size_(hidden_size) {}
  KILN_ARG(int64_t, input_size);
  KILN_ARG(int64_t, hidden_size);
  KILN_ARG(int64_t, num_layers) = 1;
  KILN_ARG(bool, bias) = true;
  KILN_ARG(bool, batch_first) = false;
  KILN_ARG(double, dropout) = 0.0;
  KILN_ARG(bool, bidirectional) = false;
};

struct RNNCellOptions {
  using nonlinearity_t = RNNNonlinearity;
  RNNCellOptions(int64_t input_size, int64_t hidden_size) : input_size_(input_size), hidden_size_(hidden_size) {}
  KILN_ARG(int64_t, input_size);
  KILN_ARG(int64_t, hidden_size);
  KILN_ARG(bool, bias) = true;
  KILN_ARG(nonlinearity_t, nonlinearity) = kTanh;
};

struct LSTMCellOptions {
  LSTMCellOptions(int64_t input_size, int64_t hidden_size) : input_size_(input_size), hidden_size_(hidden_size) {}
  KILN_ARG(int64_t, input_size);
  KILN_ARG(int64_t, hidden_size);
  KILN_ARG(bool, bias) = true;
};

struct GRUCellOptions {
  GRUCellOptions(int64_t input_size, int64_t hidden_size) : input_size_(input_size), hidden_size_(hidden_size) {}
  KILN_ARG(int64_t, input_size);
  KILN_ARG(int64_t, hidden_size);
  KILN_ARG(bool, bias) = true;
};

namespace detail {

// Which recurrence a layer or cell computes.
enum class RNNMode { LSTM, GRU, RNN_TANH, RNN_RELU };

// What the multi-layer modules share.
struct RNNOptionsBase {
  RNNOptionsBase(RNNMode mode, int64_t input_size, int64_t hidden_size)
      : mode_(mode), input_size_(input_size), hidden_size_(hidden_size) {}
  KILN_ARG(RNNMode, mode);
  KILN_ARG(int64_t, input_size);
  KILN_ARG(int64_t, hidden_size);
  KILN_ARG(int64_t, num_layers) = 1;
  KILN_ARG(bool, bias) = true;
  KILN_ARG(bool, batch_first) = false;
  KILN_ARG(double, dropout) = 0.0;
  KILN_ARG(bool, bidirectional) = false;
  KILN_ARG(int64_t, proj_size) = 0;
};

// The layers of LSTM, GRU and RNN: per layer and direction, weight_ih_l{k}[_reverse],
// weight_hh_l{k}, bias_ih_l{k}, bias_hh_l{k} (with bias) and weight_hr_l{k} (with proj_size),
// registered in that order and drawn from U(-1/sqrt(hidden_size), 1/sqrt(hidden_size)) in it.
class RNNImplBase : public Module {
 public:
  RNNImplBase(const RNNOptionsBase& options_base, const char* name);
  void reset();
  void reset_parameters();
  // The parameters in libtorch's flat order (the order above).
  std::vector<Tensor> all_weights() const;
  const std::vector<Tensor>& flat_weights() const { return flat_weights_; }
  // A no-op, as on libtorch's CPU: kiln keeps no packed copy of the weights.
  void flatten_parameters() {}
  void pretty_print(std::ostream& stream) const override;

  RNNOptionsBase options_base;

 protected:
  // Runs every layer over `input` ([T, N, input_size], [N, T, input_size] when batch_first, or
  // unbatched [T, input_size]). h0 and c0 (LSTM only) may be undefined: zeros. Returns the last
  // layer's output and the final hidden (and cell) states, shaped as libtorch returns them.
  std::tuple<Tensor, Tensor, Tensor> run(const Tensor& input, Tensor h0, Tensor c0) const;

  std::vector<std::string> flat_weights_names_;
  std::vector<std::vector<std::string>> all_weights_;
  std::vector<Tensor> flat_weights_;

 private:
  const char* name_;  // "LSTM", "GRU" or "RNN": errors and printing name the module
};

// The cells: weight_ih [gates * hidden, input], weight_hh [gates * hidden, hidden], bias_ih and
// bias_hh [gates * hidden] (registered undefined without bias), all from U(-1/sqrt(hidden),
// 1/sqrt(hidden)).
class RNNCellImplBase : public Module {
 public:
  RNNCellImplBase(int64_t input_size, int64_t hidden_size, bool bias, int64_t num_chunks, const char* name);
  void reset();
  void reset_parameters();
  void pretty_print(std::ostream& stream) const override;

  Tensor weight_ih, weight_hh, bias_ih, bias_hh;

 protected:
  // Checks the input (1-D or 2-D, input_size features) and a state (matching batch, hidden_size
  // features); `label` is "hidden", "hidden[0]" or "hidden[1]".
  void check_forward_input(const Tensor& input) const;
  void check_forward_hidden(const Tensor& input, const Tensor& hx, const std::string& label) const;
  virtual std::string nonlinearity_str() const { return ""; }

  int64_t input_size_, hidden_size_, num_chunks_;
  bool bias_;
  const char* name_;
};

}  // namespace detail

// --- the multi-layer modules ---

// h_t = tanh(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh) (or relu). forward returns (output, h_n):
// output [T, N, D * hidden_size] (batch first: [N, T, ...]), h_n [D * num_layers, N, hidden_size].
class RNNImpl : public detail::RNNImplBase {
 public:
  RNNImpl(int64_t input_size, int64_t hidden_size) : RNNImpl(RNNOptions(input_size, hidden_size)) {}
  explicit RNNImpl(const RNNOptions& options);
  std::tuple<Tensor, Tensor> forward(const Tensor& input, Tensor hx = {});

  RNNOptions options;
};
KILN_MODULE(RNN);

// Gates i, f, g, o (in that order in the weights); c_t = f c_{t-1} + i g, h_t = o tanh(c_t).
// forward returns (output, (h_n, c_n)).
class LSTMImpl : public detail::RNNImplBase {
 public:
  LSTMImpl(int64_t input_size, int64_t hidden_size) : LSTMImpl(LSTMOptions(input_size, hidden_size)) {}
  explicit LSTMImpl(const LSTMOptions& options);
  std::tuple<Tensor, std::tuple<Tensor, Tensor>> forward(const Tensor& input,
                                                         optional<std::tuple<Tensor, Tensor>> hx_opt = {});

  LSTMOptions options;
};
KILN_MODULE(LSTM);

// Gates r, z, n: n = tanh(x W_in^T + b_in + r (h W_hn^T + b_hn)), h_t = (1 - z) n + z h_{t-1}.
class GRUImpl : public detail::RNNImplBase {
 public:
  GRUImpl(int64_t input_size, int64_t hidden_size) : GRUImpl(GRUOptions(input_size, hidden_size)) {}
  explicit GRUImpl(const GRUOptions& options);
  std::tuple<Tensor, Tensor> forward(const Tensor& input, Tensor hx = {});

  GRUOptions options;
};
KILN_MODULE(GRU);

// --- the cells: one step, input [N, input_size] (or [input_size]) ---

class RNNCellImpl : public detail::RNNCellImplBase {
 public:
  RNNCellImpl(int64_t input_size, int64_t hidden_size) : RNNCellImpl(RNNCellOptions(input_size, hidden_size)) {}
  explicit RNNCellImpl(const RNNCellOptions& options);
  Tensor forward(const Tensor& input, Tensor hx = {});

  RNNCellOptions options;

 protected:
  std::string nonlinearity_str() const override { return options.nonlinearity().name(); }
};
KILN_MODULE(RNNCell);

// Returns (h', c').
class LSTMCellImpl : public detail::RNNCellImplBase {
 public:
  LSTMCellImpl(int64_t input_size, int64_t hidden_size) : LSTMCellImpl(LSTMCellOptions(input_size, hidden_size)) {}
  explicit LSTMCellImpl(const LSTMCellOptions& options);
  std::tuple<Tensor, Tensor> forward(const Tensor& input, optional<std::tuple<Tensor, Tensor>> hx_opt = {});

  LSTMCellOptions options;
};
KILN_MODULE(LSTMCell);

class GRUCellImpl : public detail::RNNCellImplBase {
 public:
  GRUCellImpl(int64_t input_size, int64_t hidden_size) : GRUCellImpl(GRUCellOptions(input_size, hidden_size)) {}
  explicit GRUCellImpl(const GRUCellOptions& options);
  Tensor forward(const Tensor& input, Tensor hx = {});

  GRUCellOptions options;
};
KILN_MODULE(GRUCell);

}  // namespace kiln::nn
