// einsum: each operand's repeated subscripts become diagonals, subscripts used nowhere else are
// summed, and the operands are combined left to right with one batched matrix product each
// (shared subscripts still needed: the batch; shared ones not needed: contracted). Gradients come
// from those ops.
#include <algorithm>
#include <numeric>

#include "frontend/ops.h"
#include "frontend/trace.h"

namespace kiln {

namespace {

using detail::shape_str;
using Labels = std::vector<int>;  // one subscript per dim

// As libtorch numbers them: A-Z are 0-25 and a-z 26-51 (the implicit output is in this order);
// the dims an ellipsis stands for are 52 on, aligned to the right across operands.
constexpr int kEllipsisBase = 52;

int label_of(char c) {
  if (c >= 'A' && c <= 'Z') return c - 'A';
  if (c >= 'a' && c <= 'z') return 26 + (c - 'a');
  return -1;
}

char letter_of(int label) {
  return label < 26 ? char('A' + label) : label < kEllipsisBase ? char('a' + label - 26) : '.';
}

// A term's subscripts with "..." as -1.
std::vector<int> parse_term(const std::string& term, const std::string& equation) {
  std::vector<int> out;
  for (size_t i = 0; i < term.size(); ++i) {
    if (term[i] == '.') {
      KILN_CHECK(term.compare(i, 3, "...") == 0 && std::count(out.begin(), out.end(), -1) == 0,
                 "einsum(): found '.' for operand that is not part of any ellipsis, or more than one ellipsis (",
                 equation, ")");
      out.push_back(-1);
      i += 2;
      continue;
    }
    const int l = label_of(term[i]);
    KILN_CHECK(l >= 0, "einsum(): invalid subscript given at index ", i,
               " in the equation string, subscripts must "
               "be in [a-zA-Z] (",
               equation, ")");
    out.push_back(l);
  }
  return out;
}

struct Term {
  Tensor t;
  Labels labels;
};

// Sums the dims of `x` whose labels are not in `keep`.
void sum_out(Term& x, const std::vector<bool>& keep) {
  std::vector<int64_t> dims;
  Labels kept;
  for (size_t d = 0; d < x.labels.size(); ++d)
    keep[size_t(x.labels[d])] ? kept.push_back(x.labels[d]) : dims.push_back(int64_t(d));
  if (dims.empty()) return;
  x.t = x.t.sum(dims);
  x.labels = kept;
}

// One dim per label: repeated labels become the diagonal, as the last dim.
void take_diagonals(Term& x, size_t operand) {
  for (bool found = true; found;) {
    found = false;
    for (size_t i = 0; i < x.labels.size() && !found; ++i)
      for (size_t j = i + 1; j < x.labels.size() && !found; ++j)
        if (x.labels[i] == x.labels[j]) {
          KILN_CHECK(x.t.size(int64_t(i)) == x.t.size(int64_t(j)), "einsum(): subscript ", letter_of(x.labels[i]),
                     " is repeated for operand ", operand, " but the sizes don't match, ", x.t.size(int64_t(j)),
                     " != ", x.t.size(int64_t(i)));
          const int label = x.labels[i];
          x.t = x.t.diagonal(0, int64_t(i), int64_t(j));
          x.labels.erase(x.labels.begin() + int64_t(j));
          x.labels.erase(x.labels.begin() + int64_t(i));
          x.labels.push_back(label);
          found = true;
        }
  }
}

int64_t position(const Labels& labels, int label) {
  return int64_t(std::find(labels.begin(), labels.end(), label) - labels.begin());
}

// a and b as one term: shared labels in `needed` are batch dims, other shared ones contracted.
Term combine(Term a, Term b, const std::vector<bool>& needed) {
  Labels batch, contracted, a_only, b_only;
  for (int l : a.labels) {
    if (position(b.labels, l) == int64_t(b.labels.size()))
      a_only.push_back(l);
    else
      (needed[size_t(l)] ? batch : contracted).push_back(l);
  }
  for (int l : b.labels)
    if (position(a.labels, l) == int64_t(a.labels.size())) b_only.push_back(l);
  // Shared labels of size 1 on one side broadcast to the other's size.
  Shape a_target = a.t.sizes().vec(), b_target = b.t.sizes().vec();
  for (int l : a.labels) {
    const int64_t pa = position(a.labels, l), pb = position(b.labels, l);
    if (pb == int64_t(b.labels.size())) continue;
    const int64_t sa = a.t.size(pa), sb = b.t.size(pb);
    KILN_CHECK(sa == sb || sa == 1 || sb == 1,
               "einsum(): operands do not broadcast with remapped shapes (original "
               "shapes) for subscript ",
               letter_of(l), ": ", sa, " and ", sb, " (", shape_str(a.t), " and ", shape_str(b.t), ")");
    a_target[size_t(pa)] = b_target[size_t(pb)] = std::max(sa, sb);
  }
  a.t = a.t.expand(a_target);
  b.t = b.t.expand(b_target);
  auto sizes_of = [](const Term& x, const Labels& ls) {
    Shape s;
    for (int l : ls) s.push_back(x.t.size(position(x.labels, l)));
    return s;
  };
  auto permuted = [](const Term& x, std::initializer_list<const Labels*> groups) {
    std::vector<int64_t> order;
    for (const Labels* g : groups)
      for (int l : *g) order.push_back(position(x.labels, l));
    return x.t.permute(order);
  };
  const Shape bs = sizes_of(a, batch), as = sizes_of(a, a_only), cs = sizes_of(a, contracted), os = sizes_of(b, b_only);
  const int64_t nb = numel_of(bs), na = numel_of(as), nc = numel_of(cs), no = numel_of(os);
  Tensor am = permuted(a, {&batch, &a_only, &contracted}).reshape({nb, na, nc});
  Tensor bm = permuted(b, {&batch, &contracted, &b_only}).reshape({nb, nc, no});
  const ScalarType t = promote(am.dtype(), bm.dtype());
  Shape out = bs;
  out.insert(out.end(), as.begin(), as.end());
  out.insert(out.end(), os.begin(), os.end());
  Term r{bmm(am.to(t), bm.to(t)).reshape(out), batch};
  r.labels.insert(r.labels.end(), a_only.begin(), a_only.end());
  r.labels.insert(r.labels.end(), b_only.begin(), b_only.end());
  return r;
}

}  // namespace

Tensor einsum(const std::string& equation_in, const TensorList& operands) {
  std::string equation;
  for (char c : equation_in)
    if (c != ' ') equation += c;
  KILN_CHECK(!operands.empty(), "einsum(): must provide at least one operand");
  const size_t arrow = equation.find("->");
  const std::string lhs = equation.substr(0, arrow);
  std::vector<std::vector<int>> terms;
  for (size_t start = 0;;) {
    const size_t comma = lhs.find(',', start);
    terms.push_back(parse_term(lhs.substr(start, comma - start), equation_in));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  KILN_CHECK(terms.size() <= operands.size(), "einsum(): fewer operands were provided than specified in the equation (",
             equation_in, ", ", operands.size(), " operands)");
  KILN_CHECK(terms.size() >= operands.size(), "einsum(): more operands were provided than specified in the equation (",
             equation_in, ", ", operands.size(), " operands)");

  // Every operand's labels, the ellipsis expanded into its dims.
  int64_t ellipsis_dims = 0;
  for (size_t i = 0; i < terms.size(); ++i) {
    const int64_t named = int64_t(terms[i].size()) - std::count(terms[i].begin(), terms[i].end(), -1);
    const bool has_ellipsis = named != int64_t(terms[i].size());
    KILN_CHECK(has_ellipsis ? operands[i].dim() >= named : operands[i].dim() == named,
               "einsum(): the number of subscripts in the equation (", named,
               ") does not match the number of dimensions (", operands[i].dim(), ") for operand ", i,
               has_ellipsis ? "" : " and no ellipsis was given");
    if (has_ellipsis) ellipsis_dims = std::max(ellipsis_dims, operands[i].dim() - named);
  }
  const size_t n_labels = size_t(kEllipsisBase + ellipsis_dims);
  std::vector<Term> xs;
  std::vector<int> uses(n_labels, 0);
  for (size_t i = 0; i < terms.size(); ++i) {
    Term x{operands[i], {}};
    const int64_t e = x.t.dim() - (int64_t(terms[i].size()) - std::count(terms[i].begin(), terms[i].end(), -1));
    for (int l : terms[i]) {
      if (l >= 0) {
        x.labels.push_back(l);
        continue;
      }
      for (int64_t j = 0; j < e; ++j) x.labels.push_back(int(kEllipsisBase + ellipsis_dims - e + j));
    }
    for (int l : x.labels) ++uses[size_t(l)];
    xs.push_back(std::move(x));
  }

  Labels output;
  if (arrow == std::string::npos) {
    for (int64_t j = 0; j < ellipsis_dims; ++j) output.push_back(int(kEllipsisBase + j));
    for (int l = 0; l < kEllipsisBase; ++l)
      if (uses[size_t(l)] == 1) output.push_back(l);
  } else {
    for (int l : parse_term(equation.substr(arrow + 2), equation_in)) {
      if (l < 0) {
        for (int64_t j = 0; j < ellipsis_dims; ++j) output.push_back(int(kEllipsisBase + j));
        continue;
      }
      KILN_CHECK(uses[size_t(l)] > 0, "einsum(): output subscript ", letter_of(l),
                 " does not appear in the equation for any input operand (", equation_in, ")");
      KILN_CHECK(std::find(output.begin(), output.end(), l) == output.end(), "einsum(): output subscript ",
                 letter_of(l), " appears more than once in the output (", equation_in, ")");
      output.push_back(l);
    }
  }

  // Labels the output or a later operand needs, for each step.
  std::vector<bool> in_output(n_labels, false);
  for (int l : output) in_output[size_t(l)] = true;
  for (size_t i = 0; i < xs.size(); ++i) take_diagonals(xs[i], i);
  auto needed_after = [&](size_t i) {  // by the output or operands after i
    std::vector<bool> need = in_output;
    for (size_t k = i + 1; k < xs.size(); ++k)
      for (int l : xs[k].labels) need[size_t(l)] = true;
    return need;
  };
  Term acc = xs[0];
  for (size_t i = 1; i < xs.size(); ++i) {
    std::vector<bool> keep_a = needed_after(i), keep_b = keep_a;
    for (int l : xs[i].labels) keep_a[size_t(l)] = true;
    for (int l : acc.labels) keep_b[size_t(l)] = true;
    sum_out(acc, keep_a);
    sum_out(xs[i], keep_b);
    acc = combine(std::move(acc), std::move(xs[i]), needed_after(i));
  }
  sum_out(acc, in_output);
  std::vector<int64_t> order;
  for (int l : output) order.push_back(position(acc.labels, l));
  return acc.t.permute(order);
}

}  // namespace kiln
