// Strategy files (strategy.h).
#include "parallel/partition/strategy.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "lang/diagnostics.h"
#include "parallel/partition/json_locations.h"

namespace spora::parallel {

namespace {

using nlohmann::json;

// "s.json:3:5: <why>", then the entry's line with a caret (the file alone when `path`, an entry
// as JsonLocations names it, is not in the text).
[[noreturn]] void fail(const JsonLocations& loc, const std::string& path, const std::string& why) {
  throw lang::UserError(fmt::format("{}: {}{}", loc.at(path), why, loc.quote(path)));
}

// "ops": {"<index in g.nodes>": "<strategy name of the node's rule>"}; the key may carry the
// primitive's name too, as `spora search` writes it ("matmul#12"), which is then checked.
void parse_ops(const json& ops, const ir::Graph& g, Strategy& s, const JsonLocations& loc) {
  if (!ops.is_object())
    fail(loc, "/ops", "\"ops\" maps node indices to strategy names, e.g. {\"12\": \"k:m0\"}");
  for (const auto& [key, value] : ops.items()) {
    const std::string path = "/ops/" + key;
    size_t index = 0;
    const size_t hash = key.find('#');
    const std::string prim = hash == std::string::npos ? "" : key.substr(0, hash);
    const std::string digits = hash == std::string::npos ? key : key.substr(hash + 1);
    try {
      size_t used = 0;
      index = std::stoul(digits, &used);
      if (used != digits.size()) throw std::invalid_argument(digits);
    } catch (const std::exception&) {
      fail(loc, path,
           fmt::format("\"ops\" keys are node indices (\"12\" or \"matmul#12\"), got \"{}\"", key));
    }
    if (index >= g.nodes.size() || !g.nodes[index]->prim)
      fail(loc, path,
           fmt::format("node {} of @{} is not a primitive application (@{} has {} nodes)", index,
                       g.name, g.name, g.nodes.size()));
    const ir::Node& n = *g.nodes[index];
    if (!prim.empty() && prim != n.prim->name)
      fail(loc, path,
           fmt::format("\"{}\": node {} of @{} is {}, not {} (the strategy was made for "
                       "another program?)",
                       key, index, g.name, n.prim->name, prim));
    const ShardingRule* rule = sharding_rule(*n.prim);
    if (!value.is_string() || !rule || !rule->enumerate)
      fail(loc, path,
           fmt::format("node {} ({}): expected the name of one of its strategies, got {}", index,
                       n.prim->name, value.dump()));
    std::vector<sem::TypeP> in;
    for (const ir::Node* x : n.inputs) in.push_back(x->type);
    std::vector<std::string> names;
    for (const OpStrategy& o : rule->enumerate(in, n.type, n.attrs, s.mesh)) {
      if (o.name == value.get<std::string>()) {
        s.ops[index] = o;
        break;
      }
      names.push_back(o.name);
    }
    if (!s.ops.count(index))
      fail(loc, path,
           fmt::format("node {} ({}) has no strategy \"{}\" (it has, closest first: {})", index,
                       n.prim->name, value.get<std::string>(),
                       fmt::join(closest_first(value.get<std::string>(), names), ", ")));
  }
}

// "recompute": true | false | ["net.l1", ...].
void parse_recompute_value(const json& r, Strategy& s, const JsonLocations& loc) {
  if (r.is_boolean()) {
    s.recompute_all = r.get<bool>();
    return;
  }
  if (!r.is_array())
    fail(loc, "/recompute",
         fmt::format("\"recompute\" is true, false or a list of layers like "
                     "[\"net.l1\"], got {}",
                     r.dump()));
  for (const json& n : r) {
    if (!n.is_string() || n.get<std::string>().empty())
      fail(loc, "/recompute",
           fmt::format("\"recompute\" names layers by their field path (\"net.l1\"), "
                       "got {}",
                       n.dump()));
    s.recompute.push_back(n.get<std::string>());
  }
}

// "optimizer_shard": a mesh axis by name ("dp", "m0") or index.
int parse_optimizer_shard(const json& v, const Mesh& mesh, const JsonLocations& loc) {
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
    fail(loc, "/optimizer_shard",
         fmt::format("\"optimizer_shard\" is a mesh axis (its name or index: {}), got {}", names,
                     v.dump()));
  }
  return axis;
}

json parse_json(const std::string& text, const JsonLocations& loc) {
  try {
    return json::parse(text);
  } catch (const json::parse_error& e) {
    throw lang::UserError(fmt::format("{}: not valid JSON: {}",
                                      loc.at_offset(e.byte > 0 ? e.byte - 1 : 0), e.what()));
  } catch (const json::exception& e) {
    // A number too large for a double (out_of_range 406) has no position.
    throw lang::UserError(fmt::format("{}: not valid JSON: {}", loc.origin(), e.what()));
  }
}

// "mesh" and "axes".
Mesh parse_mesh(const json& j, const JsonLocations& loc) {
  Mesh mesh;
  if (!j.contains("mesh") || !j["mesh"].is_array() || j["mesh"].empty())
    fail(loc, "/mesh",
         fmt::format("\"mesh\" must be a non-empty list of axis sizes, e.g. [2, 2], got {}",
                     j.contains("mesh") ? j["mesh"].dump() : "nothing"));
  for (const json& n : j["mesh"]) {
    if (!n.is_number_integer() || n.get<int64_t>() < 1)
      fail(loc, "/mesh", fmt::format("mesh axis sizes are positive integers, got {}", n.dump()));
    mesh.shape.push_back(n.get<int64_t>());
  }
  if (j.contains("axes")) {
    if (!j["axes"].is_array() || j["axes"].size() != mesh.shape.size())
      fail(loc, "/axes",
           fmt::format("\"axes\" must name each of the {} mesh axes, got {}", mesh.shape.size(),
                       j["axes"].dump()));
    for (const json& n : j["axes"]) {
      if (!n.is_string())
        fail(loc, "/axes", fmt::format("axis names are strings, got {}", n.dump()));
      mesh.axis_names.push_back(n.get<std::string>());
    }
  }
  try {
    mesh.validate();
  } catch (const lang::UserError& e) {
    fail(loc, "/mesh", e.what());
  }
  return mesh;
}

// One "layouts" entry: `name` is a tensor parameter of the step, `value` a layout of it whose
// splits divide its dimensions.
Layout parse_layout(const std::string& name, const json& value, const ir::Graph& g,
                    const Mesh& mesh, const JsonLocations& loc) {
  const std::string path = "/layouts/" + name;
  const ir::Node* param = nullptr;
  std::vector<std::string> known;
  for (const ir::Node* p : g.params) {
    if (p->name == name) param = p;
    known.push_back(p->name);
  }
  if (!param)
    fail(loc, path,
         fmt::format("'{}' is not a parameter or input of the step; its {} names, closest "
                     "first: {}",
                     name, known.size(), fmt::join(closest_first(name, known), ", ")));
  if (!value.is_string())
    fail(loc, path,
         fmt::format("the layout of '{}' must be a string like \"(2, 1)\", got {}", name,
                     value.dump()));
  if (!param->type->is_tensor())
    fail(loc, path, fmt::format("'{}' is {}, not a tensor", name, param->type->str()));
  const std::string text = value.get<std::string>();
  const std::vector<int64_t>& shape = param->type->shape;
  Layout l;
  try {
    l = Layout::parse(text, mesh, static_cast<int>(param->type->rank()));
    l.validate(mesh);
  } catch (const lang::UserError& e) {
    fail(loc, path, fmt::format("'{}' ({}): {}", name, param->type->str(), e.what()));
  }
  for (size_t d = 0; d < l.tensor_map.size() && d < shape.size(); ++d) {
    const int a = l.tensor_map[d];
    if (a >= 0 && shape[d] % mesh.axis_size(a) != 0)
      fail(loc, path,
           fmt::format("split {} of '{}' does not divide dimension {} of size {} ('{}' is {}; "
                       "mesh axis {} has {} devices)",
                       text, name, d, shape[d], name, param->type->str(), mesh.axis_name(a),
                       mesh.axis_size(a)));
  }
  try {
    l.validate(mesh, shape);
  } catch (const lang::UserError& e) {
    fail(loc, path, fmt::format("'{}' ({}): {}", name, param->type->str(), e.what()));
  }
  if (l.is_partial())
    fail(loc, path, fmt::format("the input '{}' cannot be partial ({})", name, l.to_string(mesh)));
  return l;
}

}  // namespace

Strategy parse_recompute(const std::string& text, const std::string& origin) {
  const JsonLocations loc(origin, text);
  const json j = parse_json(text, loc);
  Strategy s;
  if (j.is_object() && j.contains("recompute")) parse_recompute_value(j["recompute"], s, loc);
  return s;
}

Strategy parse_strategy(const std::string& text, const ir::Graph& g, const std::string& origin) {
  const JsonLocations loc(origin, text);
  json j = parse_json(text, loc);
  if (!j.is_object()) fail(loc, "", "expected a JSON object with \"mesh\" and \"layouts\"");
  // What `spora search` adds for people (its prediction) is read past.
  for (const auto& [key, value] : j.items())
    if (key != "mesh" && key != "axes" && key != "layouts" && key != "ops" &&
        key != "optimizer_shard" && key != "recompute" && key != "predicted_step_seconds" &&
        key != "memory_per_device" && key != "algo")
      fail(loc, "/" + key,
           fmt::format("unknown key \"{}\" (expected mesh, axes, layouts, ops, "
                       "optimizer_shard, recompute)",
                       key));
  Strategy s;
  s.origin = origin;
  s.source = text;
  s.mesh = parse_mesh(j, loc);
  if (j.contains("ops")) parse_ops(j["ops"], g, s, loc);
  if (j.contains("optimizer_shard"))
    s.optimizer_shard = parse_optimizer_shard(j["optimizer_shard"], s.mesh, loc);
  if (j.contains("recompute")) parse_recompute_value(j["recompute"], s, loc);
  if (!j.contains("layouts")) return s;
  if (!j["layouts"].is_object())
    fail(loc, "/layouts",
         fmt::format("\"layouts\" maps parameter names to layouts, e.g. {{\"x\": \"(2, 1)\"}}, "
                     "got {}",
                     j["layouts"].dump()));
  for (const auto& [name, value] : j["layouts"].items())
    s.layouts[name] = parse_layout(name, value, g, s.mesh, loc);
  return s;
}

void check_ranks(const Strategy& s, int64_t ranks, const std::string& what) {
  if (s.mesh.size() == ranks) return;
  const JsonLocations loc(s.origin.empty() ? "strategy" : s.origin, s.source);
  fail(loc, "/mesh",
       fmt::format("the mesh [{}] has {} devices, but {} is {}", fmt::join(s.mesh.shape, ", "),
                   s.mesh.size(), what, ranks));
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
