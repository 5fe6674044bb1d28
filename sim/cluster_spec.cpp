// Reading cluster specs: YAML -> ClusterSpec, with messages that name the file and the field.
//
// Each YAML map is read through a `Fields` view that knows the keys it allows: an unknown key
// is reported first (with a did-you-mean), then every field is read with a typed reader that
// states what it expected and what it got. Cross-field rules (products of topology dimensions,
// groups dividing devices, ...) run last.
#include "sim/cluster_spec.h"

#include <fmt/format.h>
#include <yaml-cpp/yaml.h>

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <functional>
#include <sstream>

#include "lang/diagnostics.h"

namespace spora::sim {

namespace {

const std::vector<std::string> kDtypes{"f64", "f32", "tf32", "bf16", "f16", "f8", "i8"};

std::string join(const std::vector<std::string>& items, std::string_view sep) {
  std::string out;
  for (const std::string& s : items) out += (out.empty() ? "" : std::string(sep)) + s;
  return out;
}

// How a value is echoed in a message: numbers as they are, other text quoted.
std::string describe(const YAML::Node& node) {
  if (!node.IsDefined() || node.IsNull()) return "nothing";
  if (node.IsMap()) return "a map";
  if (node.IsSequence()) return "a list";
  const std::string& text = node.Scalar();
  double ignored = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), ignored);
  if (ec == std::errc() && ptr == text.data() + text.size()) return text;
  return "\"" + text + "\"";
}

class Reader {
 public:
  explicit Reader(std::string file) : file_(std::move(file)) {}

  [[noreturn]] void fail(const std::string& field, const std::string& message) const {
    throw ClusterSpecError(fmt::format("{}: {}: {}", file_, field, message));
  }

  // One YAML map, at `path`, whose keys must be among `allowed`.
  class Fields {
   public:
    Fields(const Reader& r, const YAML::Node& node, std::string path,
           std::vector<std::string> allowed)
        : r_(r), node_(node), path_(std::move(path)) {
      if (!node.IsMap()) r_.fail(path_, "expected a map of fields, got " + describe(node));
      for (const auto& item : node) {
        if (!item.first.IsScalar())
          r_.fail(path_.empty() ? "(top level)" : path_,
                  "field names must be plain words, got " + describe(item.first));
        const std::string key = item.first.Scalar();
        if (std::find(allowed.begin(), allowed.end(), key) != allowed.end()) continue;
        std::string best;
        std::size_t best_distance = 3;
        for (const std::string& a : allowed)
          if (const std::size_t d = lang::edit_distance(key, a); d < best_distance)
            best = a, best_distance = d;
        r_.fail(field(key), best.empty() ? "unknown field (known: " + join(allowed, ", ") + ")"
                                         : "unknown field (did you mean '" + best + "'?)");
      }
    }

    std::string field(std::string_view key) const {
      return path_.empty() ? std::string(key) : path_ + "." + std::string(key);
    }
    bool has(const std::string& key) const { return static_cast<bool>(node_[key]); }
    YAML::Node get(const std::string& key) const {
      const YAML::Node n = node_[key];
      if (!n) r_.fail(field(key), "required field is missing");
      return n;
    }

    std::string text(const std::string& key) const {
      const YAML::Node n = get(key);
      if (!n.IsScalar()) r_.fail(field(key), "expected text, got " + describe(n));
      return n.Scalar();
    }
    std::string text_or(const std::string& key, std::string fallback) const {
      return has(key) ? text(key) : std::move(fallback);
    }

    long integer(const std::string& key, long min, std::string_view expected) const {
      return integer_node(get(key), field(key), min, expected);
    }
    long integer_or(const std::string& key, long min, std::string_view expected,
                    long fallback) const {
      return has(key) ? integer(key, min, expected) : fallback;
    }
    long integer_node(const YAML::Node& n, const std::string& where, long min,
                      std::string_view expected) const {
      long value = 0;
      if (n.IsScalar()) {
        const std::string& s = n.Scalar();
        const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), value);
        if (ec == std::errc() && ptr == s.data() + s.size() && value >= min && value <= (1L << 30))
          return value;
      }
      r_.fail(where, fmt::format("expected {}, got {}", expected, describe(n)));
    }

    std::vector<long> integers(const std::string& key, long min, std::string_view expected) const {
      const YAML::Node n = get(key);
      if (!n.IsSequence() || n.size() == 0)
        r_.fail(field(key), fmt::format("expected a list of {}, got {}", expected, describe(n)));
      std::vector<long> out;
      for (std::size_t i = 0; i < n.size(); ++i)
        out.push_back(integer_node(n[i], fmt::format("{}[{}]", field(key), i), min, expected));
      return out;
    }

    // A positive quantity with a unit, e.g. "300 GB/s"; `zero_ok` admits 0 (latencies).
    double quantity(const std::string& key, std::optional<double> (*parse)(std::string_view),
                    std::string_view what, std::string_view example, bool zero_ok = false) const {
      const YAML::Node n = get(key);
      std::optional<double> v;
      if (n.IsScalar()) v = parse(n.Scalar());
      if (!v)
        r_.fail(field(key),
                fmt::format("expected {} such as {}, got {}", what, example, describe(n)));
      if (*v < 0 || (*v == 0 && !zero_ok))
        r_.fail(field(key),
                fmt::format("expected a {} {}, got {}", zero_ok ? "non-negative" : "positive",
                            what.substr(what.find(' ') + 1), describe(n)));
      return *v;
    }
    double quantity_or(const std::string& key, std::optional<double> (*parse)(std::string_view),
                       std::string_view what, std::string_view example, double fallback,
                       bool zero_ok = false) const {
      return has(key) ? quantity(key, parse, what, example, zero_ok) : fallback;
    }

    double fraction_or(const std::string& key, double fallback) const {
      if (!has(key)) return fallback;
      const YAML::Node n = get(key);
      double v = 0;
      if (n.IsScalar()) {
        const std::string& s = n.Scalar();
        const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
        if (ec == std::errc() && ptr == s.data() + s.size() && v > 0 && v <= 1) return v;
      }
      r_.fail(field(key), "expected a number in (0, 1], got " + describe(n));
    }

    std::string choice(const std::string& key, const std::vector<std::string>& options) const {
      const YAML::Node n = get(key);
      if (n.IsScalar() && std::find(options.begin(), options.end(), n.Scalar()) != options.end())
        return n.Scalar();
      r_.fail(field(key),
              fmt::format("expected one of {}, got {}", join(options, ", "), describe(n)));
    }

   private:
    const Reader& r_;
    YAML::Node node_;
    std::string path_;
  };

  const std::string& file() const { return file_; }

 private:
  std::string file_;
};

using Fields = Reader::Fields;

std::optional<double> parse_plain(std::string_view text) {
  double v = 0;
  const auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), v);
  if (ec != std::errc() || ptr != text.data() + text.size()) return std::nullopt;
  return v;
}

// device.op_classes: per op class (semantics/cost.h) an efficiency and a launch overhead.
void read_op_classes(const Reader& r, const Fields& device, DeviceSpec& d) {
  d.launch_overhead = device.quantity_or("launch_overhead", parse_duration, "a duration",
                                         "\"5 us\"", 0, /*zero_ok=*/true);
  if (!device.has("op_classes")) return;
  const YAML::Node classes = device.get("op_classes");
  const Fields f(r, classes, "device.op_classes", op_class_names());
  for (const std::string& name : op_class_names()) {
    if (!f.has(name)) continue;
    const Fields c(r, f.get(name), "device.op_classes." + name, {"efficiency", "launch_overhead"});
    OpClassSpec spec;
    spec.efficiency = c.fraction_or("efficiency", 1);
    if (c.has("launch_overhead"))
      spec.launch_overhead =
          c.quantity("launch_overhead", parse_duration, "a duration", "\"5 us\"", /*zero_ok=*/true);
    d.op_classes[name] = spec;
  }
}

}  // namespace

const std::vector<std::string>& kernel_rate_names() {
  static const std::vector<std::string> names = {"gemm_ceiling", "softmax", "softmax-grad"};
  return names;
}

namespace {

DeviceSpec read_device(const Reader& r, const YAML::Node& node) {
  const Fields f(r, node, "device",
                 {"kind", "model", "peak_flops", "memory", "memory_bandwidth", "launch_overhead",
                  "op_classes", "comm_sm_share", "measured", "kernels"});
  DeviceSpec d;
  d.kind = f.has("kind") ? f.choice("kind", {"gpu", "npu", "tpu", "cpu"}) : "gpu";
  d.model = f.text_or("model", "");
  const Fields flops(r, f.get("peak_flops"), "device.peak_flops", kDtypes);
  for (const std::string& dtype : kDtypes)
    if (flops.has(dtype))
      d.peak_flops[dtype] =
          flops.quantity(dtype, parse_flop_rate, "a FLOP rate", "\"312 TFLOP/s\"");
  if (d.peak_flops.empty())
    r.fail("device.peak_flops", "expected at least one dtype (" + join(kDtypes, ", ") + ")");
  d.memory_bytes = f.quantity("memory", parse_bytes, "a size", "\"80 GB\"");
  d.memory_bandwidth =
      f.quantity("memory_bandwidth", parse_bandwidth, "a bandwidth", "\"2039 GB/s\"");
  read_op_classes(r, f, d);
  d.comm_sm_share = f.fraction_or("comm_sm_share", 0);
  if (f.has("kernels")) {
    const Fields k(r, f.get("kernels"), "device.kernels", kernel_rate_names());
    for (const std::string& name : kernel_rate_names())
      if (k.has(name)) d.kernels[name] = k.fraction_or(name, 1);
  }
  // device.measured: the tables of `spora calibrate` (sim/measured_tables.h).
  if (f.has("measured"))
    d.measured = read_measured_tables(f.get("measured"), [&](const std::string& field,
                                                             const std::string& message) {
      r.fail("device.measured" + (field.empty() ? "" : "." + field), message);
    });
  return d;
}

InterconnectSpec read_interconnect(const Reader& r, const YAML::Node& node, int devices) {
  const Fields f(r, node, "interconnect",
                 {"kind", "bandwidth", "latency", "efficiency", "groups", "bridge_bandwidth",
                  "bridge_latency"});
  InterconnectSpec ic;
  const std::string kind = f.choice("kind", {"switch", "ring", "mesh", "shared"});
  ic.kind = kind == "switch" ? InterconnectKind::Switch
            : kind == "ring" ? InterconnectKind::Ring
            : kind == "mesh" ? InterconnectKind::Mesh
                             : InterconnectKind::Shared;
  ic.bandwidth = f.quantity("bandwidth", parse_bandwidth, "a bandwidth", "\"300 GB/s\"");
  ic.latency = f.quantity("latency", parse_duration, "a duration", "\"1 us\"", true);
  ic.efficiency = f.fraction_or("efficiency", 1);
  if (ic.kind == InterconnectKind::Mesh) {
    ic.groups = static_cast<int>(f.integer_or("groups", 1, "a positive integer", 1));
    if (devices % ic.groups != 0)
      r.fail(f.field("groups"),
             fmt::format("{} groups do not divide devices_per_node ({})", ic.groups, devices));
    if (ic.groups > 1) {
      ic.bridge_bandwidth =
          f.quantity("bridge_bandwidth", parse_bandwidth, "a bandwidth", "\"32 GB/s\"");
      ic.bridge_latency =
          f.quantity_or("bridge_latency", parse_duration, "a duration", "\"2 us\"", 0, true);
    }
  } else {
    for (const char* key : {"groups", "bridge_bandwidth", "bridge_latency"})
      if (f.has(key)) r.fail(f.field(key), "only a mesh interconnect has groups");
  }
  return ic;
}

// Leaf-switch sizes for a fat tree of `levels` levels over `nodes` nodes: each level takes the
// smallest divisor d of what is left with d^(levels left) >= what is left.
std::vector<unsigned> default_fat_tree_down(int nodes, int levels) {
  std::vector<unsigned> down;
  long left = nodes;
  for (int i = 0; i < levels - 1; ++i) {
    long d = 1;
    while (d < left && (left % d != 0 || std::pow(static_cast<double>(d), levels - i) < left)) ++d;
    down.push_back(static_cast<unsigned>(d));
    left /= d;
  }
  down.push_back(static_cast<unsigned>(left));
  return down;
}

std::string product_text(const std::vector<unsigned long>& v) {
  std::vector<std::string> parts;
  for (unsigned long x : v) parts.push_back(std::to_string(x));
  return join(parts, " x ");
}

TopologySpec read_topology(const Reader& r, const YAML::Node& node, int nodes) {
  const std::vector<std::string> kinds{"switch", "fat-tree", "torus", "dragonfly"};
  TopologySpec t;
  if (node.IsScalar()) {  // `topology: switch` is short for `topology: {kind: switch}`
    if (node.Scalar() != "switch")
      r.fail("network.topology", fmt::format("expected switch or a map with a kind ({}), got {}",
                                             join(kinds, ", "), describe(node)));
    t.kind = TopologyKind::Switch;
    t.down = {static_cast<unsigned>(nodes)};
    return t;
  }
  const Fields f(r, node, "network.topology",
                 {"kind", "levels", "down", "oversubscription", "dims", "groups", "group_links",
                  "chassis", "chassis_links", "routers", "router_links", "nodes_per_router"});
  const std::string kind = f.choice("kind", kinds);
  auto only = [&](std::initializer_list<const char*> keys) {
    for (const char* key :
         {"levels", "down", "oversubscription", "dims", "groups", "group_links", "chassis",
          "chassis_links", "routers", "router_links", "nodes_per_router"})
      if (f.has(key) && std::find_if(keys.begin(), keys.end(), [&](const char* k) {
                          return std::string_view(k) == key;
                        }) == keys.end())
        r.fail(f.field(key), fmt::format("not a parameter of a {} topology", kind));
  };
  auto positive = [&](const std::string& key, long fallback) {
    return static_cast<unsigned>(f.integer_or(key, 1, "a positive integer", fallback));
  };
  auto check_product = [&](const std::string& key, const std::vector<unsigned long>& factors) {
    unsigned long p = 1;
    for (unsigned long x : factors) p *= x;
    if (p != static_cast<unsigned long>(nodes))
      r.fail(f.field(key),
             fmt::format("{} = {} nodes, but the cluster has {}", product_text(factors), p, nodes));
  };

  if (kind == "switch") {
    only({});
    t.kind = TopologyKind::Switch;
    t.down = {static_cast<unsigned>(nodes)};
  } else if (kind == "fat-tree") {
    only({"levels", "down", "oversubscription"});
    t.kind = TopologyKind::FatTree;
    t.levels = static_cast<int>(f.integer_or("levels", 1, "a positive integer", 2));
    if (t.levels > 4) r.fail(f.field("levels"), fmt::format("expected 1 to 4, got {}", t.levels));
    if (f.has("down")) {
      for (long d : f.integers("down", 1, "positive integers"))
        t.down.push_back(static_cast<unsigned>(d));
      if (static_cast<int>(t.down.size()) != t.levels)
        r.fail(f.field("down"),
               fmt::format("expected {} entries (one per level), got {}", t.levels, t.down.size()));
      check_product("down", std::vector<unsigned long>(t.down.begin(), t.down.end()));
    } else {
      t.down = default_fat_tree_down(nodes, t.levels);
    }
    if (f.has("oversubscription")) {
      const YAML::Node n = f.get("oversubscription");
      const auto v = n.IsScalar() ? parse_plain(n.Scalar()) : std::nullopt;
      if (!v || *v < 1)
        r.fail(f.field("oversubscription"),
               "expected a number >= 1 (down:up bandwidth at each switch), got " + describe(n));
      t.oversubscription = *v;
    }
  } else if (kind == "torus") {
    only({"dims"});
    t.kind = TopologyKind::Torus;
    for (long d : f.integers("dims", 1, "positive integers"))
      t.dims.push_back(static_cast<unsigned long>(d));
    check_product("dims", t.dims);
  } else {
    only({"groups", "group_links", "chassis", "chassis_links", "routers", "router_links",
          "nodes_per_router"});
    t.kind = TopologyKind::Dragonfly;
    t.groups = positive("groups", 1);
    t.group_links = positive("group_links", 1);
    t.chassis = positive("chassis", 1);
    t.chassis_links = positive("chassis_links", 1);
    t.routers = positive("routers", 1);
    t.router_links = positive("router_links", 1);
    t.nodes_per_router = positive("nodes_per_router", 1);
    check_product("groups", {t.groups, t.chassis, t.routers, t.nodes_per_router});
  }
  return t;
}

NetworkSpec read_network(const Reader& r, const YAML::Node& node, int nodes, int devices) {
  const Fields f(r, node, "network",
                 {"nics_per_node", "nic_bandwidth", "nic_latency", "link_bandwidth", "latency",
                  "efficiency", "topology"});
  NetworkSpec n;
  // A node of several devices reaches the fabric through NICs; a single-device node (a TPU-like
  // chip that routes itself) may be a port of the fabric directly.
  if (devices > 1 && !f.has("nics_per_node"))
    r.fail(f.field("nics_per_node"),
           fmt::format("required field is missing (nodes have {} devices)", devices));
  n.nics_per_node = static_cast<int>(
      f.integer_or("nics_per_node", devices > 1 ? 1 : 0,
                   devices > 1 ? "a positive integer" : "a non-negative integer", 0));
  if (n.nics_per_node > 0) {
    n.nic_bandwidth = f.quantity("nic_bandwidth", parse_bandwidth, "a bandwidth", "\"200 Gb/s\"");
    n.nic_latency = f.quantity_or("nic_latency", parse_duration, "a duration", "\"1 us\"", 0, true);
  } else {
    for (const char* key : {"nic_bandwidth", "nic_latency"})
      if (f.has(key)) r.fail(f.field(key), "set nics_per_node first");
  }
  n.link_bandwidth =
      n.nics_per_node > 0
          ? f.quantity_or("link_bandwidth", parse_bandwidth, "a bandwidth", "\"200 GB/s\"",
                          n.nics_per_node * n.nic_bandwidth)
          : f.quantity("link_bandwidth", parse_bandwidth, "a bandwidth", "\"45 GB/s\"");
  n.latency = f.quantity("latency", parse_duration, "a duration", "\"1 us\"", true);
  n.efficiency = f.fraction_or("efficiency", 1);
  n.topology = read_topology(r, f.get("topology"), nodes);
  return n;
}

}  // namespace

const std::vector<std::string>& op_class_names() {
  static const std::vector<std::string> k{"matmul", "conv", "elementwise", "reduction",
                                          "norm",   "pool", "copy",        "creation",
                                          "view",   "host", "comm"};
  return k;
}

double DeviceSpec::max_peak_flops() const {
  double best = 0;
  for (const auto& [dtype, rate] : peak_flops) best = std::max(best, rate);
  return best;
}

std::vector<unsigned> TopologySpec::fat_tree_up() const {
  std::vector<unsigned> up{1};
  for (int i = 1; i < levels; ++i)
    up.push_back(std::max(1u, static_cast<unsigned>(std::lround(down[i - 1] / oversubscription))));
  return up;
}

std::vector<unsigned> TopologySpec::fat_tree_link_count() const {
  return std::vector<unsigned>(static_cast<std::size_t>(levels), 1u);
}

std::string_view interconnect_kind_name(InterconnectKind k) {
  switch (k) {
    case InterconnectKind::Switch:
      return "switch";
    case InterconnectKind::Ring:
      return "ring";
    case InterconnectKind::Mesh:
      return "mesh";
    case InterconnectKind::Shared:
      return "shared";
  }
  return "?";
}

std::string_view topology_kind_name(TopologyKind k) {
  switch (k) {
    case TopologyKind::Switch:
      return "switch";
    case TopologyKind::FatTree:
      return "fat-tree";
    case TopologyKind::Torus:
      return "torus";
    case TopologyKind::Dragonfly:
      return "dragonfly";
  }
  return "?";
}

std::string ClusterSpec::summary() const {
  std::string s = fmt::format(
      "{}: {} node{} x {} {}, {} {} per device", name, nodes, nodes == 1 ? "" : "s",
      devices_per_node, device.model.empty() ? device.kind : device.model,
      interconnect_kind_name(interconnect.kind), format_bandwidth(interconnect.bandwidth));
  if (nodes > 1 && network) {
    const NetworkSpec& n = *network;
    if (n.nics_per_node > 0)
      s += fmt::format(", {} x {} NICs", n.nics_per_node, format_bandwidth(n.nic_bandwidth));
    s += fmt::format(", {} network", topology_kind_name(n.topology.kind));
  }
  return s;
}

namespace {

ClusterSpec read_cluster(const Reader& r, const YAML::Node& root, std::string_view filename) {
  const Fields f(r, root, "",
                 {"name", "nodes", "devices_per_node", "device", "interconnect", "network",
                  "collectives", "collective_overhead"});
  ClusterSpec spec;
  std::string stem(filename);
  if (const auto slash = stem.find_last_of('/'); slash != std::string::npos)
    stem = stem.substr(slash + 1);
  if (const auto dot = stem.rfind('.'); dot != std::string::npos && dot > 0) stem.resize(dot);
  spec.name = f.text_or("name", stem);
  spec.nodes = static_cast<int>(f.integer("nodes", 1, "a positive integer"));
  spec.devices_per_node = static_cast<int>(f.integer("devices_per_node", 1, "a positive integer"));
  spec.device = read_device(r, f.get("device"));
  spec.interconnect = read_interconnect(r, f.get("interconnect"), spec.devices_per_node);
  if (f.has("network"))
    spec.network = read_network(r, f.get("network"), spec.nodes, spec.devices_per_node);
  else if (spec.nodes > 1)
    r.fail("network",
           fmt::format("required field is missing (the cluster has {} nodes)", spec.nodes));
  if (f.has("collectives"))
    spec.overlap_collectives = f.choice("collectives", {"overlapped", "inline"}) == "overlapped";
  spec.collective_overhead =
      f.quantity_or("collective_overhead", parse_duration, "a duration", "\"40 us\"", 0, true);
  return spec;
}

}  // namespace

ClusterSpec parse_cluster_spec(std::string_view yaml_text, std::string_view filename) {
  const Reader r{std::string(filename)};
  YAML::Node root;
  try {
    root = YAML::Load(std::string(yaml_text));
  } catch (const YAML::ParserException& e) {
    throw ClusterSpecError(fmt::format("{}:{}:{}: invalid YAML: {}", filename, e.mark.line + 1,
                                       e.mark.column + 1, e.msg));
  }
  if (!root.IsMap())
    throw ClusterSpecError(
        fmt::format("{}: expected a map of fields (name, nodes, devices_per_node, device, "
                    "interconnect, network), got {}",
                    filename, describe(root)));
  try {
    return read_cluster(r, root, filename);
  } catch (const YAML::Exception& e) {  // a shape the readers above did not foresee
    throw ClusterSpecError(fmt::format("{}:{}:{}: unreadable YAML value: {}", filename,
                                       e.mark.line + 1, e.mark.column + 1, e.msg));
  }
}

ClusterSpec load_cluster_spec(const std::string& path) {
  std::ifstream in(path);
  if (!in) throw ClusterSpecError(path + ": cannot open the file");
  std::stringstream text;
  text << in.rdbuf();
  ClusterSpec spec = parse_cluster_spec(text.str(), path);
  spec.source = path;
  return spec;
}

}  // namespace spora::sim
