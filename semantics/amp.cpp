// Automatic mixed precision: the per-level op lists (amp.h).
#include "semantics/amp.h"

#include <algorithm>
#include <set>

namespace spora::sem {

namespace {

// PyTorch autocast's lower-precision list (CPU: matmul, conv and their batched forms).
const std::set<std::string, std::less<>>& low_list() {
  static const std::set<std::string, std::less<>> s = {"matmul", "conv2d"};
  return s;
}

// PyTorch autocast's f32 list, for the primitives Spora has.
const std::set<std::string, std::less<>>& f32_list() {
  static const std::set<std::string, std::less<>> s = {
      "exp",       "log",        "log1p",      "expm1",        "pow",     "reciprocal",
      "rsqrt",     "sum",        "mean",       "prod",         "softmax", "log_softmax",
      "logsumexp", "layer_norm", "batch_norm", "cross_entropy"};
  return s;
}

}  // namespace

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

std::optional<DType> amp_compute_dtype(const AmpPolicy& policy, std::string_view prim,
                                       const std::vector<DType>& float_inputs) {
  auto has = [&](DType d) {
    return std::find(float_inputs.begin(), float_inputs.end(), d) != float_inputs.end();
  };
  switch (policy.level) {
    case AmpLevel::O0:
      return std::nullopt;
    case AmpLevel::O1:
      if (low_list().count(prim)) return policy.low;
      if (f32_list().count(prim)) return DType::f32;
      if (has(policy.low) && has(DType::f32)) return DType::f32;  // promotion
      return std::nullopt;
    case AmpLevel::O2:
      if (prim == "batch_norm" || prim == "layer_norm" || prim == "cross_entropy")
        return DType::f32;
      return policy.low;
    case AmpLevel::O3:
      return prim == "cross_entropy" ? DType::f32 : policy.low;
  }
  return std::nullopt;
}

}  // namespace spora::sem
