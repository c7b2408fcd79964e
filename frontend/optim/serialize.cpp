// Optimizer::save and Optimizer::load for SGD, Adam, AdamW and RMSprop: state tensors in the
// archive, the structure as JSON text (nlohmann-json) in its "optimizer" value.
#include <charconv>
#include <nlohmann/json.hpp>
#include <tuple>
#include <type_traits>
#include <unordered_map>
#include <unordered_set>

#include "frontend/autograd.h"
#include "frontend/nn/archive.h"
#include "frontend/ops.h"
#include "frontend/optim/adam.h"
#include "frontend/optim/rmsprop.h"
#include "frontend/optim/sgd.h"

namespace kiln::optim {

namespace {

using Json = nlohmann::ordered_json;
constexpr const char* kStructureKey = "optimizer";
constexpr int kMaxJsonDepth = 64;

// Each option of a group, as f(name, field), for saving and loading alike.
template <typename Options, typename F>
void visit_options(Options& o, F&& f) {
  using Plain = std::remove_const_t<Options>;
  if constexpr (std::is_same_v<Plain, SGDOptions>) {
    f("lr", o.lr()), f("momentum", o.momentum()), f("dampening", o.dampening());
    f("weight_decay", o.weight_decay()), f("nesterov", o.nesterov());
  } else if constexpr (std::is_same_v<Plain, AdamOptions> || std::is_same_v<Plain, AdamWOptions>) {
    f("lr", o.lr()), f("betas", o.betas()), f("eps", o.eps()), f("weight_decay", o.weight_decay());
    f("amsgrad", o.amsgrad());
  } else {
    static_assert(std::is_same_v<Plain, RMSpropOptions>);
    f("lr", o.lr()), f("alpha", o.alpha()), f("eps", o.eps()), f("weight_decay", o.weight_decay());
    f("momentum", o.momentum()), f("centered", o.centered());
  }
}

// Each field of a parameter's state: step(name, count) for step counts, tensor(name, tensor,
// required) for tensors (a state without a required tensor is malformed; others may be absent).
template <typename State, typename Step, typename TensorField>
void visit_state(State& s, Step&& step, TensorField&& tensor) {
  using Plain = std::remove_const_t<State>;
  if constexpr (std::is_same_v<Plain, SGDParamState>) {
    tensor("momentum_buffer", s.momentum_buffer(), true);
  } else if constexpr (std::is_same_v<Plain, AdamParamState>) {
    step("step", s.step());
    tensor("exp_avg", s.exp_avg(), true), tensor("exp_avg_sq", s.exp_avg_sq(), true);
    tensor("max_exp_avg_sq", s.max_exp_avg_sq(), false);
  } else {
    static_assert(std::is_same_v<Plain, RMSpropParamState>);
    step("step", s.step());
    tensor("square_avg", s.square_avg(), true), tensor("momentum_buffer", s.momentum_buffer(), false);
    tensor("grad_avg", s.grad_avg(), false);
  }
}

template <typename OptionsT, typename StateT>
struct Kind {
  using Options = OptionsT;
  using State = StateT;
  const char* name;
};

// Calls fn(Kind<...>{name}) with the optimizer's options and state types.
template <typename Fn>
void dispatch(const Optimizer& optimizer, const char* what, Fn&& fn) {
  if (dynamic_cast<const SGD*>(&optimizer)) return fn(Kind<SGDOptions, SGDParamState>{"SGD"});
  if (dynamic_cast<const Adam*>(&optimizer)) return fn(Kind<AdamOptions, AdamParamState>{"Adam"});
  if (dynamic_cast<const AdamW*>(&optimizer)) return fn(Kind<AdamWOptions, AdamParamState>{"AdamW"});
  if (dynamic_cast<const RMSprop*>(&optimizer)) return fn(Kind<RMSpropOptions, RMSpropParamState>{"RMSprop"});
  throw Error(detail::concat(what,
                             ": kiln saves and loads SGD, Adam, AdamW and RMSprop; an optimizer of another "
                             "type must override save() and load()"));
}

std::string state_tensor_key(const std::string& index, const std::string& name) {
  return "state." + index + "." + name;
}

// Reads one JSON field into a field of options or state, or says what is wrong.
void read_json(const Json& j, double& out, const std::string& what) {
  KILN_CHECK(j.is_number(), what, " is not a number: ", j.dump());
  out = j.get<double>();
}
void read_json(const Json& j, bool& out, const std::string& what) {
  KILN_CHECK(j.is_boolean(), what, " is not a boolean: ", j.dump());
  out = j.get<bool>();
}
void read_json(const Json& j, int64_t& out, const std::string& what) {
  KILN_CHECK(j.is_number_integer(), what, " is not an integer: ", j.dump());
  out = j.get<int64_t>();
}
void read_json(const Json& j, std::tuple<double, double>& out, const std::string& what) {
  KILN_CHECK(j.is_array() && j.size() == 2 && j[0].is_number() && j[1].is_number(), what,
             " is not a pair of numbers: ", j.dump());
  out = {j[0].get<double>(), j[1].get<double>()};
}

const Json& member(const Json& object, const char* key, const std::string& what) {
  KILN_CHECK(object.is_object() && object.contains(key), what, " has no \"", key, "\"");
  return object[key];
}

}  // namespace

void Optimizer::save(serialize::OutputArchive& archive) const {
  dispatch(*this, "Optimizer::save", [&](auto kind) {
    using Kind_ = decltype(kind);
    Json groups = Json::array(), states = Json::object();
    int64_t index = 0;
    for (const auto& group : param_groups_) {
      Json params = Json::array(), shapes = Json::array(), options = Json::object();
      for (const auto& p : group.params()) {
        params.push_back(index);
        shapes.push_back(p.sizes().vec());
        const auto found = state_.find(state_key(p));
        if (found != state_.end() && found->second) {
          const std::string key = std::to_string(index);
          Json scalars = Json::object();
          visit_state(
              static_cast<const typename Kind_::State&>(*found->second),
              [&](const char* name, int64_t count) { scalars[name] = count; },
              [&](const char* name, const Tensor& t, bool) {
                if (t.defined()) archive.write(state_tensor_key(key, name), t);
              });
          states[key] = std::move(scalars);
        }
        ++index;
      }
      visit_options(static_cast<const typename Kind_::Options&>(group.options()),
                    [&](const char* name, const auto& value) { options[name] = value; });
      groups.push_back({{"params", params}, {"shapes", shapes}, {"options", options}});
    }
    const Json structure = {{"type", kind.name}, {"param_groups", groups}, {"state", states}};
    archive.write(kStructureKey, IValue(structure.dump()));
  });
}

void Optimizer::load(serialize::InputArchive& archive) {
  dispatch(*this, "Optimizer::load", [&](auto kind) {
    using Kind_ = decltype(kind);
    using Options = typename Kind_::Options;
    using State = typename Kind_::State;
    const std::string where = archive.where() + "optimizer " + kind.name + ": ";

    IValue text;
    KILN_CHECK(archive.try_read(kStructureKey, text), where, "the file holds no optimizer (no \"",
               archive.full_key(kStructureKey), "\" in its metadata)");
    Json doc;
    try {
      const std::string& s = text.toStringRef();
      doc = Json::parse(s.begin(), s.end(), [&](int depth, Json::parse_event_t, Json&) {
        KILN_CHECK(depth <= kMaxJsonDepth, where, "the \"", kStructureKey, "\" metadata is nested too deeply");
        return true;
      });
    } catch (const Json::exception& e) {
      throw Error(where + "the \"" + kStructureKey + "\" metadata is not valid JSON (" + e.what() + ")");
    }
    const std::string structure = where + "the \"" + kStructureKey + "\" metadata";
    const Json& type = member(doc, "type", structure);
    KILN_CHECK(type.is_string(), structure, ": \"type\" is not a string");
    KILN_CHECK(type.get<std::string>() == kind.name, where, "the file holds the state of an optimizer of type ",
               type.get<std::string>(), ", not ", kind.name);

    // The groups: the same count, sizes and shapes; the saved index of each parameter.
    const Json& groups = member(doc, "param_groups", structure);
    KILN_CHECK(groups.is_array(), structure, ": \"param_groups\" is not an array");
    KILN_CHECK(groups.size() == param_groups_.size(), where, "the file has ", groups.size(),
               " param group(s), this optimizer ", param_groups_.size());
    std::unordered_map<int64_t, const Tensor*> param_of_index;
    std::vector<std::unique_ptr<OptimizerOptions>> options;
    for (size_t i = 0; i < groups.size(); ++i) {
      const std::string group_what = structure + ": param group " + std::to_string(i);
      const auto& params = param_groups_[i].params();
      const Json &indices = member(groups[i], "params", group_what), &shapes = member(groups[i], "shapes", group_what);
      KILN_CHECK(indices.is_array() && shapes.is_array() && indices.size() == shapes.size(), group_what,
                 ": \"params\" and \"shapes\" are not arrays of the same length");
      KILN_CHECK(indices.size() == params.size(), where, "param group ", i, " has ", indices.size(),
                 " parameter(s) in the file, ", params.size(), " in this optimizer");
      for (size_t j = 0; j < params.size(); ++j) {
        const Json want = params[j].sizes().vec();
        KILN_CHECK(shapes[j] == want, where, "param group ", i, ", parameter ", j, ": the file's state is for shape ",
                   shapes[j].dump(), ", the parameter's shape is ", want.dump());
        int64_t index = 0;
        read_json(indices[j], index, group_what + " parameter " + std::to_string(j));
        KILN_CHECK(param_of_index.emplace(index, &params[j]).second, group_what, ": the index ", index,
                   " appears twice");
      }
      auto group_options = std::make_unique<Options>(static_cast<const Options&>(param_groups_[i].options()));
      const Json& saved = member(groups[i], "options", group_what);
      visit_options(*group_options, [&](const char* name, auto& field) {
        read_json(member(saved, name, group_what + " \"options\""), field, group_what + " option \"" + name + "\"");
      });
      options.push_back(std::move(group_options));
    }

    // The states, each checked against its parameter, and nothing in the file left unread.
    const Json& states = member(doc, "state", structure);
    KILN_CHECK(states.is_object(), structure, ": \"state\" is not an object");
    std::vector<std::pair<const Tensor*, std::unique_ptr<State>>> loaded;
    for (const auto& [key, fields] : states.items()) {
      const std::string state_what = structure + ": the state \"" + key + "\"";
      int64_t index = -1;
      const auto parsed = std::from_chars(key.data(), key.data() + key.size(), index);
      KILN_CHECK(parsed.ec == std::errc() && std::to_string(index) == key, state_what, " is not a parameter's index");
      const auto found = param_of_index.find(index);
      KILN_CHECK(found != param_of_index.end(), state_what, " belongs to no parameter of the param groups");
      const Tensor& param = *found->second;
      auto state = std::make_unique<State>();
      std::unordered_set<std::string> expected;
      visit_state(
          *state,
          [&](const char* name, int64_t& count) {
            read_json(member(fields, name, state_what), count, state_what + " \"" + name + "\"");
          },
          [&](const char* name, Tensor& field, bool required) {
            expected.insert(name);
            const std::string tensor_key = archive.full_key(state_tensor_key(key, name));
            Tensor stored;
            if (!archive.try_read(state_tensor_key(key, name), stored)) {
              KILN_CHECK(!required, where, "the state of parameter ", index, " lacks the tensor \"", tensor_key, "\"");
              return;
            }
            KILN_CHECK(stored.sizes() == param.sizes() && stored.is_floating_point(), where, "the tensor \"",
                       tensor_key, "\" (", stored.dtype(), " ", stored.sizes().vec(),
                       ") does not match its parameter (", param.dtype(), " ", param.sizes().vec(), ")");
            // A copy of the parameter's dtype on its device: two optimizers loaded from one archive
            // share nothing.
            field = stored.to(param.device(), param.dtype()).clone();
          });
      serialize::InputArchive tensors;
      if (archive.try_read("state." + key, tensors))
        for (const auto& name : tensors.keys())
          KILN_CHECK(expected.count(name), where, "the tensor \"", tensors.full_key(name),
                     "\" is not part of the state of ", kind.name);
      loaded.emplace_back(&param, std::move(state));
    }
    serialize::InputArchive state_tensors;
    if (archive.try_read("state", state_tensors))
      for (const auto& key : state_tensors.keys())
        KILN_CHECK(states.contains(key), where, "the tensors \"", state_tensors.full_key(key),
                   ".*\" belong to no state in the \"", kStructureKey, "\" metadata");

    // Everything checked: replace the options and the state.
    for (size_t i = 0; i < param_groups_.size(); ++i) param_groups_[i].set_options(std::move(options[i]));
    state_.clear();
    for (auto& [param, state] : loaded) state_[state_key(*param)] = std::move(state);
  });
}

serialize::OutputArchive& operator<<(serialize::OutputArchive& archive, const Optimizer& optimizer) {
  optimizer.save(archive);
  return archive;
}
serialize::InputArchive& operator>>(serialize::InputArchive& archive, Optimizer& optimizer) {
  optimizer.load(archive);
  return archive;
}

}  // namespace kiln::optim
