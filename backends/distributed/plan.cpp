// The plans of plan.h.
#include "backends/distributed/plan.h"

#include <fmt/format.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>

#include "lang/diagnostics.h"

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

}  // namespace

SpmdPlan plan_from_strategy_text(const std::string& text, const std::string& origin) {
  nlohmann::json j;
  try {
    j = nlohmann::json::parse(text);
  } catch (const nlohmann::json::parse_error& e) {
    fail(origin, fmt::format("not valid JSON: {}", e.what()));
  }
  if (!j.is_object()) fail(origin, "a strategy is a JSON object with \"mesh\" and \"layouts\"");
  SpmdPlan p;
  p.origin = origin;
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
  if (j.contains("layouts")) {
    if (!j["layouts"].is_object()) fail(origin, "\"layouts\" must map names to layouts");
    for (const auto& [name, value] : j["layouts"].items()) {
      if (!value.is_string())
        fail(origin,
             fmt::format("the layout of '{}' must be a string, not {}", name, value.dump()));
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
  // The harness's keys are refused; what `spora search -o` adds for people to read is ignored.
  for (const auto& [key, value] : j.items()) {
    if (key == "pipeline" || key == "optimizer_shard" || key == "recompute" || key == "ops")
      fail(origin,
           fmt::format("\"{}\" is not supported when running a program's own main() on several "
                       "ranks yet; `spora train-step` runs it on the training step of the "
                       "program's loss",
                       key));
    if (key != "mesh" && key != "axes" && key != "layouts" && key != "memory_per_device" &&
        key != "predicted_step_seconds")
      fail(origin, fmt::format("unknown key \"{}\" (expected mesh, axes, layouts)", key));
  }
  return p;
}

SpmdPlan plan_from_strategy(const std::string& path) {
  std::ifstream f(path);
  if (!f) throw lang::UserError(fmt::format("cannot read the strategy file '{}'", path));
  std::stringstream ss;
  ss << f.rdbuf();
  return plan_from_strategy_text(ss.str(), path);
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
