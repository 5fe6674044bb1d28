// Automatic mixed precision: which dtype each primitive of the network computes in, by level
// and by the `amp` facet of its row (AmpClass, set where ops/ defines the row; absent:
// Promote). The level names are MindSpore's, the classes PyTorch autocast's lists (CPU):
//
//   O0  nothing changes (f32 everywhere).
//   O1  autocast: matmul and conv2d (and their batched forms) run on inputs cast to the low
//       dtype and give the low dtype; precision-sensitive ops (the "f32 list": exp log log1p
//       expm1 pow reciprocal rsqrt, sum mean prod, softmax log_softmax logsumexp, layer_norm
//       batch_norm, cross_entropy) run on inputs cast up to f32; any other op whose float
//       inputs mix the low dtype with f32 promotes them to f32 (PyTorch's type promotion).
//   O2  the whole network in the low dtype (every float input of a computing op is cast down)
//       except batch_norm, layer_norm and cross_entropy, which run in f32.
//   O3  the whole network in the low dtype, normalisations too (cross_entropy stays f32).
//
// "The network" is what a demanding user expects autocast to cover: the methods of models
// that hold parameters (layers and the networks made of them), and what they call. The loss
// function around the network, the optimizer (a model without parameters) and the loss
// scaler (std.amp) stay f32, like MindSpore's build_train_network (network cast, loss and
// optimizer f32) and PyTorch's autocast region around the forward pass. Parameters stay f32
// (master weights): the network casts them at each use, so their gradients come back f32
// through the casts' derivative. A network's outputs are cast back to f32 where the outermost
// model call returns (MindSpore's _OutputTo32).
//
// The lowering applies these rules as it emits each primitive (semantics/lower: the cast nodes
// are in the typed IR, before autodiff, and eager mode runs the very same nodes), so graph
// and eager mode compute the same thing and `spora ir` shows every inserted cast.
#pragma once

#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "semantics/registry.h"
#include "semantics/types.h"

namespace spora::sem {

// A row's autocast class (its `amp` facet).
enum class AmpClass {
  Promote,  // mixed low and f32 inputs promote to f32 at O1; the low dtype at O2 and O3
  Low,      // the low dtype from O1 (matmul, conv2d)
  F32,      // f32 at O1 (precision-sensitive math, sums); the low dtype at O2 and O3
  F32Norm,  // f32 at O1 and O2 (layer_norm, batch_norm); the low dtype at O3
  F32Loss,  // f32 at every level (cross_entropy)
};
inline constexpr const char* kAmpFacet = "amp";
// Sets the amp facet of the row `name`; false (and nothing done) when there is no such row.
bool set_amp(Registry& r, const std::string& name, AmpClass c);
// The row's class (Promote when it has no facet).
AmpClass amp_class(const Primitive& p);

enum class AmpLevel { O0, O1, O2, O3 };

struct AmpPolicy {
  AmpLevel level = AmpLevel::O0;
  DType low = DType::bf16;  // f16 or bf16
  bool on() const { return level != AmpLevel::O0; }
};

std::optional<AmpLevel> parse_amp_level(std::string_view name);  // "O0".."O3"
std::string_view amp_level_name(AmpLevel level);
// "O1 bf16", "O0".
std::string amp_str(const AmpPolicy& policy);

// The dtype the float inputs of primitive `prim` (a row that computes: kLowPrecisionFacet)
// get inside the network under `policy`, given the dtypes of its float tensor inputs; nullopt
// when they stay as they are. f64 inputs are never touched.
std::optional<DType> amp_compute_dtype(const AmpPolicy& policy, const Primitive& prim,
                                       const std::vector<DType>& float_inputs);

}  // namespace spora::sem
