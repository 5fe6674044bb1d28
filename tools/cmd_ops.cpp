#include <fmt/format.h>

#include <iostream>

#include "semantics/registry.h"
#include "tools/commands.h"

namespace spora::tools {

int cmd_ops() {
  for (const sem::Primitive* p : sem::Registry::instance().all()) {
    std::string sig;
    for (const auto& ps : p->params) {
      if (!sig.empty()) sig += ", ";
      if (ps.kind == sem::ParamSpec::Kind::Kwargs) sig += "**";
      sig += ps.name;
      if (ps.kind == sem::ParamSpec::Kind::InputList) sig += "...";
      if (ps.kind == sem::ParamSpec::Kind::OptionalInput) sig += "=none";
      if (ps.kind == sem::ParamSpec::Kind::Attr && ps.default_value) sig += "=" + sem::attr_str(*ps.default_value);
    }
    std::cout << fmt::format("{:<18} {:<12} {}({})  {}\n", p->name, p->family, p->name, sig, p->doc);
  }
  return 0;
}

}  // namespace spora::tools
