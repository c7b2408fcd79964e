// Printing tensors exactly as libtorch 1.13 does (aten/src/ATen/core/Formatting.cpp), so that a
// program's output can be compared with libtorch's line by line.
#include <cmath>
#include <iomanip>

#include "frontend/tensor.h"

namespace kiln {

namespace {

struct FormatGuard {
  explicit FormatGuard(std::ostream& out) : out_(out), saved_(nullptr) { saved_.copyfmt(out); }
  ~FormatGuard() { out_.copyfmt(saved_); }
  std::ostream& out_;
  std::ios saved_;
};

void indent(std::ostream& os, int64_t n) {
  for (int64_t i = 0; i < n; ++i) os << " ";
}

void print_scale(std::ostream& os, double scale) {
  FormatGuard guard(os);  // the values after it keep the stream's fixed format
  os << std::defaultfloat << scale << " *" << std::endl;
}

// Chooses a width and a scale for the values and sets the stream's float format.
std::pair<double, int64_t> print_format(std::ostream& os, const std::vector<double>& v) {
  if (v.empty()) return {1., 0};
  bool int_mode = true;
  for (double z : v)
    if (std::isfinite(z) && z != std::ceil(z)) {
      int_mode = false;
      break;
    }
  size_t offset = 0;
  while (offset < v.size() && !std::isfinite(v[offset])) ++offset;
  double exp_min = 1, exp_max = 1;
  if (offset != v.size()) {
    exp_min = exp_max = std::fabs(v[offset]);
    for (size_t i = offset; i < v.size(); ++i) {
      double z = std::fabs(v[i]);
      if (std::isfinite(z)) {
        if (z < exp_min) exp_min = z;
        if (v[i] > exp_max) exp_max = z;  // sic: libtorch compares the signed value
      }
    }
    exp_min = exp_min != 0 ? std::floor(std::log10(exp_min)) + 1 : 1;
    exp_max = exp_max != 0 ? std::floor(std::log10(exp_max)) + 1 : 1;
  }
  double scale = 1;
  int64_t sz;
  if (int_mode) {
    if (exp_max > 9) {
      sz = 11;
      os << std::scientific << std::setprecision(4);
    } else {
      sz = int64_t(exp_max) + 1;
      os << std::defaultfloat;
    }
  } else if (exp_max - exp_min > 4) {
    sz = 11;
    if (std::fabs(exp_max) > 99 || std::fabs(exp_min) > 99) ++sz;
    os << std::scientific << std::setprecision(4);
  } else {
    if (exp_max > 5 || exp_max < 0) {
      sz = 7;
      scale = std::pow(10, exp_max - 1);
    } else {
      sz = exp_max == 0 ? 7 : int64_t(exp_max) + 6;
    }
    os << std::fixed << std::setprecision(4);
  }
  return {scale, sz};
}

// `m` is row-major rows x cols.
void print_matrix(std::ostream& os, const double* m, int64_t rows, int64_t cols, int64_t linesize, int64_t ind) {
  std::vector<double> all(m, m + rows * cols);
  auto [scale, sz] = print_format(os, all);
  indent(os, ind);
  const int64_t per_line = (linesize - ind) / (sz + 1);
  int64_t first = 0, last = -1;
  while (first < cols) {
    last = first + per_line <= cols ? first + per_line - 1 : cols - 1;
    if (per_line < cols) {
      if (first != 0) os << std::endl;
      os << "Columns " << first + 1 << " to " << last + 1;
      indent(os, ind);
    }
    if (scale != 1) {
      print_scale(os, scale);
      indent(os, ind);
    }
    for (int64_t l = 0; l < rows; ++l) {
      for (int64_t c = first; c <= last; ++c) {
        os << std::setw(sz) << m[l * cols + c] / scale;
        if (c == last) {
          os << std::endl;
          if (l != rows - 1) {
            indent(os, ind);
            if (scale != 1) os << " ";
          }
        } else {
          os << " ";
        }
      }
    }
    first = last + 1;
  }
}

void print_nd(std::ostream& os, const std::vector<double>& v, const Shape& s, int64_t linesize) {
  const int64_t outer = int64_t(s.size()) - 2, rows = s[outer], cols = s[outer + 1];
  std::vector<int64_t> counter(outer, 0);
  counter[0] = -1;
  bool start = true;
  while (true) {
    bool finished = false;
    for (int64_t i = 0;; ++i) {  // the first index counts fastest, as in libtorch
      if (++counter[i] >= s[i]) {
        if (i == outer - 1) {
          finished = true;
          break;
        }
        counter[i] = 0;
      } else {
        break;
      }
    }
    if (finished) break;
    if (!start) os << std::endl;
    start = false;
    os << "(";
    int64_t offset = 0;
    for (int64_t i = 0; i < outer; ++i) {
      offset = offset * s[i] + counter[i];
      os << counter[i] + 1 << ",";
    }
    os << ".,.) = " << std::endl;
    print_matrix(os, v.data() + offset * rows * cols, rows, cols, linesize, 1);
  }
}

}  // namespace

std::ostream& operator<<(std::ostream& os, const Tensor& t) {
  FormatGuard guard(os);
  if (!t.defined()) return os << "[ Tensor (undefined) ]";
  const std::vector<double> v = t.to_vector<double>();
  const Shape s = t.sizes().vec();
  const std::string type = t.toString();
  if (s.empty()) {
    os << std::defaultfloat << v[0] << std::endl << "[ " << type << "{}";
  } else if (s.size() == 1) {
    if (!v.empty()) {
      auto [scale, sz] = print_format(os, v);
      if (scale != 1) print_scale(os, scale);
      for (double x : v) os << std::setw(sz) << x / scale << std::endl;
    }
    os << "[ " << type << "{" << s[0] << "}";
  } else {
    if (!v.empty()) {
      if (s.size() == 2)
        print_matrix(os, v.data(), s[0], s[1], 80, 0);
      else
        print_nd(os, v, s, 80);
    }
    os << "[ " << type << "{" << s[0];
    for (size_t i = 1; i < s.size(); ++i) os << "," << s[i];
    os << "}";
  }
  return os << " ]";
}

}  // namespace kiln
