// The plans of plan.h.
#include "backends/distributed/plan.h"

#include <fmt/format.h>
#include <fmt/ranges.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

#include "lang/diagnostics.h"
#include "parallel/pipeline/pipeline.h"

namespace spora::distributed {

using parallel::Layout;
using parallel::Mesh;

SpmdPlan data_parallel_plan(int ranks) {
  SpmdPlan p;
  p.mesh = Mesh{{ranks}, {"dp"}};
  p.data_axis = 0;
  p.origin = "--strategy dp";
  return p;
}

namespace {

[[noreturn]] void fail(const std::string& origin, const std::string& what) {
  throw lang::UserError(fmt::format("{}: {}", origin, what));
}

// The mesh axis cutting dimension 0 of a data entry's layout text, or -1.
int batch_axis(const std::string& text, const Mesh& m) {
  for (int rank = 1; rank <= 8; ++rank) {
    try {
      const Layout l = Layout::parse(text, m, rank);
      return l.tensor_map.empty() ? -1 : l.tensor_map[0];
    } catch (const lang::UserError&) {
    }
  }
  return -1;
}

// The plan of a strategy with a "pipeline" key: the stage's plan, with the pipeline axis "pp"
// in front of its mesh.
SpmdPlan pipeline_plan(const std::string& text, const std::string& origin) {
  const auto spec = parallel::pipeline::parse_pipeline(text, origin);
  SpmdPlan p =
      plan_from_strategy_text(parallel::pipeline::inner_strategy_json(text, origin), origin);
  if (p.zero_stage > 0 || p.recompute_all || !p.recompute.empty() || p.sp_axis >= 0)
    fail(origin,
         "\"zero\", \"recompute\" and \"sequence_parallel\" do not combine with \"pipeline\" "
         "(the stages recompute their forward pass in the backward pass already)");
  std::vector<std::string> names{"pp"};
  for (int a = 0; a < p.mesh.ndim(); ++a) {
    names.push_back(p.mesh.axis_name(a));
    if (names.back() == "pp")
      fail(origin, "the axis name pp is the pipeline's: name the stage's mesh axes otherwise");
  }
  p.mesh.shape.insert(p.mesh.shape.begin(), spec->stages);
  p.mesh.axis_names = names;
  if (p.data_axis >= 0) ++p.data_axis;
  p.params.clear();  // the stages' layouts place the parameters
  p.pipeline = text;
  p.stages = spec->stages;
  return p;
}

void read_mesh(const nlohmann::json& j, const std::string& origin, SpmdPlan& p) {
  if (!j.contains("mesh") || !j["mesh"].is_array() || j["mesh"].empty())
    fail(origin, "\"mesh\" must be a non-empty list of axis sizes, e.g. [2, 2]");
  for (const auto& n : j["mesh"]) {
    if (!n.is_number_integer() || n.get<int64_t>() < 1)
      fail(origin, fmt::format("\"mesh\" sizes must be positive integers, not {}", n.dump()));
    p.mesh.shape.push_back(n.get<int64_t>());
  }
  if (j.contains("axes")) {
    if (!j["axes"].is_array() || j["axes"].size() != p.mesh.shape.size())
      fail(origin, fmt::format("\"axes\" must name each of the {} mesh axes", p.mesh.shape.size()));
    for (const auto& a : j["axes"]) {
      if (!a.is_string())
        fail(origin, fmt::format("an axis name must be a string, not {}", a.dump()));
      p.mesh.axis_names.push_back(a.get<std::string>());
    }
  }
  try {
    p.mesh.validate();
  } catch (const lang::UserError& e) {
    fail(origin, e.what());
  }
  p.data_axis = p.mesh.axis_index("dp");
}

// "layouts": parameters by name ("net.l1.w"); a data entry ("x") says which axis cuts batches.
void read_layouts(const nlohmann::json& j, const std::string& origin, SpmdPlan& p) {
  if (!j.contains("layouts")) return;
  if (!j["layouts"].is_object()) fail(origin, "\"layouts\" must map names to layouts");
  for (const auto& [name, value] : j["layouts"].items()) {
    if (!value.is_string())
      fail(origin, fmt::format("the layout of '{}' must be a string, not {}", name, value.dump()));
    const std::string text = value.get<std::string>();
    if (name.find('.') == std::string::npos) {
      // A data entry ("x": "[dp, -]"): its dim-0 axis cuts the batches.
      if (const int axis = batch_axis(text, p.mesh); axis >= 0 && p.data_axis < 0)
        p.data_axis = axis;
      continue;
    }
    p.params[name] = text;
  }
}

// A mesh axis given by name or index under `key`.
int axis_of(const SpmdPlan& p, const nlohmann::json& a, const std::string& key,
            const std::string& origin) {
  int axis = -1;
  if (a.is_number_integer())
    axis = a.get<int>();
  else if (a.is_string())
    axis = p.mesh.axis_index(a.get<std::string>());
  if (axis < 0 || axis >= p.mesh.ndim()) {
    std::vector<std::string> names;
    for (int i = 0; i < p.mesh.ndim(); ++i) names.push_back(p.mesh.axis_name(i));
    fail(origin, fmt::format("\"{}\": {} is not an axis of the mesh {} (axes: {})", key, a.dump(),
                             p.mesh.to_string(), fmt::join(names, ", ")));
  }
  return axis;
}

// ZeRO: "optimizer_shard": AXIS (stage 1, the harness's key) or "zero": N / {"stage": N,
// "axis": AXIS} (axis by name or index; default the data-parallel axis).
void read_zero(const nlohmann::json& j, const std::string& origin, SpmdPlan& p) {
  if (j.contains("optimizer_shard") && j.contains("zero"))
    fail(origin, "give one of \"optimizer_shard\" (ZeRO stage 1) and \"zero\"");
  if (j.contains("optimizer_shard")) {
    p.zero_stage = 1;
    p.zero_axis = axis_of(p, j["optimizer_shard"], "optimizer_shard", origin);
  }
  if (j.contains("zero")) {
    const nlohmann::json& z = j["zero"];
    const nlohmann::json stage = z.is_object() ? z.value("stage", nlohmann::json()) : z;
    if (!stage.is_number_integer() || stage.get<int>() < 0 || stage.get<int>() > 3)
      fail(origin, fmt::format("\"zero\": the stage must be 0, 1, 2 or 3, not {}", stage.dump()));
    p.zero_stage = stage.get<int>();
    if (z.is_object() && z.contains("axis"))
      p.zero_axis = axis_of(p, z["axis"], "zero", origin);
    else if (p.zero_stage > 0 && p.data_axis < 0)
      fail(origin, "\"zero\": the mesh has no axis named dp; say which: {\"stage\": N, \"axis\": ...}");
    else
      p.zero_axis = p.data_axis;
    if (z.is_object())
      for (const auto& [k, v] : z.items())
        if (k != "stage" && k != "axis")
          fail(origin, fmt::format("\"zero\": unknown key \"{}\" (expected stage, axis)", k));
  }
}

// "recompute": true (every layer) or a list of layers ("net.l1").
void read_recompute(const nlohmann::json& j, const std::string& origin, SpmdPlan& p) {
  if (!j.contains("recompute")) return;
  const nlohmann::json& r = j["recompute"];
  if (r.is_boolean()) {
    p.recompute_all = r.get<bool>();
  } else if (r.is_array()) {
    for (const auto& name : r) {
      if (!name.is_string())
        fail(origin, fmt::format("\"recompute\": a layer is a name such as \"net.l1\", not {}",
                                 name.dump()));
      p.recompute.push_back(name.get<std::string>());
    }
  } else {
    fail(origin, fmt::format("\"recompute\" is true, false or a list of layers, not {}", r.dump()));
  }
}

// "sequence_parallel": true (over the axis named tp, the sequence being dimension 1) or
// {"axis": AXIS, "dim": D}.
void read_sequence_parallel(const nlohmann::json& j, const std::string& origin, SpmdPlan& p) {
  if (!j.contains("sequence_parallel")) return;
  const nlohmann::json& sp = j["sequence_parallel"];
  if (sp.is_boolean()) {
    if (sp.get<bool>()) {
      p.sp_axis = p.mesh.axis_index("tp");
      if (p.sp_axis < 0)
        fail(origin,
             "\"sequence_parallel\": true cuts sequences over the axis named tp, and "
             "the mesh has none; say which: {\"axis\": ..., \"dim\": 1}");
    }
  } else if (sp.is_object()) {
    p.sp_axis = axis_of(p, sp.value("axis", nlohmann::json("tp")), "sequence_parallel", origin);
    const nlohmann::json dim = sp.value("dim", nlohmann::json(1));
    if (!dim.is_number_integer() || dim.get<int>() < 0)
      fail(origin,
           fmt::format("\"sequence_parallel\": \"dim\" is a dimension index, not {}", dim.dump()));
    p.sp_dim = dim.get<int>();
    for (const auto& [k, v] : sp.items())
      if (k != "axis" && k != "dim")
        fail(origin,
             fmt::format("\"sequence_parallel\": unknown key \"{}\" (expected axis, dim)", k));
  } else {
    fail(origin,
         fmt::format(
             "\"sequence_parallel\" is true, false or {{\"axis\": ..., \"dim\": ...}}, not {}",
             sp.dump()));
  }
}

// The harness's keys are refused; what `spora search -o` adds for people to read is ignored.
void check_keys(const nlohmann::json& j, const std::string& origin) {
  for (const auto& [key, value] : j.items()) {
    if (key == "optimizer_shard" || key == "zero" || key == "recompute" ||
        key == "sequence_parallel")
      continue;
    if (key == "ops")
      fail(origin,
           "\"ops\" (layouts by node) is the training-step harness's (`spora train-step`); a "
           "program run places its values by \"layouts\"");
    if (key != "mesh" && key != "axes" && key != "layouts" && key != "memory_per_device" &&
        key != "predicted_step_seconds")
      fail(origin, fmt::format(
                       "unknown key \"{}\" (expected mesh, axes, layouts, zero, recompute, "
                       "sequence_parallel, pipeline)",
                       key));
  }
}

}  // namespace

SpmdPlan plan_from_strategy_text(const std::string& text, const std::string& origin) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    fail(origin, fmt::format("not valid JSON: {}", e.what()));
  }
  if (!j.is_object()) fail(origin, "a strategy is a JSON object with \"mesh\" and \"layouts\"");
  if (j.contains("pipeline")) return pipeline_plan(text, origin);
  SpmdPlan p;
  p.origin = origin;
  read_mesh(j, origin, p);
  read_layouts(j, origin, p);
  read_zero(j, origin, p);
  read_recompute(j, origin, p);
  read_sequence_parallel(j, origin, p);
  check_keys(j, origin);
  return p;
}

SpmdPlan plan_from_strategy(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw lang::UserError(fmt::format("cannot read the strategy file '{}'", path));
  std::stringstream ss;
  ss << f.rdbuf();
  return plan_from_strategy_text(ss.str(), path);
}

void set_zero_stage(SpmdPlan& p, int stage) {
  if (stage < 0 || stage > 3)
    throw lang::UserError(fmt::format("--zero must be 0, 1, 2 or 3, not {}", stage));
  if (stage > 0 && !p.pipeline.empty())
    throw lang::UserError(fmt::format("--zero does not combine with the pipeline of {}", p.origin));
  if (stage > 0 && p.data_axis < 0)
    throw lang::UserError(fmt::format(
        "--zero {} shards over the data-parallel axis, and {} has none (an axis named dp)",
        stage, p.origin));
  p.zero_stage = stage;
  p.zero_axis = stage > 0 ? p.data_axis : -1;
}

SpmdPlan plan_from_mesh(const std::string& mesh_text) {
  SpmdPlan p;
  p.mesh = Mesh::parse(mesh_text);
  p.mesh.validate();
  p.data_axis = p.mesh.axis_index("dp");
  p.origin = "--mesh " + mesh_text;
  return p;
}

}  // namespace spora::distributed
