// The recurrent modules (see rnn.h). Every step is written with frontend ops, so gradients come
// from the derivative table; the only backward written here is SplitEvenly's, one concatenation.
#include "frontend/nn/rnn.h"

#include <cmath>

#include "frontend/autograd.h"
#include "frontend/nn/functional.h"
#include "frontend/nn/init.h"
#include "frontend/ops.h"
#include "frontend/trace.h"
#include "runtime/log.h"

namespace kiln::nn {

using detail::RNNMode;
using kiln::detail::shape_str;
using kiln::operator<<;  // shapes print as [2, 3]

namespace {

int64_t gates_per_hidden(RNNMode mode) {
  switch (mode) {
    case RNNMode::LSTM: return 4;
    case RNNMode::GRU: return 3;
    case RNNMode::RNN_TANH:
    case RNNMode::RNN_RELU: return 1;
  }
  return 1;
}

// The pieces' gradients side by side along the last dimension, chosen per element: elementwise, it
// runs as a compiled kernel, where a concatenation is a library call that copies value by value.
Tensor side_by_side(const tensor_list& pieces) {
  const int64_t count = int64_t(pieces.size());
  Tensor which = arange(count, TensorOptions().dtype(pieces[0].dtype())).reshape({count, 1});
  Tensor out = pieces.back().unsqueeze(-2);
  for (int64_t i = count - 2; i >= 0; --i) out = where(which == double(i), pieces[size_t(i)].unsqueeze(-2), out);
  Shape shape = pieces[0].sizes().vec();
  shape.back() *= count;
  return out.reshape(shape);
}

// Splits x into `pieces` equal parts: selected along `dim` when `squeeze` (time steps, layers'
// states), else narrowed along the last dimension (gates). Separate views would each send back a
// zero-padded copy of x's size, summed: T copies of a whole sequence for T steps. This backward puts
// the pieces' gradients together instead: one copy.
struct SplitEvenly : autograd::Function<SplitEvenly> {
  static tensor_list forward(autograd::AutogradContext* ctx, const Tensor& x, int64_t dim, int64_t pieces,
                             bool squeeze) {
    ctx->saved_data["dim"] = dim;
    ctx->saved_data["squeeze"] = squeeze;
    const int64_t size = x.size(dim) / pieces;
    tensor_list out;
    for (int64_t i = 0; i < pieces; ++i) out.push_back(squeeze ? x.select(dim, i) : x.narrow(dim, i * size, size));
    return out;
  }
  static tensor_list backward(autograd::AutogradContext* ctx, tensor_list grads) {
    const int64_t dim = ctx->saved_data["dim"].toInt();
    Tensor g = ctx->saved_data["squeeze"].toBool() ? stack(grads, dim) : side_by_side(grads);
    return {g, Tensor(), Tensor(), Tensor()};
  }
};

tensor_list split_evenly(const Tensor& x, int64_t dim, int64_t pieces, bool squeeze = false) {
  return SplitEvenly::apply(x, dim, pieces, squeeze);
}
// The gates of a [.., pieces * H] projection.
tensor_list gates_of(const Tensor& x, int64_t pieces) { return split_evenly(x, x.dim() - 1, pieces); }

// --- one step of each recurrence. `from_input` is the step's input projection with the biases
// that add to it; an undefined state is zero (the first step without an initial state), whose
// terms are skipped: adding an exact zero changes nothing. Each step multiplies by its own transposed view of the
// weights: each step's weight gradient then comes back in the weights' layout, so their sum and the
// optimizer read contiguous memory (one shared view would sum them transposed). ---

std::tuple<Tensor, Tensor> lstm_step(const Tensor& from_input, const Tensor& h, const Tensor& c, const Tensor& w_hh,
                                     const Tensor& w_hr) {
  Tensor gates = h.defined() ? from_input + h.mm(w_hh.t()) : from_input;
  tensor_list g = gates_of(gates, 4);
  Tensor in = g[0].sigmoid(), forget = g[1].sigmoid(), cell = g[2].tanh(), out = g[3].sigmoid();
  Tensor c_next = c.defined() ? forget * c + in * cell : in * cell;
  Tensor h_next = out * c_next.tanh();
  if (w_hr.defined()) h_next = h_next.mm(w_hr.t());
  return {h_next, c_next};
}

// b_hh stays inside the reset gate's product, so it is added here, not to the input projection.
Tensor gru_step(const Tensor& from_input, const Tensor& h, const Tensor& w_hh, const Tensor& b_hh) {
  Tensor from_hidden = h.defined() ? h.mm(w_hh.t()) : Tensor();
  if (b_hh.defined()) from_hidden = from_hidden.defined() ? from_hidden + b_hh : b_hh;
  tensor_list x = gates_of(from_input, 3);
  Tensor update, candidate;
  if (from_hidden.defined()) {
    tensor_list hh = gates_of(from_hidden, 3);
    Tensor reset = (x[0] + hh[0]).sigmoid();
    update = (x[1] + hh[1]).sigmoid();
    candidate = (x[2] + reset * hh[2]).tanh();
  } else {
    update = x[1].sigmoid();
    candidate = x[2].tanh();
  }
  return h.defined() ? candidate + update * (h - candidate) : candidate - update * candidate;
}

Tensor rnn_step(const Tensor& from_input, const Tensor& h, const Tensor& w_hh, bool relu) {
  Tensor pre = h.defined() ? from_input + h.mm(w_hh.t()) : from_input;
  return relu ? pre.relu() : pre.tanh();
}

// One step of any mode: updates h (and c).
void step(RNNMode mode, const Tensor& from_input, Tensor& h, Tensor& c, const Tensor& w_hh, const Tensor& b_hh,
          const Tensor& w_hr) {
  switch (mode) {
    case RNNMode::LSTM: std::tie(h, c) = lstm_step(from_input, h, c, w_hh, w_hr); return;
    case RNNMode::GRU: h = gru_step(from_input, h, w_hh, b_hh); return;
    case RNNMode::RNN_TANH:
    case RNNMode::RNN_RELU: h = rnn_step(from_input, h, w_hh, mode == RNNMode::RNN_RELU); return;
  }
}

// The input's bias: GRU keeps b_hh for its step, the others add both biases at once.
Tensor input_bias(RNNMode mode, const Tensor& b_ih, const Tensor& b_hh) {
  if (!b_ih.defined()) return Tensor();
  return mode == RNNMode::GRU ? b_ih : b_ih + b_hh;
}

struct DirectionWeights {
  Tensor w_ih, w_hh, b_ih, b_hh, w_hr;
};

// One layer in one direction over x ([T, N, F], or [N, T, F] with time_dim 1): the hidden state of
// every step in time order, and the final h and c (undefined when the sequence is empty).
std::tuple<tensor_list, Tensor, Tensor> run_direction(RNNMode mode, const Tensor& x, int64_t time_dim, bool reverse,
                                                      const DirectionWeights& w, Tensor h, Tensor c) {
  // Every step's input projection in one matmul.
  Tensor projected = matmul(x, w.w_ih.t());
  if (Tensor bias = input_bias(mode, w.b_ih, w.b_hh); bias.defined()) projected = projected + bias;
  const int64_t steps = x.size(time_dim);
  tensor_list from_input = steps > 0 ? split_evenly(projected, time_dim, steps, /*squeeze=*/true) : tensor_list();
  const Tensor b_hh = mode == RNNMode::GRU ? w.b_hh : Tensor();
  tensor_list hidden(static_cast<size_t>(steps));
  for (int64_t k = 0; k < steps; ++k) {
    const int64_t t = reverse ? steps - 1 - k : k;
    step(mode, from_input[size_t(t)], h, c, w.w_hh, b_hh, w.w_hr);
    hidden[size_t(t)] = h;
  }
  return {hidden, h, c};
}

}  // namespace

// --- RNNImplBase ---

namespace detail {

RNNImplBase::RNNImplBase(const RNNOptionsBase& options, const char* name) : options_base(options), name_(name) {
  const auto& o = options_base;
  KILN_CHECK(o.input_size() > 0 && o.hidden_size() > 0, name_, ": input_size and hidden_size must be positive, got ",
             o.input_size(), " and ", o.hidden_size());
  KILN_CHECK(o.num_layers() > 0, name_, ": num_layers must be positive, got ", o.num_layers());
  KILN_CHECK(o.dropout() >= 0 && o.dropout() <= 1, name_,
             ": dropout should be a number in range [0, 1] "
             "representing the probability of an element being zeroed, got ",
             o.dropout());
  KILN_CHECK(o.proj_size() >= 0 && o.proj_size() < o.hidden_size(), name_,
             ": proj_size has to be a positive "
             "integer, smaller than hidden_size or zero to disable projections, got ",
             o.proj_size(), " with hidden_size ", o.hidden_size());
  KILN_CHECK(o.proj_size() == 0 || o.mode() == RNNMode::LSTM, name_,
             ": proj_size argument is only supported for "
             "LSTM, not RNN or GRU");
  if (o.dropout() > 0 && o.num_layers() == 1)
    log().warn(
        "{}: dropout option adds dropout after all but last recurrent layer, so non-zero dropout expects "
        "num_layers greater than 1, but got dropout={} and num_layers=1",
        name_, o.dropout());
  reset();
}

void RNNImplBase::reset() {
  const auto& o = options_base;
  const int64_t directions = o.bidirectional() ? 2 : 1;
  const int64_t gate_size = gates_per_hidden(o.mode()) * o.hidden_size();
  const int64_t real_hidden_size = o.proj_size() > 0 ? o.proj_size() : o.hidden_size();
  flat_weights_names_.clear();
  all_weights_.clear();
  for (int64_t layer = 0; layer < o.num_layers(); ++layer)
    for (int64_t direction = 0; direction < directions; ++direction) {
      const int64_t layer_input_size = layer == 0 ? o.input_size() : real_hidden_size * directions;
      const std::string suffix = std::to_string(layer) + (direction == 1 ? "_reverse" : "");
      std::vector<std::pair<std::string, Shape>> params = {{"weight_ih_l" + suffix, {gate_size, layer_input_size}},
                                                           {"weight_hh_l" + suffix, {gate_size, real_hidden_size}}};
      if (o.bias()) {
        params.push_back({"bias_ih_l" + suffix, {gate_size}});
        params.push_back({"bias_hh_l" + suffix, {gate_size}});
      }
      if (o.proj_size() > 0) params.push_back({"weight_hr_l" + suffix, {o.proj_size(), o.hidden_size()}});
      std::vector<std::string> names;
      for (auto& [param_name, shape] : params) {
        register_parameter(param_name, kiln::empty(shape));
        names.push_back(param_name);
      }
      flat_weights_names_.insert(flat_weights_names_.end(), names.begin(), names.end());
      all_weights_.push_back(std::move(names));
    }
  flat_weights_ = all_weights();
  reset_parameters();
}

void RNNImplBase::reset_parameters() {
  const double stdv = 1.0 / std::sqrt(double(options_base.hidden_size()));
  for (auto& weight : parameters()) init::uniform_(weight, -stdv, stdv);
}

std::vector<Tensor> RNNImplBase::all_weights() const {
  std::vector<Tensor> out;
  for (const auto& name : flat_weights_names_) out.push_back(parameters_[name]);
  return out;
}

void RNNImplBase::pretty_print(std::ostream& stream) const {
  const auto& o = options_base;
  stream << std::boolalpha << "kiln::nn::" << name_ << "(input_size=" << o.input_size()
         << ", hidden_size=" << o.hidden_size() << ", num_layers=" << o.num_layers() << ", bias=" << o.bias()
         << ", batch_first=" << o.batch_first() << ", dropout=" << o.dropout()
         << ", bidirectional=" << o.bidirectional();
  if (o.proj_size() > 0) stream << ", proj_size=" << o.proj_size();
  stream << ")";
}

std::tuple<Tensor, Tensor, Tensor> RNNImplBase::run(const Tensor& input, Tensor h0, Tensor c0) const {
  const auto& o = options_base;
  const bool lstm = o.mode() == RNNMode::LSTM;
  const char* state_name = lstm ? "hx and cx" : "hx";
  KILN_CHECK(input.dim() == 2 || input.dim() == 3, name_, ": input must have 3 dimensions (2 when unbatched), got ",
             shape_str(input));
  KILN_CHECK(input.size(-1) == o.input_size(), name_, ": input.size(-1) must be equal to input_size. Expected ",
             o.input_size(), ", got input ", shape_str(input));
  const Tensor& weight = flat_weights_.front();
  KILN_CHECK(input.dtype() == weight.dtype(), name_, ": input and weights must have the same dtype, got input ",
             shape_str(input), " and weights ", weight.dtype());
  const bool batched = input.dim() == 3;
  const int64_t batch_dim = o.batch_first() ? 0 : 1, time_dim = 1 - batch_dim;
  for (const Tensor* state : {&h0, &c0}) {
    if (!state->defined()) continue;
    KILN_CHECK(state->dim() == input.dim(), name_, ": for ", batched ? "batched 3-D" : "unbatched 2-D", " input, ",
               state_name, " should also be ", input.dim(), "-D, got input ", shape_str(input), " and ",
               state == &h0 ? "hx " : "cx ", shape_str(*state));
    KILN_CHECK(state->dtype() == input.dtype(), name_,
               ": input and hidden state must have the same dtype, got "
               "input ",
               shape_str(input), " and state ", shape_str(*state));
  }
  Tensor x = batched ? input : input.unsqueeze(batch_dim);
  if (!batched) {
    if (h0.defined()) h0 = h0.unsqueeze(1);
    if (c0.defined()) c0 = c0.unsqueeze(1);
  }
  const int64_t directions = o.bidirectional() ? 2 : 1, layers = o.num_layers(), batch = x.size(batch_dim);
  const int64_t real_hidden_size = o.proj_size() > 0 ? o.proj_size() : o.hidden_size();
  auto check_state = [&](const Tensor& state, int64_t size, const char* label) {
    const std::vector<int64_t> expected = {layers * directions, batch, size};
    KILN_CHECK(state.sizes().vec() == expected, name_, ": Expected ", label, " size ", expected, ", got ",
               state.sizes().vec(), " (input ", shape_str(input), ")");
  };
  if (h0.defined()) check_state(h0, real_hidden_size, lstm ? "hidden[0]" : "hidden");
  if (c0.defined()) check_state(c0, o.hidden_size(), "hidden[1]");

  // Initial states per layer and direction; undefined (zero) when none were given.
  const size_t units = size_t(layers * directions);
  tensor_list h_init = h0.defined() ? split_evenly(h0, 0, int64_t(units), true) : tensor_list(units);
  tensor_list c_init = c0.defined() ? split_evenly(c0, 0, int64_t(units), true) : tensor_list(units);
  tensor_list h_final, c_final;
  for (int64_t layer = 0; layer < layers; ++layer) {
    tensor_list direction_outputs;
    for (int64_t direction = 0; direction < directions; ++direction) {
      const size_t unit = size_t(layer * directions + direction);
      const auto& names = all_weights_[unit];
      DirectionWeights w;
      w.w_ih = parameters_[names[0]];
      w.w_hh = parameters_[names[1]];
      if (o.bias()) {
        w.b_ih = parameters_[names[2]];
        w.b_hh = parameters_[names[3]];
      }
      if (o.proj_size() > 0) w.w_hr = parameters_[names.back()];
      auto [hidden, h, c] = run_direction(o.mode(), x, time_dim, direction == 1, w, h_init[unit], c_init[unit]);
      direction_outputs.push_back(hidden.empty() ? kiln::zeros({x.size(0), x.size(1), real_hidden_size}, x.dtype())
                                                 : stack(hidden, time_dim));
      h_final.push_back(h.defined() ? h : kiln::zeros({batch, real_hidden_size}, x.dtype()));
      if (lstm) c_final.push_back(c.defined() ? c : kiln::zeros({batch, o.hidden_size()}, x.dtype()));
    }
    // Both directions side by side in the features: [.., 2, H] viewed as [.., 2H].
    x = directions == 1 ? direction_outputs[0]
                        : stack(direction_outputs, 2).reshape({x.size(0), x.size(1), directions * real_hidden_size});
    if (o.dropout() > 0 && is_training() && layer + 1 < layers)
      x = functional::dropout(x, functional::DropoutFuncOptions().p(o.dropout()).training(true));
  }
  Tensor h_n = stack(h_final, 0), c_n = lstm ? stack(c_final, 0) : Tensor();
  if (!batched) {
    x = x.squeeze(batch_dim);
    h_n = h_n.squeeze(1);
    if (lstm) c_n = c_n.squeeze(1);
  }
  return {x, h_n, c_n};
}

}  // namespace detail

// --- LSTM, GRU, RNN ---

namespace {
template <typename Options>
detail::RNNOptionsBase base_options(RNNMode mode, const Options& o) {
  return detail::RNNOptionsBase(mode, o.input_size(), o.hidden_size())
      .num_layers(o.num_layers())
      .bias(o.bias())
      .batch_first(o.batch_first())
      .dropout(o.dropout())
      .bidirectional(o.bidirectional());
}
}  // namespace

RNNImpl::RNNImpl(const RNNOptions& options_)
    : RNNImplBase(base_options(options_.nonlinearity().is_relu() ? RNNMode::RNN_RELU : RNNMode::RNN_TANH, options_),
                  "RNN"),
      options(options_) {}

std::tuple<Tensor, Tensor> RNNImpl::forward(const Tensor& input, Tensor hx) {
  auto [output, h_n, unused] = run(input, std::move(hx), Tensor());
  return {output, h_n};
}

LSTMImpl::LSTMImpl(const LSTMOptions& options_)
    : RNNImplBase(base_options(RNNMode::LSTM, options_).proj_size(options_.proj_size()), "LSTM"), options(options_) {}

std::tuple<Tensor, std::tuple<Tensor, Tensor>> LSTMImpl::forward(const Tensor& input,
                                                                 optional<std::tuple<Tensor, Tensor>> hx_opt) {
  Tensor h0, c0;
  if (hx_opt) {
    std::tie(h0, c0) = *hx_opt;
    KILN_CHECK(h0.defined() && c0.defined(), "LSTM: the initial state (h_0, c_0) must have both tensors defined");
  }
  auto [output, h_n, c_n] = run(input, h0, c0);
  return {output, {h_n, c_n}};
}

GRUImpl::GRUImpl(const GRUOptions& options_)
    : RNNImplBase(base_options(RNNMode::GRU, options_), "GRU"), options(options_) {}

std::tuple<Tensor, Tensor> GRUImpl::forward(const Tensor& input, Tensor hx) {
  auto [output, h_n, unused] = run(input, std::move(hx), Tensor());
  return {output, h_n};
}

// --- the cells ---

namespace detail {

RNNCellImplBase::RNNCellImplBase(int64_t input_size, int64_t hidden_size, bool bias, int64_t num_chunks,
                                 const char* name)
    : input_size_(input_size), hidden_size_(hidden_size), num_chunks_(num_chunks), bias_(bias), name_(name) {
  KILN_CHECK(input_size > 0 && hidden_size > 0, name_, ": input_size and hidden_size must be positive, got ",
             input_size, " and ", hidden_size);
  reset();
}

void RNNCellImplBase::reset() {
  weight_ih = register_parameter("weight_ih", kiln::empty({num_chunks_ * hidden_size_, input_size_}));
  weight_hh = register_parameter("weight_hh", kiln::empty({num_chunks_ * hidden_size_, hidden_size_}));
  if (bias_) {
    bias_ih = register_parameter("bias_ih", kiln::empty({num_chunks_ * hidden_size_}));
    bias_hh = register_parameter("bias_hh", kiln::empty({num_chunks_ * hidden_size_}));
  } else {
    bias_ih = register_parameter("bias_ih", Tensor(), /*requires_grad=*/false);
    bias_hh = register_parameter("bias_hh", Tensor(), /*requires_grad=*/false);
  }
  reset_parameters();
}

void RNNCellImplBase::reset_parameters() {
  const double stdv = 1.0 / std::sqrt(double(hidden_size_));
  for (auto& weight : parameters()) init::uniform_(weight, -stdv, stdv);
}

void RNNCellImplBase::pretty_print(std::ostream& stream) const {
  stream << "kiln::nn::" << name_ << "(" << input_size_ << ", " << hidden_size_;
  if (!bias_) stream << ", bias=false";
  const std::string nonlinearity = nonlinearity_str();
  if (!nonlinearity.empty() && nonlinearity != "kTanh") stream << ", nonlinearity=" << nonlinearity;
  stream << ")";
}

void RNNCellImplBase::check_forward_input(const Tensor& input) const {
  KILN_CHECK(input.dim() == 1 || input.dim() == 2, name_, ": Expected input to be 1D or 2D, got ", shape_str(input));
  KILN_CHECK(input.size(-1) == input_size_, name_, ": input has inconsistent input_size: got ", input.size(-1),
             " expected ", input_size_, " (input ", shape_str(input), ")");
  KILN_CHECK(input.dtype() == weight_ih.dtype(), name_, ": input and weights must have the same dtype, got input ",
             shape_str(input), " and weights ", weight_ih.dtype());
}

void RNNCellImplBase::check_forward_hidden(const Tensor& input, const Tensor& hx, const std::string& label) const {
  KILN_CHECK(hx.dim() == input.dim(), name_, ": Expected ", label, " to be ", input.dim(), "D as the input is, got ",
             label, " ", shape_str(hx), " and input ", shape_str(input));
  KILN_CHECK(input.dim() == 1 || input.size(0) == hx.size(0), name_, ": Input batch size ", input.size(0),
             " doesn't match ", label, " batch size ", hx.size(0), " (input ", shape_str(input), ", ", label, " ",
             shape_str(hx), ")");
  KILN_CHECK(hx.size(-1) == hidden_size_, name_, ": ", label, " has inconsistent hidden_size: got ", hx.size(-1),
             ", expected ", hidden_size_, " (", label, " ", shape_str(hx), ")");
  KILN_CHECK(hx.dtype() == input.dtype(), name_, ": input and ", label, " must have the same dtype, got input ",
             shape_str(input), " and ", label, " ", shape_str(hx));
}

}  // namespace detail

namespace {
// A cell's input as a batch (unbatched 1-D input becomes a batch of one), and its projection.
Tensor batched_projection(RNNMode mode, const Tensor& input, const Tensor& w_ih, const Tensor& b_ih,
                          const Tensor& b_hh) {
  Tensor x = input.dim() == 1 ? input.unsqueeze(0) : input;
  Tensor projected = x.mm(w_ih.t());
  Tensor bias = input_bias(mode, b_ih, b_hh);
  return bias.defined() ? projected + bias : projected;
}
Tensor as_batch(const Tensor& state) { return state.defined() && state.dim() == 1 ? state.unsqueeze(0) : state; }
Tensor like_input(const Tensor& state, const Tensor& input) { return input.dim() == 1 ? state.squeeze(0) : state; }
}  // namespace

RNNCellImpl::RNNCellImpl(const RNNCellOptions& options_)
    : RNNCellImplBase(options_.input_size(), options_.hidden_size(), options_.bias(), 1, "RNNCell"),
      options(options_) {}

Tensor RNNCellImpl::forward(const Tensor& input, Tensor hx) {
  check_forward_input(input);
  if (hx.defined()) check_forward_hidden(input, hx, "hidden");
  const RNNMode mode = options.nonlinearity().is_relu() ? RNNMode::RNN_RELU : RNNMode::RNN_TANH;
  Tensor h = as_batch(hx), c;
  step(mode, batched_projection(mode, input, weight_ih, bias_ih, bias_hh), h, c, weight_hh, Tensor(), Tensor());
  return like_input(h, input);
}

LSTMCellImpl::LSTMCellImpl(const LSTMCellOptions& options_)
    : RNNCellImplBase(options_.input_size(), options_.hidden_size(), options_.bias(), 4, "LSTMCell"),
      options(options_) {}

std::tuple<Tensor, Tensor> LSTMCellImpl::forward(const Tensor& input, optional<std::tuple<Tensor, Tensor>> hx_opt) {
  check_forward_input(input);
  Tensor h, c;
  if (hx_opt) {
    std::tie(h, c) = *hx_opt;
    check_forward_hidden(input, h, "hidden[0]");
    check_forward_hidden(input, c, "hidden[1]");
  }
  h = as_batch(h);
  c = as_batch(c);
  step(RNNMode::LSTM, batched_projection(RNNMode::LSTM, input, weight_ih, bias_ih, bias_hh), h, c, weight_hh, Tensor(),
       Tensor());
  return {like_input(h, input), like_input(c, input)};
}

GRUCellImpl::GRUCellImpl(const GRUCellOptions& options_)
    : RNNCellImplBase(options_.input_size(), options_.hidden_size(), options_.bias(), 3, "GRUCell"),
      options(options_) {}

Tensor GRUCellImpl::forward(const Tensor& input, Tensor hx) {
  check_forward_input(input);
  if (hx.defined()) check_forward_hidden(input, hx, "hidden");
  Tensor h = as_batch(hx), c;
  step(RNNMode::GRU, batched_projection(RNNMode::GRU, input, weight_ih, bias_ih, bias_hh), h, c, weight_hh, bias_hh,
       Tensor());
  return like_input(h, input);
}

}  // namespace kiln::nn
