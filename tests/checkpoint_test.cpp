// Checkpoints as libtorch programs write them: a run saved after 3 steps (model, optimizer,
// scheduler) and resumed in a fresh process-like setting (new model and optimizer, another seed)
// ends bit for bit where 6 uninterrupted steps end, for every optimizer kiln has; bad checkpoints
// throw kiln::Error naming the file and the mismatch and change nothing; tensors, tensor lists
// and archives round-trip.
#include <gtest/gtest.h>
#include <kiln/torch.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "nn_test_util.h"
#include "serialize_test_util.h"

namespace nn = torch::nn;
namespace optim = torch::optim;
using kiln::Tensor;
using nn_test::expect_error;
using serialize_test::bits;
using serialize_test::TempDir;

namespace {

nn::Sequential make_model(uint64_t seed, int64_t hidden = 6) {
  torch::manual_seed(seed);
  return nn::Sequential(nn::Linear(4, hidden), nn::Tanh(), nn::Linear(hidden, 2));
}

struct Batches {
  std::vector<Tensor> x, y;
};
Batches make_batches() {
  torch::manual_seed(100);
  Batches b;
  for (int i = 0; i < 6; ++i) {
    b.x.push_back(torch::randn({5, 4}));
    b.y.push_back(torch::randn({5, 2}));
  }
  return b;
}

struct TrainingRun {
  nn::Sequential model{nullptr};
  std::unique_ptr<optim::Optimizer> optimizer;
  std::unique_ptr<optim::LRScheduler> scheduler;
};

struct OptimizerCase {
  std::string name;
  std::function<std::unique_ptr<optim::Optimizer>(nn::Sequential&)> make_optimizer;
  std::function<std::unique_ptr<optim::LRScheduler>(optim::Optimizer&)> make_scheduler;
};

// Names the case in test listings (ctest), not its bytes.
void PrintTo(const OptimizerCase& c, std::ostream* os) { *os << c.name; }

std::unique_ptr<optim::LRScheduler> step_lr(optim::Optimizer& o) { return std::make_unique<optim::StepLR>(o, 2, 0.5); }

template <typename Optimizer, typename Options>
std::function<std::unique_ptr<optim::Optimizer>(nn::Sequential&)> one_group(Options options) {
  return [options](nn::Sequential& m) { return std::make_unique<Optimizer>(m->parameters(), options); };
}

std::vector<OptimizerCase> optimizer_cases() {
  return {
      {"SGD", one_group<optim::SGD>(optim::SGDOptions(0.1)), step_lr},
      {"SGDMomentumNesterovWeightDecay",
       one_group<optim::SGD>(optim::SGDOptions(0.1).momentum(0.9).nesterov(true).weight_decay(1e-2)), step_lr},
      {"Adam", one_group<optim::Adam>(optim::AdamOptions(1e-2)), step_lr},
      {"AdamAmsgrad", one_group<optim::Adam>(optim::AdamOptions(1e-2).amsgrad(true).weight_decay(1e-3)), step_lr},
      {"AdamW", one_group<optim::AdamW>(optim::AdamWOptions(1e-2)), step_lr},
      {"RMSpropCenteredMomentum", one_group<optim::RMSprop>(optim::RMSpropOptions(1e-2).centered(true).momentum(0.9)),
       step_lr},
      // Two groups with their own options, and a scheduler whose base learning rates are state.
      {"AdamTwoGroupsCosine",
       [](nn::Sequential& m) {
         std::vector<optim::OptimizerParamGroup> groups{
             optim::OptimizerParamGroup(m[0]->parameters()),
             optim::OptimizerParamGroup(m[2]->parameters(),
                                        std::make_unique<optim::AdamOptions>(optim::AdamOptions(3e-2).amsgrad(true)))};
         return std::make_unique<optim::Adam>(groups, optim::AdamOptions(1e-2));
       },
       [](optim::Optimizer& o) { return std::make_unique<optim::CosineAnnealingLR>(o, 4, 1e-3); }},
  };
}

TrainingRun start(const OptimizerCase& c, uint64_t seed) {
  TrainingRun run;
  run.model = make_model(seed);
  run.optimizer = c.make_optimizer(run.model);
  run.scheduler = c.make_scheduler(*run.optimizer);
  return run;
}

void train(TrainingRun& run, const Batches& batches, int from, int to) {
  for (int i = from; i < to; ++i) {
    run.optimizer->zero_grad();
    Tensor loss = torch::nn::functional::mse_loss(run.model->forward(batches.x[i]), batches.y[i]);
    loss.backward();
    run.optimizer->step();
    run.scheduler->step();
  }
}

std::vector<std::string> parameter_bits(const nn::Sequential& model) {
  std::vector<std::string> out;
  for (const auto& p : model->parameters()) out.push_back(bits(p));
  return out;
}
std::vector<double> learning_rates(const optim::Optimizer& o) {
  std::vector<double> out;
  for (const auto& group : o.param_groups()) out.push_back(group.options().get_lr());
  return out;
}

class Resume : public testing::TestWithParam<OptimizerCase> {};

TEST_P(Resume, ThreeStepsSavedLoadedAndThreeMoreEqualSixBitwise) {
  const OptimizerCase& c = GetParam();
  const Batches batches = make_batches();
  TempDir dir;

  TrainingRun uninterrupted = start(c, 1);
  train(uninterrupted, batches, 0, 6);

  TrainingRun first = start(c, 1);
  train(first, batches, 0, 3);
  torch::save(first.model, dir.file("model.safetensors"));
  torch::save(*first.optimizer, dir.file("optimizer.safetensors"));
  torch::save(*first.scheduler, dir.file("scheduler.safetensors"));

  TrainingRun resumed = start(c, 2);  // another seed: everything it ends with comes from the files
  ASSERT_NE(parameter_bits(resumed.model), parameter_bits(first.model));
  torch::load(resumed.model, dir.file("model.safetensors"));
  torch::load(*resumed.optimizer, dir.file("optimizer.safetensors"));
  torch::load(*resumed.scheduler, dir.file("scheduler.safetensors"));
  EXPECT_EQ(learning_rates(*resumed.optimizer), learning_rates(*first.optimizer));
  EXPECT_EQ(resumed.optimizer->state().size(), first.optimizer->state().size());
  train(resumed, batches, 3, 6);

  EXPECT_EQ(parameter_bits(resumed.model), parameter_bits(uninterrupted.model));
  EXPECT_EQ(learning_rates(*resumed.optimizer), learning_rates(*uninterrupted.optimizer));
}

INSTANTIATE_TEST_SUITE_P(Checkpoint, Resume, testing::ValuesIn(optimizer_cases()),
                         [](const testing::TestParamInfo<OptimizerCase>& info) { return info.param.name; });

// Without the optimizer's state (or the scheduler's) the resumed run does not end where the
// uninterrupted one does: the equality above is not one that holds anyway.
TEST(Checkpoint, ResumingWithoutOptimizerStateDiffers) {
  const OptimizerCase c = optimizer_cases()[2];  // Adam
  const Batches batches = make_batches();
  TempDir dir;
  TrainingRun uninterrupted = start(c, 1), first = start(c, 1);
  train(uninterrupted, batches, 0, 6);
  train(first, batches, 0, 3);
  torch::save(first.model, dir.file("model.safetensors"));
  TrainingRun resumed = start(c, 2);
  torch::load(resumed.model, dir.file("model.safetensors"));
  train(resumed, batches, 3, 6);
  EXPECT_NE(parameter_bits(resumed.model), parameter_bits(uninterrupted.model));
}

// One file for everything, as libtorch programs nest archives: dotted keys, values in metadata.
TEST(Checkpoint, OneArchiveHoldsModelOptimizerSchedulerAndEpoch) {
  const OptimizerCase c = optimizer_cases()[5];  // RMSprop
  const Batches batches = make_batches();
  TempDir dir;
  const std::string path = dir.file("checkpoint.safetensors");
  TrainingRun uninterrupted = start(c, 1), first = start(c, 1);
  train(uninterrupted, batches, 0, 6);
  train(first, batches, 0, 3);
  {
    torch::serialize::OutputArchive archive, model, optimizer, scheduler;
    first.model->save(model);
    first.optimizer->save(optimizer);
    scheduler << *first.scheduler;
    archive.write("model", model);
    archive.write("optimizer", optimizer);
    archive.write("scheduler", scheduler);
    archive.write("epoch", int64_t(3));
    archive.save_to(path);
  }
  const auto tensors = kiln::load_safetensors(path);
  EXPECT_TRUE(tensors.contains("model.0.weight"));
  EXPECT_TRUE(tensors.contains("optimizer.state.0.square_avg"));
  EXPECT_TRUE(tensors.contains("optimizer.state.3.grad_avg"));

  TrainingRun resumed = start(c, 2);
  torch::serialize::InputArchive archive, model, optimizer, scheduler;
  archive.load_from(path);
  std::vector<std::string> keys = archive.keys();
  std::sort(keys.begin(), keys.end());
  EXPECT_EQ(keys, (std::vector<std::string>{"epoch", "model", "optimizer", "scheduler"}));
  archive.read("model", model);
  archive.read("optimizer", optimizer);
  archive.read("scheduler", scheduler);
  resumed.model->load(model);
  optimizer >> *resumed.optimizer;
  resumed.scheduler->load(scheduler);
  torch::IValue epoch;
  archive.read("epoch", epoch);
  EXPECT_EQ(epoch.toInt(), 3);
  train(resumed, batches, 3, 6);
  EXPECT_EQ(parameter_bits(resumed.model), parameter_bits(uninterrupted.model));
}

// SGD's momentum buffer exists from the first step on; saved before it, it loads as absent, and
// replaces whatever state the optimizer had.
TEST(Checkpoint, LazyStateRoundTripsAsAbsent) {
  TempDir dir;
  const std::string path = dir.file("sgd.safetensors");
  const Batches batches = make_batches();
  const OptimizerCase c = optimizer_cases()[1];
  TrainingRun fresh = start(c, 1);
  torch::save(*fresh.optimizer, path);
  EXPECT_TRUE(kiln::load_safetensors(path).is_empty());

  TrainingRun trained = start(c, 1);
  train(trained, batches, 0, 3);
  ASSERT_EQ(trained.optimizer->state().size(), 4u);
  torch::load(*trained.optimizer, path);
  EXPECT_TRUE(trained.optimizer->state().empty());
  EXPECT_EQ(learning_rates(*trained.optimizer), std::vector<double>{0.1});  // the lr StepLR had halved, restored
}

// --- bad checkpoints ---

// An Adam optimizer over `model` trained two steps, saved to `path`.
void save_trained_adam(const std::string& path) {
  const Batches batches = make_batches();
  TrainingRun run = start(optimizer_cases()[2], 1);
  train(run, batches, 0, 2);
  torch::save(*run.optimizer, path);
}

TEST(Checkpoint, LoadingIntoAnotherOptimizerTypeThrows) {
  TempDir dir;
  const std::string path = dir.file("adam.safetensors");
  save_trained_adam(path);
  nn::Sequential model = make_model(1);
  optim::SGD sgd(model->parameters(), optim::SGDOptions(0.1));
  expect_error([&] { torch::load(sgd, path); },
               {path, "the file holds the state of an optimizer of type Adam, not SGD"});
  optim::AdamW adamw(model->parameters());
  expect_error([&] { torch::load(adamw, path); }, {path, "of type Adam, not AdamW"});
  // A module's file holds no optimizer at all.
  torch::save(model, dir.file("model.safetensors"));
  optim::Adam adam(model->parameters());
  expect_error([&] { torch::load(adam, dir.file("model.safetensors")); },
               {dir.file("model.safetensors"), "holds no optimizer"});
}

TEST(Checkpoint, LoadingIntoOtherParametersThrowsAndChangesNothing) {
  TempDir dir;
  const std::string path = dir.file("adam.safetensors");
  save_trained_adam(path);
  const Batches batches = make_batches();

  // Fewer parameters; other shapes; another number of groups. The optimizer has state and an lr
  // of its own, which a failed load keeps.
  TrainingRun other = start(optimizer_cases()[2], 3);
  train(other, batches, 0, 3);
  const auto lrs = learning_rates(*other.optimizer);
  auto params = other.model->parameters();
  params.pop_back();
  optim::Adam fewer(params, optim::AdamOptions(0.5));
  expect_error([&] { torch::load(fewer, path); },
               {path, "param group 0 has 4 parameter(s) in the file, 3 in this optimizer"});

  nn::Sequential wider = make_model(1, /*hidden=*/5);
  optim::Adam reshaped(wider->parameters());
  expect_error([&] { torch::load(reshaped, path); },
               {path, "parameter 0: the file's state is for shape [6,4], the parameter's shape is [5,4]"});

  optim::Adam two_groups(std::vector<optim::OptimizerParamGroup>{optim::OptimizerParamGroup({params.front()}),
                                                                 optim::OptimizerParamGroup({params.back()})});
  expect_error([&] { torch::load(two_groups, path); }, {path, "the file has 1 param group(s), this optimizer 2"});
  EXPECT_TRUE(two_groups.state().empty());

  // Loads that fail late (in the state) leave the options and the state as they were.
  const std::string before =
      bits(static_cast<optim::AdamParamState&>(*other.optimizer->state().begin()->second).exp_avg());
  auto metadata_with = [&](const std::string& from, const std::string& to) {
    kiln::SafetensorsMetadata metadata;
    auto tensors = kiln::load_safetensors(path, &metadata);
    const size_t at = metadata["optimizer"].find(from);
    EXPECT_NE(at, std::string::npos) << from;
    metadata["optimizer"].replace(at, from.size(), to);
    const std::string bad = dir.file("bad.safetensors");
    kiln::save_safetensors(tensors, bad, metadata);
    return bad;
  };
  const std::string extra_state = metadata_with(R"("state":{"0")", R"("state":{"9":{"step":2},"0")");
  expect_error([&] { torch::load(*other.optimizer, extra_state); },
               {extra_state, "the state \"9\" belongs to no parameter"});
  EXPECT_EQ(learning_rates(*other.optimizer), lrs);
  EXPECT_EQ(other.optimizer->state().size(), 4u);
  EXPECT_EQ(bits(static_cast<optim::AdamParamState&>(*other.optimizer->state().begin()->second).exp_avg()), before);
}

TEST(Checkpoint, MalformedOptimizerMetadataThrowsNamingTheFile) {
  TempDir dir;
  const std::string path = dir.file("adam.safetensors");
  save_trained_adam(path);
  kiln::SafetensorsMetadata good;
  const auto tensors = kiln::load_safetensors(path, &good);
  nn::Sequential model = make_model(1);
  optim::Adam adam(model->parameters());
  const std::string bad = dir.file("bad.safetensors");

  // Each: the metadata's text changed (from -> to), or tensors dropped/added, and the message.
  auto expect_bad = [&](const std::string& structure, const kiln::StateDict& with, const std::string& message) {
    kiln::SafetensorsMetadata metadata = good;
    metadata["optimizer"] = structure;
    kiln::save_safetensors(with, bad, metadata);
    expect_error([&] { torch::load(adam, bad); }, {bad, message});
    EXPECT_TRUE(adam.state().empty()) << message;
  };
  auto replaced = [&](const std::string& from, const std::string& to) {
    std::string text = good.at("optimizer");
    const size_t at = text.find(from);
    EXPECT_NE(at, std::string::npos) << from;
    return text.replace(at, from.size(), to);
  };
  expect_bad("{\"type\": \"Adam\", ", tensors, "is not valid JSON");
  expect_bad("[1, 2]", tensors, "has no \"type\"");
  expect_bad(std::string(100, '[') + std::string(100, ']'), tensors, "nested too deeply");
  expect_bad(replaced(R"("type":"Adam")", R"("type":7)"), tensors, "\"type\" is not a string");
  expect_bad(replaced(R"("lr":0.01)", R"("lr":"fast")"), tensors, "option \"lr\" is not a number");
  expect_bad(replaced(R"("amsgrad":false)", R"("amsgrad":0)"), tensors, "option \"amsgrad\" is not a boolean");
  expect_bad(replaced(R"("betas":[0.9,0.999])", R"("betas":[0.9])"), tensors, "is not a pair of numbers");
  expect_bad(replaced(R"("eps")", R"("epsilon")"), tensors, "has no \"eps\"");
  expect_bad(replaced(R"("params":[0,1,2,3])", R"("params":[0,1,1,3])"), tensors, "the index 1 appears twice");
  expect_bad(replaced(R"({"step":2})", R"({"steps":2})"), tensors, "has no \"step\"");
  expect_bad(replaced(R"("0":{"step":2})", R"("x":{"step":2})"), tensors, "the state \"x\" is not a parameter's index");

  kiln::StateDict missing("Tensor"), extra("Tensor"), orphan("Tensor"), reshaped("Tensor");
  for (const auto& item : tensors) {
    if (item.key() != "state.1.exp_avg_sq") missing.insert(item.key(), item.value());
    extra.insert(item.key(), item.value());
    orphan.insert(item.key(), item.value());
    reshaped.insert(item.key(), item.key() == "state.1.exp_avg" ? item.value().reshape({2, 3}) : item.value());
  }
  extra.insert("state.2.momentum", tensors["state.2.exp_avg"]);
  orphan.insert("state.7.exp_avg", tensors["state.2.exp_avg"]);
  expect_bad(good.at("optimizer"), missing, "the state of parameter 1 lacks the tensor \"state.1.exp_avg_sq\"");
  expect_bad(good.at("optimizer"), extra, "the tensor \"state.2.momentum\" is not part of the state of Adam");
  expect_bad(good.at("optimizer"), orphan, "the tensors \"state.7.*\" belong to no state");
  expect_bad(good.at("optimizer"), reshaped,
             "the tensor \"state.1.exp_avg\" (float32 [2, 3]) does not match its parameter (float32 [6])");
}

// --- tensors, tensor lists, archives ---

TEST(Checkpoint, TensorsRoundTripWithTheirDtypeShapeAndBits) {
  TempDir dir;
  torch::manual_seed(5);
  const std::vector<std::pair<std::string, Tensor>> cases = {
      {"float32", torch::randn({2, 3})},
      {"float64", torch::randn({3}, torch::kDouble)},
      {"int64", torch::arange(-3, 9, torch::kLong).reshape({3, 4})},
      {"bool", torch::randn({5}) > 0},
      {"transposed", torch::randn({3, 4}).t()},
      {"narrowed", torch::randn({4, 5}).narrow(1, 1, 3)},
      {"0-d", torch::tensor(2.5)},
      {"empty", torch::zeros({0, 3})},
  };
  for (const auto& [name, saved] : cases) {
    const std::string path = dir.file(name + ".safetensors");
    torch::save(saved, path);
    EXPECT_EQ(kiln::load_safetensors(path).keys(), std::vector<std::string>{"0"}) << name;  // libtorch's key
    Tensor loaded;
    torch::load(loaded, path);
    ASSERT_TRUE(loaded.defined()) << name;
    EXPECT_EQ(loaded.dtype(), saved.dtype()) << name;
    EXPECT_EQ(loaded.sizes().vec(), saved.sizes().vec()) << name;
    EXPECT_EQ(bits(loaded), bits(saved)) << name;
  }
}

TEST(Checkpoint, LoadingIntoADefinedTensor) {
  TempDir dir;
  const std::string path = dir.file("t.safetensors");
  torch::manual_seed(6);
  const Tensor saved = torch::randn({2, 3});
  torch::save(saved, path);

  // The same shape and dtype: copied in place, so another handle sees it; requires_grad stays.
  Tensor target = torch::zeros({2, 3}).requires_grad_(true), alias = target;
  torch::load(target, path);
  EXPECT_TRUE(target.is_same(alias));
  EXPECT_TRUE(target.requires_grad());
  EXPECT_EQ(bits(alias), bits(saved));

  // Otherwise the variable is assigned the tensor read.
  Tensor other = torch::zeros({4}, torch::kDouble);
  torch::load(other, path);
  EXPECT_EQ(other.sizes().vec(), (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(other.dtype(), torch::kFloat);
  EXPECT_EQ(bits(other), bits(saved));

  expect_error([&] { torch::load(other, dir.file("absent.safetensors")); }, {dir.file("absent.safetensors")});
  std::vector<Tensor> list{saved, saved};
  torch::save(list, dir.file("list.safetensors"));
  Tensor first;
  torch::load(first, dir.file("list.safetensors"));  // "0" is there too
  EXPECT_EQ(bits(first), bits(saved));
}

TEST(Checkpoint, TensorListsRoundTripAndLoadAppends) {
  TempDir dir;
  const std::string path = dir.file("list.safetensors");
  torch::manual_seed(7);
  const std::vector<Tensor> saved{torch::randn({2}), torch::arange(4, torch::kLong), torch::randn({3, 3}).t(),
                                  torch::tensor(true)};
  torch::save(saved, path);
  EXPECT_EQ(kiln::load_safetensors(path).size(), 4u);

  const Tensor existing = torch::ones({1});
  std::vector<Tensor> loaded{existing};  // libtorch appends to what the vector holds
  torch::load(loaded, path);
  ASSERT_EQ(loaded.size(), 5u);
  EXPECT_TRUE(loaded[0].is_same(existing));
  for (size_t i = 0; i < saved.size(); ++i) {
    EXPECT_EQ(loaded[i + 1].dtype(), saved[i].dtype()) << i;
    EXPECT_EQ(loaded[i + 1].sizes().vec(), saved[i].sizes().vec()) << i;
    EXPECT_EQ(bits(loaded[i + 1]), bits(saved[i])) << i;
  }

  torch::save(std::vector<Tensor>{}, dir.file("none.safetensors"));
  std::vector<Tensor> none;
  torch::load(none, dir.file("none.safetensors"));
  EXPECT_TRUE(none.empty());
}

TEST(Checkpoint, ArchivesHoldTensorsValuesAndNestedArchives) {
  TempDir dir;
  const std::string path = dir.file("archive.safetensors");
  torch::manual_seed(8);
  const Tensor weights = torch::randn({3, 2});
  nn::Sequential model = make_model(9);
  {
    torch::serialize::OutputArchive archive, nested;
    archive.write("weights", weights);
    archive("epoch", 12);  // operator() forwards to write
    archive.write("lr", 0.1);
    archive.write("name", "run-3");
    archive.write("done", true);
    nested << model.ptr();
    nested.write("steps", int64_t(-40));
    archive.write("model", nested);
    archive.save_to(path);
  }
  kiln::SafetensorsMetadata metadata;
  kiln::load_safetensors(path, &metadata);
  EXPECT_EQ(metadata, (kiln::SafetensorsMetadata{{"format", "pt"},
                                                 {"epoch", "12"},
                                                 {"lr", "0.1"},
                                                 {"name", "run-3"},
                                                 {"done", "true"},
                                                 {"model.steps", "-40"}}));

  torch::serialize::InputArchive archive;
  archive.load_from(path);
  std::vector<std::string> keys = archive.keys();
  std::sort(keys.begin(), keys.end());
  EXPECT_EQ(keys, (std::vector<std::string>{"done", "epoch", "lr", "model", "name", "weights"}));
  torch::IValue epoch, lr, name, done;
  archive("epoch", epoch);
  archive.read("lr", lr);
  archive.read("name", name);
  archive.read("done", done);
  EXPECT_EQ(epoch.toInt(), 12);
  EXPECT_EQ(lr.toDouble(), 0.1);  // exactly: the shortest text that reads back as the same double
  EXPECT_EQ(name.toStringRef(), "run-3");
  EXPECT_TRUE(done.toBool());
  expect_error([&] { name.toInt(); }, {"\"run-3\" is not an integer"});
  expect_error([&] { epoch.toBool(); }, {"\"12\" is not a boolean"});

  Tensor read_weights;
  archive.read("weights", read_weights);
  EXPECT_EQ(bits(read_weights), bits(weights));
  Tensor absent;
  EXPECT_FALSE(archive.try_read("bias", absent));
  EXPECT_FALSE(absent.defined());
  expect_error([&] { archive.read("bias", absent); }, {path, "no tensor \"bias\""});
  expect_error([&] { archive.read("steps", epoch); }, {path, "no value \"steps\""});

  torch::serialize::InputArchive nested;
  EXPECT_FALSE(archive.try_read("optimizer", nested));
  archive.read("model", nested);
  keys = nested.keys();
  std::sort(keys.begin(), keys.end());
  EXPECT_EQ(keys, (std::vector<std::string>{"0", "2", "steps"}));
  torch::IValue steps;
  nested.read("steps", steps);
  EXPECT_EQ(steps.toInt(), -40);
  nn::Sequential loaded = make_model(10);
  nested >> loaded.ptr();
  EXPECT_EQ(parameter_bits(loaded), parameter_bits(model));

  // A module the archive lacks keys for: an error naming the file and the full keys.
  nn::Sequential bigger(nn::Linear(4, 6), nn::Tanh(), nn::Linear(6, 2), nn::Linear(2, 2));
  expect_error([&] { bigger->load(nested); }, {path, "missing key(s) \"model.3.weight\", \"model.3.bias\""});
  nn::Sequential reshaped = make_model(1, /*hidden=*/5);
  expect_error([&] { reshaped->load(nested); }, {path, "size mismatch for 0.weight"});

  // The same bytes from memory.
  const std::string bytes = serialize_test::read_bytes(path);
  torch::serialize::InputArchive from_memory;
  from_memory.load_from(bytes.data(), bytes.size());
  from_memory.read("lr", lr);
  EXPECT_EQ(lr.toDouble(), 0.1);
}

TEST(Checkpoint, ArchiveMisuseThrows) {
  TempDir dir;
  torch::serialize::OutputArchive archive;
  archive.write("format", "mine");
  expect_error([&] { archive.save_to(dir.file("a.safetensors")); }, {dir.file("a.safetensors"), "\"format\""});
  expect_error([&] { archive.write("", torch::ones({1})); }, {"the key is empty"});
  expect_error([&] { archive.write("x", Tensor()); }, {"the tensor \"x\" is undefined"});
  expect_error([&] { archive.write("x", torch::IValue()); }, {"the value \"x\" is None"});
  torch::serialize::InputArchive unloaded;
  Tensor t;
  expect_error([&] { unloaded.read("x", t); }, {"nothing loaded"});
}

}  // namespace
