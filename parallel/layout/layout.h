// Device meshes, tensor layouts and redistribution between layouts
// (parallel/README.md "Layouts").
//
// A Layout is MindSpore's device matrix + tensor map with the device matrix fixed to the Mesh:
// tensor_map[d] is the mesh axis that splits tensor dimension d (-1: not split). A mesh axis
// splits at most one tensor dimension, and a dimension is split by at most one mesh axis (to
// split a dimension over 8 devices of a 2x4 mesh, use a 1-D mesh of 8). `partial` lists the
// mesh axes over which the local values are unreduced partial sums: the global value is the
// sum over the ranks of such an axis (each of them holding a split shard where tensor_map
// says so).
//
// Text form (to_string, parse):
//   "[m0, -] partial(m1)"   the tensor map by mesh axis name (m<i> or the mesh's names), '-' for
//                           a dimension not split; the form every tool prints and reads back
//   "(2, 1) partial(m1)"    MindSpore's partition numbers (how many pieces each dimension is cut
//                           into; to_string(mesh) prints it); parse assigns each number > 1 the
//                           first unused mesh axis of that size, so on a 2x2 mesh "(1, 2)" splits
//                           dimension 1 over axis 0 (write "[-, m1]" for axis 1)
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace spora::parallel {

// A logical device mesh, e.g. {2, 4}: rank r has coordinates in row-major order over the axes
// (the last axis varies fastest, so {2, 4}'s rank 5 is (1, 1)).
struct Mesh {
  std::vector<int64_t> shape;           // devices along each mesh axis
  std::vector<std::string> axis_names;  // optional ("dp", "tp"); default "m0", "m1", ...

  int64_t size() const;    // product of shape: the number of ranks
  int rank_count() const;  // size() as an int (the number of ranks)
  int ndim() const { return static_cast<int>(shape.size()); }  // number of mesh axes
  int64_t axis_size(int axis) const { return shape.at(static_cast<size_t>(axis)); }
  std::string axis_name(int axis) const;  // axis_names[axis] or "m<axis>"
  // The axis named `name` (an axis name or "m<i>"), or -1.
  int axis_index(std::string_view name) const;
  std::vector<int64_t> coords(int64_t rank) const;
  int64_t rank_of(const std::vector<int64_t>& coords) const;
  // The ranks that differ from `rank` only along `axes` (the communicator group of a collective
  // over those axes), sorted.
  std::vector<int64_t> group(int64_t rank, const std::vector<int>& axes) const;
  // Throws lang::UserError for an empty mesh, a size < 1 or mismatched/duplicate axis names.
  void validate() const;
  std::string to_string() const;  // "2x4"
  // "2x4" or "dp=2,tp=4" -> a mesh; throws lang::UserError on anything else.
  static Mesh parse(std::string_view text);
  friend bool operator==(const Mesh&, const Mesh&) = default;
};

struct Layout {
  std::vector<int> tensor_map;
  std::vector<int> partial;  // sorted, unique

  static Layout replicated(int rank);  // rank = tensor rank (number of dims)
  // Dimension `dim` of a rank-`rank` tensor split over mesh axis `axis`, the rest replicated.
  static Layout split(int rank, int dim, int axis);
  int rank() const { return static_cast<int>(tensor_map.size()); }
  bool is_replicated() const;  // no split, no partial
  bool is_partial() const { return !partial.empty(); }
  bool has_partial(int axis) const;
  // The tensor dimension split by mesh axis `axis`, or -1.
  int dim_of_axis(int axis) const;
  // Number of devices that split dimension `dim` (1 if not split).
  int64_t pieces(int dim, const Mesh& m) const;
  // Throws lang::UserError when the layout does not fit the mesh (an axis out of range, an axis
  // used twice, partial on a splitting axis) or, with `global`, a split dim is not divisible.
  void validate(const Mesh& m) const;
  void validate(const Mesh& m, const std::vector<int64_t>& global) const;
  // Local (per-device) shape of a global shape; throws lang::UserError if a split dim is not
  // divisible ("cannot split dimension 1 of size 10 over mesh axis 1 of 4 devices").
  std::vector<int64_t> local_shape(const std::vector<int64_t>& global, const Mesh& m) const;
  // The offset of rank's shard along each dim (for slicing / gathering).
  std::vector<int64_t> shard_offset(const std::vector<int64_t>& global, const Mesh& m,
                                    int64_t rank) const;
  // The fraction of the global tensor each device stores (1 / product of the splitting axes'
  // sizes).
  double local_fraction(const Mesh& m) const;

  std::string to_string() const;                      // "[m0, -] partial(m1)"
  std::string to_string(const Mesh& m) const;         // "[dp, -] partial(tp)" with the mesh's names
  std::string partition_string(const Mesh& m) const;  // MindSpore's "(2, 1) partial(m1)"
  // Reads either text form (see the top of this file) for a tensor of `rank` dims on `m`;
  // throws lang::UserError with the text and the reason.
  static Layout parse(std::string_view text, const Mesh& m, int rank);
  friend bool operator==(const Layout&, const Layout&) = default;
};

// One step of a redistribution, in order. dim = tensor dim, axis = mesh axis.
//   AllGather(dim, axis)        dim is split over axis -> not split (gathered along the axis)
//   Slice(dim, axis)            dim not split -> split over axis (each rank keeps its piece; local)
//   AllReduce(axis)             partial over axis -> not partial
//   ReduceScatter(dim, axis)    partial over axis -> dim split over axis, summed
//   AllToAll(dim, dim2, axis)   dim split over axis -> dim2 split over axis instead
struct RedistStep {
  enum class Kind { AllGather, Slice, AllReduce, ReduceScatter, AllToAll };
  Kind kind;
  int dim = -1;
  int dim2 = -1;  // AllToAll: the dim split after
  int axis = -1;
  std::vector<int64_t> shape_before;  // local shape before the step
  std::string to_string() const;      // "all_gather(dim 0, m1)"
};
const char* kind_name(RedistStep::Kind k);  // "all_gather", "slice", ...

// Alpha-beta communication parameters per mesh axis (from a cluster spec or this machine's
// calibration).
struct AxisLink {
  double alpha_s = 5e-6;
  double bandwidth_Bps = 10e9;
  double call_s = 0;  // once per collective step, beyond its ring steps (collective_overhead)
};
// The time of one step with ring (and pairwise all-to-all) algorithms over the p devices of the
// step's axis, n = the bytes each rank holds before the step:
//   all-gather      (p-1) (alpha + n/B)            (the gathered size is p n)
//   reduce-scatter  (p-1) (alpha + n/(p B))
//   all-reduce      2 (p-1) (alpha + n/(p B))
//   all-to-all      (p-1) (alpha + n/(p B))
//   slice           0
// plus call_s for every step but a slice. An axis beyond `axes` uses AxisLink's defaults.
struct CommModel {
  std::vector<AxisLink> axes;
  double time(const RedistStep&, int64_t bytes_before, const Mesh&) const;
  // Bytes each rank sends in the step (the same ring algorithms).
  static int64_t bytes_sent(const RedistStep&, int64_t bytes_before, const Mesh&);
  const AxisLink& link(int axis) const;
};

// The cheapest sequence of steps turning `from` into `to` for a tensor of global `shape`; cost
// in seconds; bytes_moved = bytes each rank sends, summed over the steps.
struct RedistPlan {
  std::vector<RedistStep> steps;
  double seconds = 0;
  int64_t bytes_moved = 0;
  std::string to_string() const;  // "all_gather(dim 0, m0); slice(dim 1, m0)" or "identity"
};
// Throws lang::UserError when no plan exists: a split dimension not divisible, or `to` partial
// over an axis that `from` is not (a sum cannot be split back into unknown terms).
RedistPlan plan_redistribution(const Layout& from, const Layout& to,
                               const std::vector<int64_t>& shape, int dtype_bytes, const Mesh&,
                               const CommModel&);
// plan_redistribution's seconds from `from` to every layout it can reach, in one search (the
// search of plan_redistribution run to the end, each target's cheapest path being the one
// plan_redistribution finds for it): what a strategy search prices edge tables with. A layout
// not listed cannot be reached (plan_redistribution throws for it). Throws lang::UserError when
// `from` does not fit the shape.
std::vector<std::pair<Layout, double>> redistribution_seconds_from(
    const Layout& from, const std::vector<int64_t>& shape, int dtype_bytes, const Mesh&,
    const CommModel&);
// The layout after applying one step to `l` (no checks beyond the step's own preconditions,
// which throw lang::InternalError).
Layout apply_step(const Layout& l, const RedistStep& s);

}  // namespace spora::parallel
