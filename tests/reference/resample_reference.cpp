// The reference program behind tests/resample_reference.h and, with the argument "more",
// tests/resample_more_reference.h (not built by CMake; needs libtorch 1.13):
//   g++ -std=c++17 -O1 -I/usr/include/torch/csrc/api/include resample_reference.cpp -o ref -ltorch -ltorch_cpu -lc10
//   ./ref > values.h; ./ref more > more_values.h
#include <torch/torch.h>

#include <iomanip>
#include <iostream>
namespace F = torch::nn::functional;
torch::Tensor wave(std::vector<int64_t> shape, double a, double b) {
  int64_t n = 1;
  for (auto s : shape) n *= s;
  return (torch::arange(n, torch::kDouble) * a + b).sin().reshape(shape);
}
void p(const char* name, const torch::Tensor& t) {
  auto v = t.contiguous().to(torch::kDouble);
  auto a = v.data_ptr<double>();
  std::cout << "// " << name << " sizes " << t.sizes() << "\ninline const std::vector<double> " << name << " = {";
  for (int64_t i = 0; i < v.numel(); ++i) std::cout << (i ? ", " : "") << std::setprecision(12) << a[i];
  std::cout << "};\n";
}
void first_values() {
  auto img = wave({2, 2, 3, 4}, 0.7, 0.3);
  p("bicubic_up",
    F::interpolate(
        img, F::InterpolateFuncOptions().size(std::vector<int64_t>{5, 7}).mode(torch::kBicubic).align_corners(false)));
  p("bicubic_up_ac",
    F::interpolate(
        img, F::InterpolateFuncOptions().size(std::vector<int64_t>{5, 7}).mode(torch::kBicubic).align_corners(true)));
  p("bicubic_down",
    F::interpolate(
        wave({1, 2, 6, 5}, 0.37, 0.1),
        F::InterpolateFuncOptions().size(std::vector<int64_t>{4, 3}).mode(torch::kBicubic).align_corners(false)));
  p("bicubic_scale", F::interpolate(img, F::InterpolateFuncOptions()
                                             .scale_factor(std::vector<double>{1.7, 2.5})
                                             .mode(torch::kBicubic)
                                             .align_corners(false)));
  p("bicubic_float",
    F::interpolate(
        img.to(torch::kFloat),
        F::InterpolateFuncOptions().size(std::vector<int64_t>{5, 7}).mode(torch::kBicubic).align_corners(false)));
  auto vol = wave({1, 2, 2, 3, 4}, 0.53, 0.2);
  p("trilinear",
    F::interpolate(
        vol,
        F::InterpolateFuncOptions().size(std::vector<int64_t>{3, 4, 5}).mode(torch::kTrilinear).align_corners(false)));
  p("trilinear_ac",
    F::interpolate(
        vol,
        F::InterpolateFuncOptions().size(std::vector<int64_t>{3, 4, 5}).mode(torch::kTrilinear).align_corners(true)));
  p("nearest3d",
    F::interpolate(vol, F::InterpolateFuncOptions().size(std::vector<int64_t>{3, 5, 6}).mode(torch::kNearest)));
  auto grid = wave({2, 2, 3, 2, 3}, 0.81, 0.4) * 1.3;
  auto vin = wave({2, 2, 3, 4, 5}, 0.29, 0.7);
  for (int m = 0; m < 2; ++m)
    for (int pd = 0; pd < 3; ++pd)
      for (int ac = 0; ac < 2; ++ac) {
        auto opt = F::GridSampleFuncOptions().align_corners(ac == 1);
        if (m == 0)
          opt.mode(torch::kBilinear);
        else
          opt.mode(torch::kNearest);
        if (pd == 0)
          opt.padding_mode(torch::kZeros);
        else if (pd == 1)
          opt.padding_mode(torch::kBorder);
        else
          opt.padding_mode(torch::kReflection);
        std::string name = std::string("grid5d_") + (m ? "nearest" : "trilinear") +
                           (pd == 0   ? "_zeros"
                            : pd == 1 ? "_border"
                                      : "_reflection") +
                           (ac ? "_ac" : "");
        p(name.c_str(), F::grid_sample(vin, grid, opt));
      }
}

// Bicubic grid_sample, antialiasing, 1-D and 3-D nearest-exact and area.
using Opts = F::InterpolateFuncOptions;
void more_values() {
  // grid_sample bicubic (libtorch 1.13's C++ options have no kBicubic: grid_sampler's mode 2).
  auto input = wave({2, 2, 3, 4}, 0.29, 0.7), grid = wave({2, 3, 2, 2}, 0.81, 0.4) * 1.3;
  for (int pd = 0; pd < 3; ++pd)
    for (int ac = 0; ac < 2; ++ac) {
      std::string name = std::string("grid_bicubic") +
                         (pd == 0   ? "_zeros"
                          : pd == 1 ? "_border"
                                    : "_reflection") +
                         (ac ? "_ac" : "");
      p(name.c_str(), torch::grid_sampler(input, grid, 2, pd, ac == 1));
    }
  p("grid_bicubic_float", torch::grid_sampler(input.to(torch::kFloat), grid.to(torch::kFloat), 2, 0, false));
  // antialias
  auto img = wave({1, 2, 9, 11}, 0.7, 0.3);
  p("aa_bilinear_down",
    F::interpolate(
        img, Opts().size(std::vector<int64_t>{4, 5}).mode(torch::kBilinear).align_corners(false).antialias(true)));
  p("aa_bilinear_down_ac",
    F::interpolate(img,
                   Opts().size(std::vector<int64_t>{4, 5}).mode(torch::kBilinear).align_corners(true).antialias(true)));
  p("aa_bicubic_down",
    F::interpolate(img,
                   Opts().size(std::vector<int64_t>{4, 5}).mode(torch::kBicubic).align_corners(false).antialias(true)));
  p("aa_bicubic_down_ac",
    F::interpolate(img,
                   Opts().size(std::vector<int64_t>{4, 5}).mode(torch::kBicubic).align_corners(true).antialias(true)));
  p("aa_bilinear_scale", F::interpolate(img, Opts()
                                                 .scale_factor(std::vector<double>{0.45, 0.3})
                                                 .mode(torch::kBilinear)
                                                 .align_corners(false)
                                                 .antialias(true)));
  p("aa_bicubic_mixed",
    F::interpolate(
        img, Opts().size(std::vector<int64_t>{13, 4}).mode(torch::kBicubic).align_corners(false).antialias(true)));
  p("aa_bilinear_float",
    F::interpolate(
        img.to(torch::kFloat),
        Opts().size(std::vector<int64_t>{4, 5}).mode(torch::kBilinear).align_corners(false).antialias(true)));
  // nearest-exact and area in 1-D and 3-D
  auto vol = wave({1, 2, 2, 3, 4}, 0.53, 0.2), line = wave({1, 2, 7}, 0.8, 0.3);
  p("nearest_exact3d", F::interpolate(vol, Opts().size(std::vector<int64_t>{3, 5, 3}).mode(torch::kNearestExact)));
  p("nearest_exact1d", F::interpolate(line, Opts().size(std::vector<int64_t>{4}).mode(torch::kNearestExact)));
  p("area3d", F::interpolate(vol, Opts().size(std::vector<int64_t>{1, 2, 3}).mode(torch::kArea)));
  p("area3d_up", F::interpolate(vol, Opts().size(std::vector<int64_t>{3, 4, 5}).mode(torch::kArea)));
  p("area1d", F::interpolate(line, Opts().size(std::vector<int64_t>{3}).mode(torch::kArea)));
}

int main(int argc, char** argv) {
  if (argc > 1 && std::string(argv[1]) == "more")
    more_values();
  else
    first_values();
}
