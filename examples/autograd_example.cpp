// libtorch's tutorial "Autograd in C++ Frontend" (pytorch.org/tutorials/advanced/cpp_autograd.html),
// ported as one program, plus the two errors autograd must raise. Built with kiln it includes
// <kiln/torch.h>; built with -DKILN_EXAMPLE_LIBTORCH against libtorch 1.13 it prints the reference
// output in tests/reference/autograd_example.txt. Nothing else differs between the two builds.
#ifdef KILN_EXAMPLE_LIBTORCH
#include <torch/torch.h>
#else
#include <kiln/torch.h>
#endif

#include <exception>
#include <iostream>

using namespace torch::autograd;

// --- the tutorial's custom functions ---

// A Linear function from torch::nn, with an optional bias.
class LinearFunction : public Function<LinearFunction> {
 public:
  static Variable forward(AutogradContext* ctx, Variable input, Variable weight, Variable bias = Variable()) {
    ctx->save_for_backward({input, weight, bias});
    auto output = input.mm(weight.t());
    if (bias.defined()) {
      output += bias.unsqueeze(0).expand_as(output);
    }
    return output;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    auto saved = ctx->get_saved_variables();
    auto input = saved[0];
    auto weight = saved[1];
    auto bias = saved[2];

    auto grad_output = grad_outputs[0];
    auto grad_input = grad_output.mm(weight);
    auto grad_weight = grad_output.t().mm(input);
    auto grad_bias = Variable();
    if (bias.defined()) {
      grad_bias = grad_output.sum(0);
    }
    return {grad_input, grad_weight, grad_bias};
  }
};

// A function parametrized by a non-tensor argument, kept in ctx->saved_data.
class MulConstant : public Function<MulConstant> {
 public:
  static Variable forward(AutogradContext* ctx, Variable variable, double constant) {
    ctx->saved_data["constant"] = constant;
    return variable * constant;
  }

  static variable_list backward(AutogradContext* ctx, variable_list grad_outputs) {
    // As many gradients as forward had arguments; a non-tensor argument gets Variable().
    return {grad_outputs[0] * ctx->saved_data["constant"].toDouble(), Variable()};
  }
};

// --- the tutorial's sections ---

void basic_autograd_operations() {
  std::cout << "== basic autograd operations ==" << std::endl;
  auto x = torch::ones({2, 2}, torch::requires_grad());
  std::cout << x << std::endl;

  auto y = x + 2;
  std::cout << y << std::endl;
  std::cout << y.grad_fn()->name() << std::endl;

  auto z = y * y * 3;
  auto out = z.mean();
  std::cout << z << std::endl;
  std::cout << z.grad_fn()->name() << std::endl;
  std::cout << out << std::endl;
  std::cout << out.grad_fn()->name() << std::endl;

  // requires_grad_ changes an existing tensor's flag in place.
  auto a = torch::randn({2, 2});
  a = ((a * 3) / (a - 1));
  std::cout << a.requires_grad() << std::endl;
  a.requires_grad_(true);
  std::cout << a.requires_grad() << std::endl;
  auto b = (a * a).sum();
  std::cout << b.grad_fn()->name() << std::endl;

  // d(out)/dx: a matrix of 4.5.
  out.backward();
  std::cout << x.grad() << std::endl;

  // A vector-Jacobian product.
  x = torch::randn(3, torch::requires_grad());
  y = x * 2;
  while (y.norm().item<double>() < 1000) {
    y = y * 2;
  }
  std::cout << y << std::endl;
  std::cout << y.grad_fn()->name() << std::endl;

  auto v = torch::tensor({0.1, 1.0, 0.0001}, torch::kFloat);
  y.backward(v);
  std::cout << x.grad() << std::endl;

  // Stopping autograd with NoGradGuard ...
  std::cout << x.requires_grad() << std::endl;
  std::cout << x.pow(2).requires_grad() << std::endl;
  {
    torch::NoGradGuard no_grad;
    std::cout << x.pow(2).requires_grad() << std::endl;
  }

  // ... or with detach.
  std::cout << x.requires_grad() << std::endl;
  y = x.detach();
  std::cout << y.requires_grad() << std::endl;
  std::cout << x.eq(y).all().item<bool>() << std::endl;
}

void higher_order_gradients() {
  std::cout << "== higher-order gradients ==" << std::endl;
  auto model = torch::nn::Linear(4, 3);

  auto input = torch::randn({3, 4}).requires_grad_(true);
  auto output = model(input);

  // Calculate loss
  auto target = torch::randn({3, 3});
  auto loss = torch::nn::MSELoss()(output, target);

  // Use norm of gradients as penalty
  auto grad_output = torch::ones_like(output);
  auto gradient = torch::autograd::grad({output}, {input}, /*grad_outputs=*/{grad_output},
                                        /*retain_graph=*/true, /*create_graph=*/true,
                                        /*allow_unused=*/true)[0];
  gradient = gradient.view({-1, 1});
  auto gradient_penalty = torch::pow((gradient.norm(2, /*dim=*/1) - 1), 2).mean();

  // Add gradient penalty to loss
  auto combined_loss = loss + gradient_penalty;
  combined_loss.backward();

  std::cout << input.grad() << std::endl;
  // Not printed by the tutorial: the penalty reaches the weight only through the second-order path.
  std::cout << model->weight.grad() << std::endl;
  std::cout << model->bias.grad() << std::endl;

  // The same with the penalty on each row's gradient norm and a functional loss.
  std::cout << "-- per-row gradient penalty --" << std::endl;
  auto model2 = torch::nn::Linear(4, 3);
  auto input2 = torch::randn({3, 4}).requires_grad_(true);
  auto output2 = model2(input2);
  auto loss2 = torch::nn::functional::mse_loss(output2, torch::ones_like(output2));
  auto gradient2 = torch::autograd::grad({output2}, {input2}, /*grad_outputs=*/{torch::ones_like(output2)},
                                         /*retain_graph=*/{}, /*create_graph=*/true)[0];
  auto gradient_penalty2 = torch::pow((gradient2.norm(2, /*dim=*/1) - 1), 2).mean();
  auto combined_loss2 = loss2 + gradient_penalty2;
  std::cout << combined_loss2.item<float>() << std::endl;
  combined_loss2.backward();
  std::cout << input2.grad() << std::endl;
  std::cout << model2->weight.grad() << std::endl;
}

void custom_functions() {
  std::cout << "== custom autograd functions ==" << std::endl;
  {
    auto x = torch::randn({2, 3}).requires_grad_();
    auto weight = torch::randn({4, 3}).requires_grad_();
    auto y = LinearFunction::apply(x, weight);
    y.sum().backward();
    std::cout << x.grad() << std::endl;
    std::cout << weight.grad() << std::endl;
  }
  {
    // Not in the tutorial: the same function with its optional bias.
    auto x = torch::randn({2, 3}).requires_grad_();
    auto weight = torch::randn({4, 3}).requires_grad_();
    auto bias = torch::randn({4}).requires_grad_();
    auto y = LinearFunction::apply(x, weight, bias);
    (y * y).sum().backward();
    std::cout << y << std::endl;
    std::cout << x.grad() << std::endl;
    std::cout << bias.grad() << std::endl;
  }
  {
    auto x = torch::randn({2}).requires_grad_();
    auto y = MulConstant::apply(x, 5.5);
    y.sum().backward();
    std::cout << x.grad() << std::endl;
  }
}

// Errors autograd raises; the messages differ between libraries, so only the fact is printed.
void autograd_errors() {
  std::cout << "== autograd errors ==" << std::endl;
  {
    // A second backward through a graph whose saved tensors were freed by the first.
    auto x = torch::randn({3}, torch::requires_grad());
    auto y = (x * x).sum();
    y.backward();
    try {
      y.backward();
      std::cout << "second backward ran" << std::endl;
    } catch (const std::exception&) {
      std::cout << "second backward threw" << std::endl;
    }
    // With retain_graph the second backward runs and the gradients accumulate.
    auto z = (x * x).sum();
    z.backward({}, /*retain_graph=*/true);
    z.backward();
    std::cout << x.grad() << std::endl;
  }
  {
    // Modifying in place a tensor that backward needs.
    auto x = torch::randn({3}, torch::requires_grad());
    auto u = x * 2;
    auto w = u * u;
    u.add_(1);
    try {
      w.sum().backward();
      std::cout << "inplace backward ran" << std::endl;
    } catch (const std::exception&) {
      std::cout << "inplace backward threw" << std::endl;
    }
    std::cout << u._version() << std::endl;
  }
}

int main() {
  torch::manual_seed(0);
  basic_autograd_operations();
  higher_order_gradients();
  custom_functions();
  autograd_errors();
  return 0;
}
