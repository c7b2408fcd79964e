// A character-level language model as a libtorch user writes one: Embedding, a two-layer LSTM
// (batch first, dropout between the layers) and a Linear head, trained with Adam and gradient
// clipping on random windows of a text, then sampled greedily. Built with kiln it includes
// <kiln/torch.h>; built with -DKILN_EXAMPLE_LIBTORCH against libtorch 1.13 it printed
// tests/reference/char_lstm.txt.
//
//   char_lstm [TEXT_FILE [EPOCHS [STEPS_PER_EPOCH [WINDOW]]]]
//
// The text is the GPL (on every Debian system) unless TEXT_FILE names another; an epoch is as many
// windows of WINDOW characters (64) as the text holds, unless STEPS_PER_EPOCH (0: that many) says
// otherwise. Seconds per epoch go to stderr.
#ifdef KILN_EXAMPLE_LIBTORCH
#include <torch/torch.h>
#else
#include <kiln/torch.h>
#endif

#include <chrono>
#include <cstdio>
#include <fstream>
#include <iostream>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

namespace nn = torch::nn;

struct CharModelImpl : nn::Module {
  CharModelImpl(int64_t vocabulary, int64_t embedding_size, int64_t hidden_size, int64_t layers)
      : embedding(register_module("embedding", nn::Embedding(vocabulary, embedding_size))),
        lstm(register_module(
            "lstm",
            nn::LSTM(nn::LSTMOptions(embedding_size, hidden_size).num_layers(layers).batch_first(true).dropout(0.1)))),
        head(register_module("head", nn::Linear(hidden_size, vocabulary))) {}

  // Logits [batch, time, vocabulary] for characters [batch, time], and the LSTM's final state.
  std::tuple<torch::Tensor, std::tuple<torch::Tensor, torch::Tensor>> forward(
      torch::Tensor characters, torch::optional<std::tuple<torch::Tensor, torch::Tensor>> state = {}) {
    auto [output, final_state] = lstm->forward(embedding->forward(characters), state);
    return {head->forward(output), final_state};
  }

  nn::Embedding embedding;
  nn::LSTM lstm;
  nn::Linear head;
};
TORCH_MODULE(CharModel);

int main(int argc, char** argv) {
  const std::string path = argc > 1 ? argv[1] : "/usr/share/common-licenses/GPL-3";
  const int64_t epochs = argc > 2 ? std::stol(argv[2]) : 3;
  const int64_t steps_limit = argc > 3 ? std::stol(argv[3]) : 0;
  const int64_t window = argc > 4 ? std::stol(argv[4]) : 64;
  const int64_t batch_size = 32, log_every = 10;
  torch::manual_seed(0);

  std::ifstream file(path);
  TORCH_CHECK(file.good(), "cannot read ", path);
  std::stringstream contents;
  contents << file.rdbuf();
  const std::string text = contents.str();
  const std::set<char> characters(text.begin(), text.end());
  const std::vector<char> alphabet(characters.begin(), characters.end());
  std::map<char, int64_t> index_of;
  for (size_t i = 0; i < alphabet.size(); ++i) index_of[alphabet[i]] = int64_t(i);
  std::vector<int64_t> encoded;
  for (char c : text) encoded.push_back(index_of[c]);
  const auto length = int64_t(encoded.size());
  const torch::Tensor data = torch::tensor(encoded, torch::kLong);
  const auto vocabulary = int64_t(alphabet.size());
  std::printf("%ld characters, %ld distinct\n", long(length), long(vocabulary));

  CharModel model(vocabulary, 64, 256, 2);
  torch::optim::Adam optimizer(model->parameters(), torch::optim::AdamOptions(2e-3));
  const int64_t steps_per_epoch = steps_limit > 0 ? steps_limit : length / (batch_size * window);

  for (int64_t epoch = 1; epoch <= epochs; ++epoch) {
    model->train();
    const auto start = std::chrono::steady_clock::now();
    double epoch_loss = 0;
    for (int64_t step = 1; step <= steps_per_epoch; ++step) {
      // A batch of random windows: each target is the window shifted by one character.
      const torch::Tensor starts = torch::randint(0, length - window - 1, {batch_size}, torch::kLong);
      std::vector<torch::Tensor> inputs, targets;
      for (int64_t b = 0; b < batch_size; ++b) {
        const int64_t s = starts[b].item<int64_t>();
        inputs.push_back(data.narrow(0, s, window));
        targets.push_back(data.narrow(0, s + 1, window));
      }
      const torch::Tensor input = torch::stack(inputs), target = torch::stack(targets);

      optimizer.zero_grad();
      auto [logits, state] = model->forward(input);
      torch::Tensor loss = torch::nn::functional::cross_entropy(logits.reshape({-1, vocabulary}), target.reshape({-1}));
      loss.backward();
      torch::nn::utils::clip_grad_norm_(model->parameters(), 5.0);
      optimizer.step();
      const double value = loss.item<double>();
      epoch_loss += value;
      if (step % log_every == 0) std::printf("epoch %ld step %3ld loss %.4f\n", long(epoch), long(step), value);
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::cerr << "epoch " << epoch << ": " << seconds << " s\n";
    std::printf("epoch %ld mean loss %.4f\n", long(epoch), epoch_loss / double(steps_per_epoch));
  }

  // Greedy sampling from a prompt, one character at a time, carrying the LSTM's state.
  torch::NoGradGuard no_grad;
  model->eval();
  std::string sample = "The ";
  std::vector<int64_t> prompt;
  for (char c : sample) prompt.push_back(index_of[c]);
  auto [logits, state] = model->forward(torch::tensor(prompt, torch::kLong).unsqueeze(0));
  for (int i = 0; i < 60; ++i) {
    const int64_t next = logits.select(1, logits.size(1) - 1).argmax(-1).item<int64_t>();
    sample += alphabet[size_t(next)];
    std::tie(logits, state) =
        model->forward(torch::tensor(std::vector<int64_t>{next}, torch::kLong).unsqueeze(0), state);
  }
  std::printf("sample: %s\n", sample.c_str());
}
