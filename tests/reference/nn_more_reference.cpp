// The reference program behind tests/nn_more_reference.h (not built by CMake; needs libtorch 1.13):
//   g++ -std=c++17 -O1 -I/usr/include/torch/csrc/api/include nn_more_reference.cpp -o ref -ltorch -ltorch_cpu -lc10
//   ./ref > values.h 2> printed.txt
// stdout is the header's values; stderr lists what each module prints (the header's print_* strings,
// with kiln::nn for torch::nn) and libtorch's messages for the bad inputs tests/nn_more_test.cpp tries.
#include <torch/torch.h>

#include <iomanip>
#include <iostream>
namespace F = torch::nn::functional;
using torch::Tensor;
Tensor wave(std::vector<int64_t> shape, double a, double b) {
  int64_t n = 1;
  for (auto s : shape) n *= s;
  return torch::arange(n, torch::kDouble).mul(a).add(b).sin().view(shape);
}
void emit(const char* name, const Tensor& t0) {
  Tensor t = t0.contiguous().to(torch::kDouble);
  std::cout << "// " << name << " sizes " << t.sizes() << "\ninline const std::vector<double> " << name << " = {";
  auto p = t.data_ptr<double>();
  for (int64_t i = 0; i < t.numel(); ++i) std::cout << (i ? ", " : "") << std::setprecision(12) << p[i];
  std::cout << "};\n";
}
template <typename M>
void show(const char* what, M& m) {
  std::cerr << what << ": " << *m << "\n";
}
int main() {
  std::cout << "// Values from libtorch 1.13 (a reference program run on this machine) for tests/nn_more_test.cpp.\n"
               "// Inputs are wave(shape, a, b) = sin(a * i + b) over the flat index i, in float64.\n"
               "#pragma once\n#include <vector>\n\n// clang-format off\nnamespace libtorch_reference {\n";
  Tensor x = wave({2, 4, 3, 3}, 0.7, 0.3), w = wave({4}, 1.1, 0.2), b = wave({4}, 0.9, -0.4);
  emit("group_norm_2", F::group_norm(x, F::GroupNormFuncOptions(2).weight(w).bias(b).eps(1e-4)));
  emit("instance_norm_affine", F::instance_norm(x, F::InstanceNormFuncOptions().weight(w).bias(b)));
  {
    Tensor rm = wave({4}, 0.3, 0.1), rv = wave({4}, 0.5, 0.2).abs() + 0.5;
    emit("instance_norm_out",
         F::instance_norm(
             x, F::InstanceNormFuncOptions().running_mean(rm).running_var(rv).use_input_stats(true).momentum(0.2)));
    emit("instance_norm_running_mean", rm);
    emit("instance_norm_running_var", rv);
    emit("instance_norm_eval",
         F::instance_norm(x, F::InstanceNormFuncOptions().running_mean(rm).running_var(rv).use_input_stats(false)));
  }
  emit("lrn_4d", F::local_response_norm(x, F::LocalResponseNormFuncOptions(3).alpha(0.5).beta(0.6).k(1.5)));
  emit("lrn_3d", F::local_response_norm(wave({2, 5, 4}, 0.4, 0.1), F::LocalResponseNormFuncOptions(2)));
  emit("lrn_5d",
       F::local_response_norm(wave({1, 4, 2, 2, 3}, 0.4, 0.1), F::LocalResponseNormFuncOptions(4).alpha(0.3)));
  Tensor img = wave({2, 3, 5, 6}, 0.37, 0.2);
  Tensor cols = F::unfold(img, F::UnfoldFuncOptions({2, 3}).dilation({2, 1}).padding({1, 0}).stride({1, 2}));
  emit("unfold", cols);
  emit("fold", F::fold(wave({2, 12, 10}, 0.23, 0.4),
                       F::FoldFuncOptions({5, 6}, {2, 3}).dilation({2, 1}).padding({1, 0}).stride({1, 2})));
  emit("prelu_1", F::prelu(x, torch::full({1}, 0.25, torch::kDouble)));
  emit("prelu_c", F::prelu(x, w));
  {
    Tensor weight = wave({10, 3}, 0.41, 0.3);
    Tensor idx = torch::tensor({1, 2, 4, 5, 4, 3, 2, 9}, torch::kLong), off = torch::tensor({0, 4, 4}, torch::kLong);
    Tensor psw = wave({8}, 0.8, 0.5);
    emit("bag_sum", F::embedding_bag(idx, weight, F::EmbeddingBagFuncOptions().offsets(off).mode(torch::kSum)));
    emit("bag_mean", F::embedding_bag(idx, weight, F::EmbeddingBagFuncOptions().offsets(off).mode(torch::kMean)));
    emit("bag_max", F::embedding_bag(idx, weight, F::EmbeddingBagFuncOptions().offsets(off).mode(torch::kMax)));
    emit("bag_psw",
         F::embedding_bag(idx, weight,
                          F::EmbeddingBagFuncOptions().offsets(off).mode(torch::kSum).per_sample_weights(psw)));
    emit("bag_last_pad", F::embedding_bag(idx, weight,
                                          F::EmbeddingBagFuncOptions()
                                              .offsets(torch::tensor({0, 3, 8}, torch::kLong))
                                              .include_last_offset(true)
                                              .padding_idx(4)));
    emit("bag_2d", F::embedding_bag(idx.view({2, 4}), weight, F::EmbeddingBagFuncOptions().mode(torch::kMax)));
  }
  {
    Tensor theta = wave({2, 2, 3}, 0.9, 0.1) * 0.8;
    emit("affine_grid", F::affine_grid(theta, {2, 3, 4, 5}, false));
    emit("affine_grid_ac", F::affine_grid(theta, {2, 3, 4, 5}, true));
    emit("affine_grid_3d", F::affine_grid(wave({1, 3, 4}, 0.6, 0.2), {1, 1, 2, 3, 2}, false));
    Tensor in = wave({2, 3, 4, 5}, 0.53, 0.1);
    Tensor grid = wave({2, 3, 4, 2}, 0.77, 0.3) * 1.3;
    emit("gs_bilinear_zeros",
         F::grid_sample(
             in, grid,
             F::GridSampleFuncOptions().mode(torch::kBilinear).padding_mode(torch::kZeros).align_corners(false)));
    emit("gs_bilinear_border_ac",
         F::grid_sample(
             in, grid,
             F::GridSampleFuncOptions().mode(torch::kBilinear).padding_mode(torch::kBorder).align_corners(true)));
    emit("gs_bilinear_reflection",
         F::grid_sample(
             in, grid,
             F::GridSampleFuncOptions().mode(torch::kBilinear).padding_mode(torch::kReflection).align_corners(false)));
    emit("gs_nearest_zeros",
         F::grid_sample(
             in, grid,
             F::GridSampleFuncOptions().mode(torch::kNearest).padding_mode(torch::kZeros).align_corners(false)));
    emit("gs_nearest_border_ac",
         F::grid_sample(
             in, grid,
             F::GridSampleFuncOptions().mode(torch::kNearest).padding_mode(torch::kBorder).align_corners(true)));
  }
  {
    Tensor in = wave({3, 4}, 0.9, 0.2);
    Tensor t = torch::tensor({{3, 0, -1, 1}, {1, 2, 3, 0}, {-1, 1, 2, 3}}, torch::kLong);
    emit("mlm", F::multilabel_margin_loss(in, t, F::MultilabelMarginLossFuncOptions(torch::kNone)));
    emit("mlm_mean", F::multilabel_margin_loss(in, t));
    Tensor soft = torch::tensor({{1., 0., 0., 1.}, {0., 1., 1., 0.}, {1., 1., 1., 0.}}, torch::kDouble);
    emit("mlsm",
         F::multilabel_soft_margin_loss(
             in, soft,
             F::MultilabelSoftMarginLossFuncOptions().weight(wave({4}, 1.2, 0.3).abs()).reduction(torch::kNone)));
    Tensor y = torch::tensor({2, 0, 3}, torch::kLong);
    emit("mm_p1", F::multi_margin_loss(in, y, F::MultiMarginLossFuncOptions().reduction(torch::kNone)));
    emit("mm_p2_w", F::multi_margin_loss(
                        in, y, F::MultiMarginLossFuncOptions().p(2).margin(0.7).weight(wave({4}, 1.2, 0.3).abs())));
    Tensor ysign = torch::tensor({1., -1., 1.}, torch::kDouble);
    emit("cel", F::cosine_embedding_loss(in, wave({3, 4}, 0.4, 1.0), ysign,
                                         F::CosineEmbeddingLossFuncOptions().margin(0.1).reduction(torch::kNone)));
  }
  std::cout << "}  // namespace libtorch_reference\n// clang-format on\n";
  // printing
  torch::nn::GroupNorm gn(2, 4);
  show("GroupNorm", gn);
  torch::nn::InstanceNorm2d in2(torch::nn::InstanceNorm2dOptions(4).affine(true));
  show("InstanceNorm2d", in2);
  torch::nn::InstanceNorm1d in1(3);
  show("InstanceNorm1d", in1);
  torch::nn::LocalResponseNorm lrn(2);
  show("LocalResponseNorm", lrn);
  torch::nn::BatchNorm3d bn3(4);
  show("BatchNorm3d", bn3);
  torch::nn::Unfold uf(torch::nn::UnfoldOptions({2, 3}).stride(2));
  show("Unfold", uf);
  torch::nn::Fold fo(torch::nn::FoldOptions({4, 5}, {2, 2}));
  show("Fold", fo);
  torch::nn::PReLU pr(torch::nn::PReLUOptions().num_parameters(3));
  show("PReLU", pr);
  torch::nn::EmbeddingBag eb(torch::nn::EmbeddingBagOptions(10, 3).mode(torch::kSum));
  show("EmbeddingBag", eb);
  torch::nn::EmbeddingBag eb2(10, 3);
  show("EmbeddingBag2", eb2);
  torch::nn::PixelShuffle ps(2);
  show("PixelShuffle", ps);
  torch::nn::PixelUnshuffle pu(2);
  show("PixelUnshuffle", pu);
  torch::nn::CosineSimilarity cs;
  show("CosineSimilarity", cs);
  torch::nn::PairwiseDistance pd;
  show("PairwiseDistance", pd);
  torch::nn::GLU glu;
  show("GLU", glu);
  torch::nn::KLDivLoss kl;
  show("KLDivLoss", kl);
  torch::nn::MarginRankingLoss mr;
  show("MarginRankingLoss", mr);
  torch::nn::HingeEmbeddingLoss he;
  show("HingeEmbeddingLoss", he);
  torch::nn::SoftMarginLoss sm;
  show("SoftMarginLoss", sm);
  torch::nn::CosineEmbeddingLoss ce;
  show("CosineEmbeddingLoss", ce);
  torch::nn::TripletMarginLoss tm;
  show("TripletMarginLoss", tm);
  torch::nn::PoissonNLLLoss pn;
  show("PoissonNLLLoss", pn);
  torch::nn::MultiMarginLoss mm;
  show("MultiMarginLoss", mm);
  torch::nn::MultiLabelMarginLoss mlm;
  show("MultiLabelMarginLoss", mlm);
  torch::nn::MultiLabelSoftMarginLoss mlsm;
  show("MultiLabelSoftMarginLoss", mlsm);
  torch::nn::ZeroPad2d z(torch::nn::ZeroPad2dOptions({1, 2, 3, 4}));
  show("ZeroPad2d", z);
  torch::nn::ConstantPad1d c1(torch::nn::ConstantPad1dOptions(2, 3.5));
  show("ConstantPad1d", c1);
  torch::nn::ConstantPad2d c2(torch::nn::ConstantPad2dOptions(1, 3.5));
  show("ConstantPad2d", c2);
  torch::nn::ConstantPad3d c3(torch::nn::ConstantPad3dOptions(1, 0.5));
  show("ConstantPad3d", c3);
  torch::nn::ReflectionPad1d r1(torch::nn::ReflectionPad1dOptions({1, 2}));
  show("ReflectionPad1d", r1);
  torch::nn::ReflectionPad2d r2(torch::nn::ReflectionPad2dOptions(1));
  show("ReflectionPad2d", r2);
  torch::nn::ReplicationPad1d p1(torch::nn::ReplicationPad1dOptions(2));
  show("ReplicationPad1d", p1);
  torch::nn::ReplicationPad2d p2(torch::nn::ReplicationPad2dOptions({1, 2, 3, 4}));
  show("ReplicationPad2d", p2);
  torch::nn::ReplicationPad3d p3(torch::nn::ReplicationPad3dOptions(1));
  show("ReplicationPad3d", p3);
  // errors
  auto err = [](const char* what, auto fn) {
    try {
      fn();
      std::cerr << what << ": no throw\n";
    } catch (const c10::Error& e) {
      std::cerr << what << ": " << e.what_without_backtrace() << "\n";
    }
  };
  err("group_norm", [&] { F::group_norm(x, F::GroupNormFuncOptions(3)); });
  err("unfold", [&] { F::unfold(torch::zeros({2, 3}), F::UnfoldFuncOptions(2)); });
  err("fold", [&] { F::fold(torch::zeros({1, 5, 4}), F::FoldFuncOptions({3, 3}, 2)); });
  err("grid_sample", [&] { F::grid_sample(torch::zeros({1, 1, 3, 3}), torch::zeros({2, 2, 2, 2})); });
  err("affine_grid", [&] { F::affine_grid(torch::zeros({2, 3, 3}), {2, 1, 3, 3}); });
  err("prelu", [&] { F::prelu(torch::zeros({2, 3}), torch::zeros({2})); });
  err("embedding_bag", [&] { F::embedding_bag(torch::tensor({1, 2}), torch::zeros({4, 3})); });
  err("multilabel_margin", [&] {
    F::multilabel_margin_loss(torch::zeros({2, 3}), torch::zeros({2, 4}, torch::kLong));
  });
  err("multi_margin", [&] { F::multi_margin_loss(torch::zeros({2, 3}), torch::zeros({3}, torch::kLong)); });
  err("local_response_norm", [&] { F::local_response_norm(torch::zeros({2, 3}), 2); });
  err("instance_norm", [&] { F::instance_norm(torch::zeros({2, 3, 1}), {}); });
  Tensor acc = torch::zeros({5}, torch::kDouble);
  acc.index_put_({torch::tensor({0, 2, 2, 4, 0})}, torch::tensor({1., 2., 3., 4., 5.}, torch::kDouble), true);
  std::cerr << "index_put_ accumulate: " << acc << "\n";
}
