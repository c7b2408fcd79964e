// A program that flushes every library kernel with generated CUDA source (index_select, gather,
// their adjoints index_add and scatter_add, cat, view writes and adds, argmax and argmin, scans,
// sorts) on odd
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
  // Rows of kBlockScanLength (128) or more are scanned a block per row.
  const auto options = torch::TensorOptions().dtype(dtype);
  auto wide = torch::randn({3, 700}, options);
  keep(wide.cumsum(1));
  keep((1 + wide * 0.01).t().cumprod(0));
  keep(wide.narrow(1, 3, 600).logcumsumexp(1));
  keep(torch::randint(-9, 9, {2, 300}, torch::kLong).mul(1000000007).cumprod(1));
  keep(wide.gt(0).cumsum(1));
  // Sorts of rows (stable: ties keep their order; NaN last ascending, first descending), in shared
  // memory and past one tile (2048: merged in the workspace); topk, kthvalue, median and nanmedian
  // (NaN, ties), mode (ties), searchsorted.
  keep(std::get<1>(y.sort(1)));
  keep(std::get<1>(y.t().sort(1, true)));
  auto longrow = (torch::randn({2, 5000}, options) * 30).round();  // ties
  longrow = longrow.masked_fill(longrow > 60, NAN);
  const auto [long_values, long_positions] = longrow.sort(1, true);
  keep(long_values);
  keep(long_positions);
  keep(torch::argsort(longrow.t(), 0));
  keep(torch::argsort(torch::randint(-3, 3, {3, 2500}, torch::kLong), 1));
  keep(torch::argsort(wide.gt(0.3), 1, true));
  keep(std::get<1>(wide.topk(9, 1)));
  keep(std::get<1>(wide.t().topk(2, 0, false)));
  keep(std::get<1>(wide.kthvalue(17, 1)));
  keep(std::get<1>(y.median(1)));
  keep(std::get<1>(y.nanmedian(0)));
  keep(torch::median(wide));
  keep(std::get<1>(torch::randint(0, 4, {5, 13}, torch::kLong).mode(1)));
  auto boundaries = std::get<0>(wide.narrow(1, 0, 40).sort(1));
  keep(torch::searchsorted(boundaries, wide.narrow(1, 100, 30)));
  keep(torch::searchsorted(boundaries.select(0, 1), wide.narrow(1, 200, 7), false, true));
  return values;
}

}  // namespace kiln::library_program
