// compare_output REFERENCE PROGRAM [ARGS...]: runs PROGRAM and compares its standard output with
// the file REFERENCE (what the same program printed when built against libtorch), token by token.
// Tokens are separated by white space. Two numbers match when they differ by at most
// max(1e-3 * |reference|, 1e-5), or by one unit in the last decimal place both were printed
// with (libtorch prints tensors with 4 decimals, so two values 1e-7 apart can round apart);
// every other token must be equal. Exits 0 on a match; otherwise prints each mismatch (the
// first 20) and both outputs, and exits 1. Used by ctest as parity.<program>.
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

namespace {

std::vector<std::string> tokens(const std::string& text) {
  std::istringstream in(text);
  std::vector<std::string> out;
  for (std::string t; in >> t;) out.push_back(t);
  return out;
}

// The whole token as a number, or false.
bool parse_number(const std::string& t, double& value) {
  const char* begin = t.c_str();
  char* end = nullptr;
  value = std::strtod(begin, &end);
  return end != begin && *end == '\0';
}

// Digits after the decimal point of a number printed in fixed notation; -1 for other forms.
int decimals(const std::string& t) {
  if (t.find_first_of("eEnN") != std::string::npos) return -1;  // scientific, inf, nan
  const size_t point = t.find('.');
  return point == std::string::npos ? 0 : int(t.size() - point - 1);
}

int rounding_matches = 0;  // numbers that matched only by the last-decimal rule

bool numbers_match(const std::string& ref, const std::string& got, double r, double g) {
  if (std::isnan(r) || std::isnan(g)) return std::isnan(r) && std::isnan(g);
  if (std::isinf(r) || std::isinf(g)) return r == g;
  const double diff = std::fabs(r - g);
  if (diff <= std::max(1e-3 * std::fabs(r), 1e-5)) return true;
  const int d = decimals(ref);
  const bool rounding = d > 0 && d == decimals(got) && diff <= std::pow(10.0, -d) * (1 + 1e-9);
  rounding_matches += rounding;
  return rounding;
}

std::string run(const std::vector<std::string>& argv) {
  std::string command;
  for (const auto& a : argv) command += "'" + a + "' ";
  FILE* pipe = popen(command.c_str(), "r");
  if (!pipe) {
    std::cerr << "compare_output: cannot run " << command << std::endl;
    std::exit(2);
  }
  std::string out;
  char buffer[4096];
  for (size_t n; (n = fread(buffer, 1, sizeof buffer, pipe)) > 0;) out.append(buffer, n);
  const int status = pclose(pipe);
  if (status != 0) {
    std::cerr << "compare_output: " << command << "exited with status " << status << "; its output:\n"
              << out << (out.empty() || out.back() == '\n' ? "" : "\n");
    std::exit(1);
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: compare_output REFERENCE PROGRAM [ARGS...]" << std::endl;
    return 2;
  }
  std::ifstream file(argv[1]);
  if (!file) {
    std::cerr << "compare_output: cannot read " << argv[1] << std::endl;
    return 2;
  }
  std::stringstream reference_text;
  reference_text << file.rdbuf();
  const std::string output = run(std::vector<std::string>(argv + 2, argv + argc));

  const auto ref = tokens(reference_text.str()), got = tokens(output);
  int mismatches = 0;
  for (size_t i = 0; i < std::max(ref.size(), got.size()); ++i) {
    const std::string r = i < ref.size() ? ref[i] : "<end>", g = i < got.size() ? got[i] : "<end>";
    double rv, gv;
    const bool ok = parse_number(r, rv) && parse_number(g, gv) ? numbers_match(r, g, rv, gv) : r == g;
    if (!ok && ++mismatches <= 20)
      std::cout << "token " << i << ": expected '" << r << "', got '" << g << "'" << std::endl;
  }
  if (mismatches == 0) {
    std::cout << "output matches " << argv[1] << " (" << ref.size() << " tokens, " << rounding_matches
              << " numbers within one unit of their last printed decimal only)" << std::endl;
    return 0;
  }
  std::cout << mismatches << " mismatching tokens\n--- expected ---\n"
            << reference_text.str() << "--- got ---\n"
            << output;
  return 1;
}
