// A grouped horizontal bar chart on a logarithmic axis, written as SVG: `kiln bench --plot`.
#pragma once
#include <optional>
#include <string>
#include <vector>

namespace kiln::cli {

struct BarChart {
  struct Series {
    std::string name, colour;                   // colour: any SVG colour, "#e6550d"
    std::vector<std::optional<double>> values;  // one per category; missing values draw no bar
  };
  std::string title;
  std::vector<std::string> categories;  // one group of bars each, top to bottom
  std::vector<Series> series;           // one bar per category each, with a legend entry
};

// Writes `chart` to `path`; throws kiln::Error when it cannot. A line marks 1 on the axis.
void write_svg(const BarChart& chart, const std::string& path);

}  // namespace kiln::cli
