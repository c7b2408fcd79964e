#include "cli/bar_chart.h"

#include <kiln/kiln.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <sstream>

namespace kiln::cli {

namespace {

// Text for SVG: the five characters XML reserves, escaped.
std::string escape(const std::string& text) {
  std::string out;
  for (char c : text) {
    switch (c) {
      case '&': out += "&amp;"; break;
      case '<': out += "&lt;"; break;
      case '>': out += "&gt;"; break;
      case '"': out += "&quot;"; break;
      case '\'': out += "&apos;"; break;
      default: out += c;
    }
  }
  return out;
}

}  // namespace

void write_svg(const BarChart& chart, const std::string& path) {
  // The axis spans whole powers of ten around every value and 1.
  double lo = 1, hi = 1;
  for (const auto& s : chart.series)
    for (const auto& v : s.values)
      if (v && *v > 0) lo = std::min(lo, *v), hi = std::max(hi, *v);
  const double decade_lo = std::floor(std::log10(lo)), decade_hi = std::max(std::ceil(std::log10(hi)), decade_lo + 1);

  const double label_width = 170, plot_width = 560, bar = 12, gap = 10, top = 50, legend = 30;
  const double group = bar * double(chart.series.size()) + gap;
  const double plot_height = group * double(chart.categories.size());
  const double width = label_width + plot_width + 40, height = top + plot_height + 40 + legend;
  auto x_of = [&](double v) {
    return label_width + plot_width * (std::log10(v) - decade_lo) / (decade_hi - decade_lo);
  };

  std::ostringstream svg;
  svg << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height
      << "\" font-family=\"sans-serif\" font-size=\"12\">\n"
      << "<rect width=\"100%\" height=\"100%\" fill=\"white\"/>\n"
      << "<text x=\"10\" y=\"24\" font-size=\"14\">" << escape(chart.title) << "</text>\n";
  for (double d = decade_lo; d <= decade_hi; ++d) {  // grid and tick labels
    const double x = x_of(std::pow(10, d));
    svg << "<line x1=\"" << x << "\" y1=\"" << top << "\" x2=\"" << x << "\" y2=\"" << top + plot_height
        << "\" stroke=\"" << (d == 0 ? "black" : "#dddddd") << "\"/>\n"
        << "<text x=\"" << x << "\" y=\"" << top + plot_height + 16 << "\" text-anchor=\"middle\">" << std::pow(10, d)
        << "x</text>\n";
  }
  for (size_t c = 0; c < chart.categories.size(); ++c) {
    const double y0 = top + group * double(c);
    svg << "<text x=\"" << label_width - 8 << "\" y=\"" << y0 + group / 2 << "\" text-anchor=\"end\">"
        << escape(chart.categories[c]) << "</text>\n";
    for (size_t s = 0; s < chart.series.size(); ++s) {
      const auto& v = chart.series[s].values.at(c);
      if (!v || *v <= 0) continue;
      const double x = x_of(*v), y = y0 + bar * double(s), x1 = std::min(x, x_of(1)), x2 = std::max(x, x_of(1));
      svg << "<rect x=\"" << x1 << "\" y=\"" << y << "\" width=\"" << std::max(x2 - x1, 1.0) << "\" height=\""
          << bar - 2 << "\" fill=\"" << chart.series[s].colour << "\"><title>" << escape(chart.series[s].name) << ": "
          << *v << "</title></rect>\n";
      // The value beside the bar's free end.
      const bool right = *v >= 1;
      char label[32];
      std::snprintf(label, sizeof label, "%.3gx", *v);
      svg << "<text x=\"" << (right ? x2 + 3 : x1 - 3) << "\" y=\"" << y + bar - 3
          << "\" font-size=\"9\" text-anchor=\"" << (right ? "start" : "end") << "\">" << label << "</text>\n";
    }
  }
  double lx = label_width;
  const double ly = top + plot_height + 40;
  for (const auto& s : chart.series) {  // legend
    svg << "<rect x=\"" << lx << "\" y=\"" << ly - 10 << "\" width=\"12\" height=\"12\" fill=\"" << s.colour
        << "\"/><text x=\"" << lx + 16 << "\" y=\"" << ly << "\">" << escape(s.name) << "</text>\n";
    lx += 30 + 7.0 * double(s.name.size());
  }
  svg << "</svg>\n";

  std::ofstream file(path);
  file << svg.str();
  if (!file) throw Error("bench: cannot write the plot to " + path);
}

}  // namespace kiln::cli
