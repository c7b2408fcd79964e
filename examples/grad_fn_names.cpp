// The grad_fn name of the result of common ops, as `y.grad_fn()->name()` prints it: libtorch names
// the node after the op (x + 2 is AddBackward1, x.mean() is MeanBackward0) and tutorials print
// these. Built with kiln it includes <kiln/torch.h>; built with -DKILN_EXAMPLE_LIBTORCH against
// libtorch 1.13 it prints the reference output in tests/reference/grad_fn_names.txt.
#ifdef KILN_EXAMPLE_LIBTORCH
#include <torch/torch.h>
#else
#include <kiln/torch.h>
#endif

#include <iostream>
#include <string>

// Prints the expression and the name of its result's grad_fn.
#define PRINT_GRAD_FN(expr)                                                            \
  do {                                                                                 \
    auto result = (expr);                                                              \
    auto fn = result.grad_fn();                                                        \
    std::cout << #expr << " " << (fn ? fn->name() : std::string("none")) << std::endl; \
  } while (0)

int main() {
  namespace F = torch::nn::functional;
  torch::manual_seed(0);
  auto x = torch::randn({3, 4}, torch::requires_grad());
  auto y = torch::randn({3, 4}, torch::requires_grad());
  auto w = torch::randn({4, 4}, torch::requires_grad());
  auto v = torch::randn({4}, torch::requires_grad());
  auto x3 = torch::randn({2, 3, 4}, torch::requires_grad());
  auto w3 = torch::randn({2, 4, 5}, torch::requires_grad());
  auto labels = torch::randint(0, 3, {3});  // valid rows of x and classes of x

  // Arithmetic: tensor and number operands are different overloads.
  PRINT_GRAD_FN(x + y);
  PRINT_GRAD_FN(x + 2);
  PRINT_GRAD_FN(2 + x);
  PRINT_GRAD_FN(x - y);
  PRINT_GRAD_FN(x - 2);
  PRINT_GRAD_FN(2 - x);
  PRINT_GRAD_FN(x * y);
  PRINT_GRAD_FN(x * 2);
  PRINT_GRAD_FN(2 * x);
  PRINT_GRAD_FN(x / y);
  PRINT_GRAD_FN(x / 2);
  PRINT_GRAD_FN(2 / x);
  PRINT_GRAD_FN(-x);
  PRINT_GRAD_FN(x.add(y, 2));
  PRINT_GRAD_FN(x.sub(y, 2));
  PRINT_GRAD_FN(x.pow(2));
  PRINT_GRAD_FN(x.pow(3));
  PRINT_GRAD_FN(x.pow(0.5));
  PRINT_GRAD_FN(x.pow(y));
  PRINT_GRAD_FN(torch::pow(2, x));
  PRINT_GRAD_FN(x.square());

  // Reductions.
  PRINT_GRAD_FN(x.sum());
  PRINT_GRAD_FN(x.sum(1));
  PRINT_GRAD_FN(x.sum(torch::IntArrayRef{0, 1}));
  PRINT_GRAD_FN(x.sum(torch::kDouble));
  PRINT_GRAD_FN(x.mean());
  PRINT_GRAD_FN(x.mean(1));
  PRINT_GRAD_FN(x.mean({0}, true));
  PRINT_GRAD_FN(x.mean(torch::IntArrayRef{0, 1}));
  PRINT_GRAD_FN(x.norm());
  PRINT_GRAD_FN(x.norm(2, 1));
  PRINT_GRAD_FN(x.norm(1));
  PRINT_GRAD_FN(x.norm(3));
  PRINT_GRAD_FN(x.var());
  PRINT_GRAD_FN(x.var(1));
  PRINT_GRAD_FN(x.std());
  PRINT_GRAD_FN(x.std(1));
  PRINT_GRAD_FN(x.prod());
  PRINT_GRAD_FN(x.prod(1));
  PRINT_GRAD_FN(x.max());
  PRINT_GRAD_FN(x.min());
  PRINT_GRAD_FN(x.amax(1));
  PRINT_GRAD_FN(x.softmax(1));
  PRINT_GRAD_FN(x.log_softmax(1));
  PRINT_GRAD_FN(x.logsumexp(1));

  // Pointwise functions and activations.
  PRINT_GRAD_FN(x.exp());
  PRINT_GRAD_FN(x.log());
  PRINT_GRAD_FN(x.log2());
  PRINT_GRAD_FN(x.sqrt());
  PRINT_GRAD_FN(x.rsqrt());
  PRINT_GRAD_FN(x.abs());
  PRINT_GRAD_FN(x.sin());
  PRINT_GRAD_FN(x.cos());
  PRINT_GRAD_FN(x.tanh());
  PRINT_GRAD_FN(x.reciprocal());
  PRINT_GRAD_FN(x.sigmoid());
  PRINT_GRAD_FN(x.relu());
  PRINT_GRAD_FN(torch::gelu(x));
  PRINT_GRAD_FN(torch::gelu(x, "tanh"));
  PRINT_GRAD_FN(torch::silu(x));
  PRINT_GRAD_FN(x.clamp(0, 1));
  PRINT_GRAD_FN(x.clamp(0));
  PRINT_GRAD_FN(torch::clamp_min(x, 0));
  PRINT_GRAD_FN(torch::clamp_max(x, 1));
  PRINT_GRAD_FN(torch::where(x > 0, x, y));
  PRINT_GRAD_FN(x.masked_fill(x > 0, 0));

  // Matrix products.
  PRINT_GRAD_FN(x.mm(w));
  PRINT_GRAD_FN(x.matmul(w));
  PRINT_GRAD_FN(x.matmul(v));
  PRINT_GRAD_FN(v.matmul(w));
  PRINT_GRAD_FN(v.matmul(v));
  PRINT_GRAD_FN(x3.matmul(w));
  PRINT_GRAD_FN(x3.matmul(w3));
  PRINT_GRAD_FN(x3.bmm(w3));
  PRINT_GRAD_FN(torch::linear(x, w, v));
  PRINT_GRAD_FN(torch::linear(x, w));
  PRINT_GRAD_FN(torch::linear(x3, w, v));

  // Views, copies and joins.
  PRINT_GRAD_FN(x.t());
  PRINT_GRAD_FN(x.transpose(0, 1));
  PRINT_GRAD_FN(x.permute({1, 0}));
  PRINT_GRAD_FN(x.view({12}));
  PRINT_GRAD_FN(x.reshape({12}));
  PRINT_GRAD_FN(x.reshape({4, 3}));
  PRINT_GRAD_FN(x.t().reshape({12}));
  PRINT_GRAD_FN(x.flatten());
  PRINT_GRAD_FN(x.unsqueeze(0));
  PRINT_GRAD_FN(x.unsqueeze(0).squeeze(0));
  PRINT_GRAD_FN(x.unsqueeze(0).squeeze());
  PRINT_GRAD_FN(x.expand({2, 3, 4}));
  PRINT_GRAD_FN(x[0]);
  PRINT_GRAD_FN(x.select(1, 0));
  PRINT_GRAD_FN(x.narrow(1, 0, 2));
  PRINT_GRAD_FN(x.slice(1, 0, 2));
  PRINT_GRAD_FN(x.clone());
  PRINT_GRAD_FN(x.to(torch::kDouble));
  PRINT_GRAD_FN(torch::cat({x, y}));
  PRINT_GRAD_FN(torch::stack({x, y}));
  PRINT_GRAD_FN(x.index_select(0, labels));
  PRINT_GRAD_FN(x.gather(1, labels.unsqueeze(1)));

  // Losses and normalization.
  PRINT_GRAD_FN(F::mse_loss(x, y));
  PRINT_GRAD_FN(F::l1_loss(x, y));
  PRINT_GRAD_FN(F::smooth_l1_loss(x, y));
  PRINT_GRAD_FN(F::cross_entropy(x, labels));
  PRINT_GRAD_FN(F::nll_loss(x, labels));
  PRINT_GRAD_FN(F::binary_cross_entropy(x.sigmoid(), y.sigmoid().detach()));
  PRINT_GRAD_FN(F::layer_norm(x, F::LayerNormFuncOptions({4})));
  return 0;
}
