// Strategy files (strategy.h).
#include "parallel/partition/strategy.h"

#include <fmt/format.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "lang/diagnostics.h"

namespace spora::parallel {

namespace {

using nlohmann::json;

[[noreturn]] void fail(const std::string& origin, const std::string& why) {
  throw lang::UserError(fmt::format("{}: {}", origin, why));
}

// "ops": {"<index in g.nodes>": "<strategy name of the node's rule>"}; the key may carry the
// primitive's name too, as `spora search` writes it ("matmul#12"), which is then checked.
void parse_ops(const json& ops, const ir::Graph& g, Strategy& s, const std::string& origin) {
  if (!ops.is_object())
    fail(origin, "\"ops\" maps node indices to strategy names, e.g. {\"12\": \"k:m0\"}");
  for (const auto& [key, value] : ops.items()) {
    size_t index = 0;
    const size_t hash = key.find('#');
    const std::string prim = hash == std::string::npos ? "" : key.substr(0, hash);
    const std::string digits = hash == std::string::npos ? key : key.substr(hash + 1);
    try {
      size_t used = 0;
      index = std::stoul(digits, &used);
      if (used != digits.size()) throw std::invalid_argument(digits);
    } catch (const std::exception&) {
      fail(origin, fmt::format("\"ops\" keys are node indices (\"12\" or \"matmul#12\"), got \"{}\"",
                               key));
    }
    if (index >= g.nodes.size() || !g.nodes[index]->prim)
      fail(origin, fmt::format("node {} of @{} is not a primitive application", index, g.name));
    const ir::Node& n = *g.nodes[index];
    if (!prim.empty() && prim != n.prim->name)
      fail(origin, fmt::format("\"{}\": node {} of @{} is {}, not {} (the strategy was made for "
                               "another program?)",
                               key, index, g.name, n.prim->name, prim));
    const ShardingRule* rule = sharding_rule(*n.prim);
    if (!value.is_string() || !rule || !rule->enumerate)
      fail(origin, fmt::format("node {} ({}): expected the name of one of its strategies", index,
                               n.prim->name));
    std::vector<sem::TypeP> in;
    for (const ir::Node* x : n.inputs) in.push_back(x->type);
    std::string names;
    for (const OpStrategy& o : rule->enumerate(in, n.type, n.attrs, s.mesh)) {
      if (o.name == value.get<std::string>()) {
        s.ops[index] = o;
        break;
      }
      names += (names.empty() ? "" : ", ") + o.name;
    }
    if (!s.ops.count(index))
      fail(origin, fmt::format("node {} ({}) has no strategy \"{}\" (it has: {})", index,
                               n.prim->name, value.get<std::string>(), names));
  }
}

// "recompute": true | false | ["net.l1", ...].
void parse_recompute_value(const json& r, Strategy& s, const std::string& origin) {
  if (r.is_boolean()) {
    s.recompute_all = r.get<bool>();
    return;
  }
  if (!r.is_array())
    fail(origin, fmt::format("\"recompute\" is true, false or a list of layers like "
                             "[\"net.l1\"], got {}",
                             r.dump()));
  for (const json& n : r) {
    if (!n.is_string() || n.get<std::string>().empty())
      fail(origin, fmt::format("\"recompute\" names layers by their field path (\"net.l1\"), "
                               "got {}",
                               n.dump()));
    s.recompute.push_back(n.get<std::string>());
  }
}

// "optimizer_shard": a mesh axis by name ("dp", "m0") or index.
int parse_optimizer_shard(const json& v, const Mesh& mesh, const std::string& origin) {
  int axis = -1;
  if (v.is_number_integer()) {
    const int64_t i = v.get<int64_t>();
    axis = i >= 0 && i < mesh.ndim() ? static_cast<int>(i) : -1;
  } else if (v.is_string()) {
    axis = mesh.axis_index(v.get<std::string>());
  }
  if (axis < 0) {
    std::string names;
    for (int a = 0; a < mesh.ndim(); ++a) names += (names.empty() ? "" : ", ") + mesh.axis_name(a);
    fail(origin, fmt::format("\"optimizer_shard\" is a mesh axis (its name or index: {}), got {}",
                             names, v.dump()));
  }
  return axis;
}

json parse_json(const std::string& text, const std::string& origin) {
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    fail(origin, fmt::format("not valid JSON: {}", e.what()));
  }
}

}  // namespace

Strategy parse_recompute(const std::string& text, const std::string& origin) {
  const json j = parse_json(text, origin);
  Strategy s;
  if (j.is_object() && j.contains("recompute")) parse_recompute_value(j["recompute"], s, origin);
  return s;
}

Strategy parse_strategy(const std::string& text, const ir::Graph& g, const std::string& origin) {
  json j = parse_json(text, origin);
  if (!j.is_object()) fail(origin, "expected a JSON object with \"mesh\" and \"layouts\"");
  // What `spora search` adds for people (its prediction) is read past.
  for (const auto& [key, value] : j.items())
    if (key != "mesh" && key != "axes" && key != "layouts" && key != "ops" &&
        key != "optimizer_shard" && key != "recompute" && key != "predicted_step_seconds" &&
        key != "memory_per_device" && key != "algo")
      fail(origin, fmt::format("unknown key \"{}\" (expected mesh, axes, layouts, ops, "
                               "optimizer_shard, recompute)",
                               key));
  Strategy s;
  if (!j.contains("mesh") || !j["mesh"].is_array() || j["mesh"].empty())
    fail(origin, "\"mesh\" must be a non-empty list of axis sizes, e.g. [2, 2]");
  for (const json& n : j["mesh"]) {
    if (!n.is_number_integer() || n.get<int64_t>() < 1)
      fail(origin, fmt::format("mesh axis sizes are positive integers, got {}", n.dump()));
    s.mesh.shape.push_back(n.get<int64_t>());
  }
  if (j.contains("axes")) {
    if (!j["axes"].is_array() || j["axes"].size() != s.mesh.shape.size())
      fail(origin, fmt::format("\"axes\" must name each of the {} mesh axes", s.mesh.shape.size()));
    for (const json& n : j["axes"]) {
      if (!n.is_string()) fail(origin, fmt::format("axis names are strings, got {}", n.dump()));
      s.mesh.axis_names.push_back(n.get<std::string>());
    }
  }
  try {
    s.mesh.validate();
  } catch (const lang::UserError& e) {
    fail(origin, e.what());
  }
  if (j.contains("ops")) parse_ops(j["ops"], g, s, origin);
  if (j.contains("optimizer_shard"))
    s.optimizer_shard = parse_optimizer_shard(j["optimizer_shard"], s.mesh, origin);
  if (j.contains("recompute")) parse_recompute_value(j["recompute"], s, origin);
  if (!j.contains("layouts")) return s;
  if (!j["layouts"].is_object())
    fail(origin, "\"layouts\" maps parameter names to layouts, e.g. {\"x\": \"(2, 1)\"}");
  for (const auto& [name, value] : j["layouts"].items()) {
    const ir::Node* param = nullptr;
    for (const ir::Node* p : g.params)
      if (p->name == name) param = p;
    if (!param) {
      std::string names;
      for (const ir::Node* p : g.params) names += (names.empty() ? "" : ", ") + p->name;
      fail(origin,
           fmt::format("'{}' is not a parameter or input of the step (they are: {})", name, names));
    }
    if (!value.is_string())
      fail(origin, fmt::format("the layout of '{}' must be a string like \"(2, 1)\", got {}", name,
                               value.dump()));
    if (!param->type->is_tensor())
      fail(origin, fmt::format("'{}' is {}, not a tensor", name, param->type->str()));
    try {
      Layout l =
          Layout::parse(value.get<std::string>(), s.mesh, static_cast<int>(param->type->rank()));
      l.validate(s.mesh, param->type->shape);
      s.layouts[name] = l;
    } catch (const lang::UserError& e) {
      fail(origin, fmt::format("'{}' ({}): {}", name, param->type->str(), e.what()));
    }
  }
  return s;
}

Strategy load_strategy(const std::string& path, const ir::Graph& g) {
  std::ifstream f(path);
  if (!f) throw lang::UserError(fmt::format("cannot read the strategy file '{}'", path));
  std::stringstream ss;
  ss << f.rdbuf();
  return parse_strategy(ss.str(), g, path);
}

std::string strategy_json(const Strategy& s) {
  json j;
  j["mesh"] = s.mesh.shape;
  if (!s.mesh.axis_names.empty()) j["axes"] = s.mesh.axis_names;
  json layouts = json::object();
  for (const auto& [name, l] : s.layouts) layouts[name] = l.to_string(s.mesh);
  j["layouts"] = layouts;
  if (!s.ops.empty()) {
    json ops = json::object();
    for (const auto& [index, o] : s.ops) ops[std::to_string(index)] = o.name;
    j["ops"] = ops;
  }
  if (s.optimizer_shard >= 0) j["optimizer_shard"] = s.mesh.axis_name(s.optimizer_shard);
  if (s.recompute_all)
    j["recompute"] = true;
  else if (!s.recompute.empty())
    j["recompute"] = s.recompute;
  return j.dump(2) + "\n";
}

}  // namespace spora::parallel
