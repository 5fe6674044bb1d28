// Automatic mixed precision: the levels and the rows' classes (amp.h).
#include "semantics/amp.h"

#include <algorithm>

namespace spora::sem {

bool set_amp(Registry& r, const std::string& name, AmpClass c) {
  Primitive* p = r.find_mutable(name);
  if (!p) return false;
  p->facets[kAmpFacet] = c;
  return true;
}

AmpClass amp_class(const Primitive& p) {
  const AmpClass* c = p.facet<AmpClass>(kAmpFacet);
  return c ? *c : AmpClass::Promote;
}

std::optional<AmpLevel> parse_amp_level(std::string_view name) {
  if (name == "O0") return AmpLevel::O0;
  if (name == "O1") return AmpLevel::O1;
  if (name == "O2") return AmpLevel::O2;
  if (name == "O3") return AmpLevel::O3;
  return std::nullopt;
}

std::string_view amp_level_name(AmpLevel level) {
  switch (level) {
    case AmpLevel::O1:
      return "O1";
    case AmpLevel::O2:
      return "O2";
    case AmpLevel::O3:
      return "O3";
    default:
      return "O0";
  }
}

std::string amp_str(const AmpPolicy& policy) {
  std::string s(amp_level_name(policy.level));
  if (policy.on()) s += " " + std::string(dtype_name(policy.low));
  return s;
}

std::optional<DType> amp_compute_dtype(const AmpPolicy& policy, const Primitive& prim,
                                       const std::vector<DType>& float_inputs) {
  auto has = [&](DType d) {
    return std::find(float_inputs.begin(), float_inputs.end(), d) != float_inputs.end();
  };
  const AmpClass c = amp_class(prim);
  switch (policy.level) {
    case AmpLevel::O0:
      return std::nullopt;
    case AmpLevel::O1:
      if (c == AmpClass::Low) return policy.low;
      if (c != AmpClass::Promote) return DType::f32;
      if (has(policy.low) && has(DType::f32)) return DType::f32;  // promotion
      return std::nullopt;
    case AmpLevel::O2:
      return c == AmpClass::F32Norm || c == AmpClass::F32Loss ? DType::f32 : policy.low;
    case AmpLevel::O3:
      return c == AmpClass::F32Loss ? DType::f32 : policy.low;
  }
  return std::nullopt;
}

}  // namespace spora::sem
