// A program that flushes every library kernel with generated CUDA source (index_select, gather,
// their adjoints index_add and scatter_add, cat, view writes and adds, argmax and argmin, scans) on odd
// sizes, broadcast and non-contiguous operands, repeated indices, NaN and ties; its results as
// float64 values, in order, for comparing backends.
#pragma once
#include <kiln/torch.h>

#include <cmath>
#include <vector>

namespace kiln::library_program {

inline std::vector<double> run(torch::Dtype dtype) {
  namespace F = torch::nn::functional;
  torch::manual_seed(5);
  std::vector<double> values;
  auto keep = [&](const torch::Tensor& t) {
    auto d = t.to(torch::kDouble).contiguous();
    const double* p = d.data_ptr<double>();
    values.insert(values.end(), p, p + d.numel());
  };
  auto x = torch::randn({7, 5, 3}, torch::TensorOptions().dtype(dtype).requires_grad(true));
  auto xt = x.transpose(0, 2);                               // [3, 5, 7], not contiguous
  auto rows = torch::tensor({4, 0, 4, 2, 6}, torch::kLong);  // repeated: the adjoint accumulates
  auto selected = xt.index_select(2, rows);                  // IndexSelect -> IndexAdd
  auto picks = torch::randint(0, 5, {3, 2, 7}, torch::kLong);
  auto gathered = xt.gather(1, picks);  // Gather -> ScatterAdd
  auto broadcast = torch::randn({1, 5, 1}, torch::TensorOptions().dtype(dtype)).expand({3, 5, 2});
  auto joined = torch::cat({selected, broadcast, xt.narrow(2, 1, 3)}, 2);                  // Cat, [3, 5, 10]
  auto pooled = F::max_pool2d(x.unsqueeze(0), F::MaxPool2dFuncOptions({2, 2}).stride(1));  // overlapping windows
  auto written = torch::zeros({4, 6}, torch::TensorOptions().dtype(dtype));
  written.narrow(1, 2, 3).copy_(x.select(2, 1).narrow(0, 1, 4).narrow(1, 0, 3));  // WriteView
  auto total = (selected * selected).sum() + gathered.pow(3).sum() + joined.sin().sum() + pooled.exp().sum() +
               x.narrow(0, 2, 3).sum() + (written * written).sum();
  total.backward();
  keep(total);
  keep(x.grad());
  keep(joined);
  keep(written);
  // NaN wins an argmax or argmin, the first of equal values wins (rounded values tie often).
  auto y = (torch::randn({6, 9}, torch::TensorOptions().dtype(dtype)) * 2).round();
  y = y.masked_fill(y > 2.5, NAN);
  keep(y.argmax(1));
  keep(y.argmin(1));
  keep(y.t().argmax(0, true));
  keep(torch::argmin(y));
  // int64: index_select of int64 values and a cat of them.
  auto longs = torch::randint(-9, 9, {7, 4}, torch::kLong);
  keep(torch::cat({longs.index_select(0, rows), longs.t().narrow(0, 1, 2).t().narrow(0, 2, 5)}, 1));
  // Scans along either dim of non-contiguous views: sums and products, log-cum-sum-exp, and the
  // running maximum's and minimum's positions (NaN takes them, ties move them later); int64 wraps.
  keep(y.t().cumsum(1));
  keep((y * 0.5).cumprod(0));
  keep(y.narrow(1, 1, 7).logcumsumexp(1));
  keep(std::get<1>(y.cummax(1)));
  keep(std::get<1>(y.t().cummin(1)));
  keep(longs.t().cumsum(1));
  keep((longs * 1000003).cumprod(0));
  return values;
}

}  // namespace kiln::library_program
