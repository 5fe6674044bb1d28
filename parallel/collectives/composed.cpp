#include "parallel/collectives/composed.h"

#include <algorithm>
#include <numeric>
#include <sstream>
#include <stdexcept>
#include <string>

#include "parallel/collectives/generators.h"

namespace spora::parallel {

using detail::block_offset;
using detail::block_size;
using detail::Piece;
using detail::pieces;
using detail::ScheduleBuilder;

namespace {

int mod(int a, int m) { return ((a % m) + m) % m; }

[[noreturn]] void invalid(const std::string& what) {
  throw std::invalid_argument("composed schedule: " + what);
}

void validate(const CollectiveSpec& spec, const Composition& c) {
  if (!composable(spec.collective))
    invalid(std::string(collective_name(spec.collective)) + " is not composable");
  if (spec.ranks < 1 || spec.count < 0) invalid("invalid spec");
  if (c.dims.empty()) invalid("no dimensions");
  std::int64_t product = 1;
  for (int d : c.dims) {
    if (d < 1) invalid("a dimension of size " + std::to_string(d));
    product *= d;
  }
  if (product != spec.ranks)
    invalid("the dimensions' product " + std::to_string(product) + " is not the " +
            std::to_string(spec.ranks) + " ranks");
  if (!c.perm.empty()) {
    std::vector<int> sorted = c.perm;
    std::sort(sorted.begin(), sorted.end());
    std::vector<int> identity(spec.ranks);
    std::iota(identity.begin(), identity.end(), 0);
    if (sorted != identity) invalid("perm is not a permutation of the ranks");
  }
  if (c.chunks < 1) invalid("chunks " + std::to_string(c.chunks));
  if (c.tree_shape != TreeShape::None) {
    if (spec.collective != Collective::AllReduce)
      invalid("a tree packing implements all-reduce, not " +
              std::string(collective_name(spec.collective)));
    if (c.trees < 1 || c.trees > spec.ranks)
      invalid("a tree packing of " + std::to_string(c.trees) + " trees over " +
              std::to_string(spec.ranks) + " ranks");
    if (!c.lanes.empty()) invalid("a tree packing has no lanes");
    return;
  }
  if (c.lanes.empty()) invalid("no lane");
  for (const ComposedLane& lane : c.lanes) {
    std::vector<int> seen(c.dims.size(), 0);
    for (const ComposedPhase& ph : lane.phases) {
      if (ph.dim < 0 || ph.dim >= static_cast<int>(c.dims.size()))
        invalid("a phase of dimension " + std::to_string(ph.dim));
      if (seen[ph.dim]++) invalid("a lane repeats dimension " + std::to_string(ph.dim));
    }
    for (std::size_t d = 0; d < c.dims.size(); ++d)
      if (c.dims[d] > 1 && !seen[d]) invalid("a lane misses dimension " + std::to_string(d));
    if (spec.collective == Collective::AllToAll)
      for (const ComposedPhase& ph : lane.phases)
        if (!ph.direct && c.dims[ph.dim] > 1)
          invalid("an all-to-all phase is a direct exchange, not a ring");
  }
}

// One lane of one composed collective, on top of a builder that all lanes share.
class LaneBuilder {
 public:
  LaneBuilder(ScheduleBuilder& b, const CollectiveSpec& spec, const Composition& c,
              const ComposedLane& lane, int lane_index, const std::vector<std::int64_t>& work_base)
      : b_(b), spec_(spec), c_(c), work_base_(work_base), p_(spec.ranks) {
    for (const ComposedPhase& ph : lane.phases)
      if (c.dims[ph.dim] > 1) phases_.push_back(ph);
    stride_.assign(c.dims.size(), 1);
    for (std::size_t d = 1; d < c.dims.size(); ++d) stride_[d] = stride_[d - 1] * c.dims[d - 1];
    weight_.assign(phases_.size(), 1);
    for (int j = static_cast<int>(phases_.size()) - 2; j >= 0; --j)
      weight_[j] = weight_[j + 1] * c.dims[phases_[j + 1].dim];
    perm_ = c.perm;
    if (perm_.empty()) {
      perm_.resize(p_);
      std::iota(perm_.begin(), perm_.end(), 0);
    }
    virtual_.assign(p_, 0);
    for (int v = 0; v < p_; ++v) virtual_[perm_[v]] = v;
    const std::int64_t n = spec.count;
    const int lanes = static_cast<int>(c.lanes.size());
    lo_ = block_offset(n, lanes, lane_index);
    len_ = block_size(n, lanes, lane_index);
  }

  void all_reduce() {
    reduce_scatter_phases();
    all_gather_phases();
  }

  void reduce_scatter() {
    reduce_scatter_phases();
    // The rank's block, reduced over all ranks, sits in its work space at its own offset.
    for (int r = 0; r < p_; ++r)
      b_.copy(r, work(r, atom(position_of(r))), detail::output(lo_, len_));
  }

  void all_gather() {
    for (int r = 0; r < p_; ++r)
      b_.copy(r, detail::input(lo_, len_), work(r, atom(position_of(r))));
    all_gather_phases();
  }

 private:
  bool all_reduce_spec() const { return spec_.collective == Collective::AllReduce; }

  // The logical region of the atom at `pos`: all-reduce's share of the n elements cut into p
  // parts; otherwise the lane's sub-range of the block of the rank at that position.
  Region atom(int pos) const {
    if (all_reduce_spec())
      return detail::output(lo_ + block_offset(len_, p_, pos), block_size(len_, p_, pos));
    return detail::output(std::int64_t{perm_[virtual_at(pos)]} * spec_.count + lo_, len_);
  }

  // The virtual rank whose coordinates are the digits of `pos`.
  int virtual_at(int pos) const {
    int v = 0;
    for (std::size_t j = 0; j < phases_.size(); ++j) {
      const int d = phases_[j].dim;
      v += (pos / weight_[j]) % c_.dims[d] * stride_[d];
    }
    return v;
  }

  int coordinate(int rank, int dim) const { return virtual_[rank] / stride_[dim] % c_.dims[dim]; }

  int position_of(int rank) const {
    int pos = 0;
    for (std::size_t j = 0; j < phases_.size(); ++j)
      pos += coordinate(rank, phases_[j].dim) * weight_[j];
    return pos;
  }

  // The positions `rank` holds before phase j (reduce-scatter) or after it (all-gather).
  int held_start(int rank, int j) const {
    int a = 0;
    for (int i = 0; i < j; ++i) a += coordinate(rank, phases_[i].dim) * weight_[i];
    return a;
  }

  // Group of `rank` in phase j, by coordinate.
  std::vector<int> group(int rank, int j) const {
    const int d = phases_[j].dim;
    const int v = virtual_[rank], own = coordinate(rank, d);
    std::vector<int> g;
    for (int x = 0; x < c_.dims[d]; ++x) g.push_back(perm_[v + (x - own) * stride_[d]]);
    return g;
  }

  // The logical regions of positions [s, e), adjacent ones merged.
  std::vector<Region> regions(int s, int e) const {
    std::vector<Region> out;
    for (int pos = s; pos < e; ++pos) {
      const Region r = atom(pos);
      if (r.count == 0) continue;
      if (!out.empty() && out.back().end() == r.offset)
        out.back().count += r.count;
      else
        out.push_back(r);
    }
    return out;
  }

  // Where a logical region lives on `rank`: the work space (all-reduce, all-gather: the output;
  // reduce-scatter: scratch laid out as the input) or the input.
  Region work(int rank, Region logical) const {
    if (spec_.collective == Collective::ReduceScatter) {
      logical.buffer = BufferKind::Scratch;
      logical.offset += work_base_[rank];
    }
    return logical;
  }
  Region input(int rank, Region logical) const {
    logical.buffer = BufferKind::Input;
    if (spec_.collective == Collective::AllGather)
      logical.offset -= std::int64_t{rank} * spec_.count;
    return logical;
  }

  // Part x of the group's range in phase j: positions [a + x w, a + (x + 1) w).
  std::vector<Region> part(int rank, int j, int x) const {
    const int a = held_start(rank, j), w = weight_[j];
    return regions(a + x * w, a + (x + 1) * w);
  }

  // Ring members in ring order: by coordinate, or reversed.
  std::vector<int> ring(int rank, int j) const {
    std::vector<int> g = group(rank, j);
    if (phases_[j].reversed) std::reverse(g.begin(), g.end());
    return g;
  }

  // The groups of phase j: each once, led by its member of coordinate 0.
  std::vector<int> leaders(int j) const {
    std::vector<int> out;
    for (int r = 0; r < p_; ++r)
      if (coordinate(r, phases_[j].dim) == 0) out.push_back(r);
    return out;
  }

  void reduce_scatter_phases() {
    for (std::size_t j = 0; j < phases_.size(); ++j)
      for (int leader : leaders(j)) {
        if (phases_[j].direct)
          direct_reduce_scatter(leader, static_cast<int>(j));
        else
          ring_reduce_scatter(leader, static_cast<int>(j));
      }
  }

  void all_gather_phases() {
    for (int j = static_cast<int>(phases_.size()) - 1; j >= 0; --j)
      for (int leader : leaders(j)) {
        if (phases_[j].direct)
          direct_all_gather(leader, j);
        else
          ring_all_gather(leader, j);
      }
  }

  // The first reduce-scatter phase reads the contributions from the input; later ones find
  // them in the work space.
  bool from_input(int j) const { return j == 0; }

  void transfer_part(int from, int to, int j, int x, bool src_input, bool reduce) {
    for (const Region& r : part(from, j, x))
      b_.transfer(from, src_input ? input(from, r) : work(from, r), to, work(to, r), reduce);
  }

  void ring_reduce_scatter(int leader, int j) {
    const std::vector<int> m = ring(leader, j);
    const int g = static_cast<int>(m.size());
    const int d = phases_[j].dim;
    auto part_at = [&](int i) { return coordinate(m[mod(i, g)], d); };
    if (from_input(j))
      // Position i reduces into part_at(i - k - 2) in hop k: copy its contributions in that
      // order, each after the one before, so the copies overlap the transfers.
      for (int i = 0; i < g; ++i) {
        int previous = -1;
        for (int k = 0; k < g - 1; ++k)
          for (const Region& r : part(m[i], j, part_at(i - k - 2))) {
            const int id = b_.copy(m[i], input(m[i], r), work(m[i], r),
                                   previous >= 0 ? std::vector<int>{previous} : std::vector<int>{});
            if (id >= 0) previous = id;
          }
      }
    for (int k = 0; k <= g - 2; ++k)
      for (int i = 0; i < g; ++i)
        transfer_part(m[i], m[mod(i + 1, g)], j, part_at(i - k - 1), from_input(j) && k == 0,
                      /*reduce=*/true);
  }

  void direct_reduce_scatter(int leader, int j) {
    const std::vector<int> m = group(leader, j);
    const int g = static_cast<int>(m.size());
    if (from_input(j))
      for (int x = 0; x < g; ++x)
        for (const Region& r : part(m[x], j, x)) b_.copy(m[x], input(m[x], r), work(m[x], r));
    // Every member receives the g - 1 others' contributions to its part at once, each into a
    // scratch slot of its own, and reduces them into its work space in turn.
    for (int x = 0; x < g; ++x) {
      const std::vector<Region> mine = part(m[x], j, x);
      for (int s = 1; s < g; ++s) {
        const int y = (x + s) % g;  // the sender
        std::int64_t size = 0;
        for (const Region& r : mine) size += r.count;
        const Region slot = b_.allocate_scratch(m[x], size);
        std::int64_t at = 0;
        for (const Region& r : mine) {
          const Region src = from_input(j) ? input(m[y], r) : work(m[y], r);
          const Region dst = work(m[x], r);
          for (const Piece& piece : pieces(r.count, b_.chunks())) {
            const Region in_slot = detail::sub(slot, at + piece.offset, piece.count);
            b_.send(m[y], m[x], detail::sub(src, piece.offset, piece.count));
            b_.recv(m[x], m[y], in_slot, false);
            b_.reduce(m[x], in_slot, detail::sub(dst, piece.offset, piece.count));
          }
          at += r.count;
        }
      }
    }
  }

  // The all-gather collective's first all-gather phase sends each rank's own block from the
  // input; everything else comes from the work space.
  bool own_from_input(int j) const {
    return spec_.collective == Collective::AllGather && j == static_cast<int>(phases_.size()) - 1;
  }

  void ring_all_gather(int leader, int j) {
    const std::vector<int> m = ring(leader, j);
    const int g = static_cast<int>(m.size());
    const int d = phases_[j].dim;
    auto part_at = [&](int i) { return coordinate(m[mod(i, g)], d); };
    for (int k = 0; k <= g - 2; ++k)
      for (int i = 0; i < g; ++i)
        transfer_part(m[i], m[mod(i + 1, g)], j, part_at(i - k), own_from_input(j) && k == 0,
                      /*reduce=*/false);
  }

  void direct_all_gather(int leader, int j) {
    const std::vector<int> m = group(leader, j);
    const int g = static_cast<int>(m.size());
    for (int s = 1; s < g; ++s)
      for (int x = 0; x < g; ++x)
        transfer_part(m[x], m[(x + s) % g], j, x, own_from_input(j), false);
  }

  ScheduleBuilder& b_;
  const CollectiveSpec& spec_;
  const Composition& c_;
  const std::vector<std::int64_t>& work_base_;
  int p_;
  std::vector<ComposedPhase> phases_;
  std::vector<int> stride_, weight_, perm_, virtual_;
  std::int64_t lo_ = 0, len_ = 0;
};

}  // namespace

namespace {

// One lane of a composed all-to-all. An item is the lane's share of one block; item m on
// virtual rank v is named by a virtual rank whose coordinates are, in the dimensions done, the
// source's and, in the others, the destination's: before the first phase item m is v's block
// for m, after the last it is m's block for v. A phase in dimension k sends every group member
// the items whose coordinate k is its own (p / g items, one message), and each arrives as the
// item with the sender's coordinate. Before a phase the items sit in a layout with k most
// significant (then the other dimensions, last first), so a message is one region: where they
// do not (the input when lanes split its blocks or k is not the last dimension, received items
// of the previous phase), they are first copied into fresh scratch in that layout. Received
// items land in fresh scratch per phase, or in the output when they are contiguous there (the
// last phase in the last dimension, one lane). Scratch: up to 2 p n per phase.
class AllToAllLane {
 public:
  AllToAllLane(ScheduleBuilder& b, const CollectiveSpec& spec, const Composition& c,
               const ComposedLane& lane, int lane_index)
      : b_(b), c_(c), p_(spec.ranks), n_(spec.count) {
    for (const ComposedPhase& ph : lane.phases)
      if (c.dims[ph.dim] > 1) phases_.push_back(ph.dim);
    stride_.assign(c.dims.size(), 1);
    for (std::size_t d = 1; d < c.dims.size(); ++d) stride_[d] = stride_[d - 1] * c.dims[d - 1];
    perm_ = c.perm;
    if (perm_.empty()) {
      perm_.resize(p_);
      std::iota(perm_.begin(), perm_.end(), 0);
    }
    const int lanes = static_cast<int>(c.lanes.size());
    lo_ = block_offset(n_, lanes, lane_index);
    len_ = block_size(n_, lanes, lane_index);
  }

  void build() {
    if (len_ == 0) return;
    // loc[v][m]: where item m of virtual rank v is now.
    std::vector<std::vector<Region>> loc(p_, std::vector<Region>(p_));
    for (int v = 0; v < p_; ++v)
      for (int m = 0; m < p_; ++m)
        loc[v][m] = detail::input(std::int64_t{perm_[m]} * n_ + lo_, len_);
    for (std::size_t t = 0; t < phases_.size(); ++t) {
      const int k = phases_[t], g = c_.dims[k];
      const std::vector<int> order = layout(k);  // items by position in the phase's layout
      const int per = p_ / g;                    // items per message
      const bool last = t + 1 == phases_.size();
      for (int v = 0; v < p_; ++v) {
        bool contiguous = true;
        for (int x = 0; x < g && contiguous; ++x)
          if (x != coordinate(v, k))
            contiguous = runs(loc[v], order, x * per, (x + 1) * per).size() == 1;
        if (contiguous) continue;
        const Region area = b_.allocate_scratch(perm_[v], std::int64_t{p_} * len_);
        std::vector<std::pair<int, Region>> moves;
        for (int i = 0; i < p_; ++i)
          if (coordinate(order[i], k) != coordinate(v, k))
            moves.emplace_back(order[i], detail::scratch(area.offset + i * len_, len_));
        move(v, loc[v], moves);
      }
      std::vector<std::vector<Region>> next = loc;
      std::vector<Region> received(p_);  // per rank, this phase's scratch (allocated when needed)
      for (int v = 0; v < p_; ++v)
        for (int x = 0; x < g; ++x) {
          const int own = coordinate(v, k);
          if (x == own) continue;
          const int u = v + (x - own) * stride_[k];
          const std::vector<Region> src = runs(loc[v], order, x * per, (x + 1) * per);
          // At u these are the items with coordinate k = own, in the same order.
          std::vector<Region> out;
          for (int i = own * per; i < (own + 1) * per; ++i)
            out.push_back(detail::output(std::int64_t{perm_[order[i]]} * n_ + lo_, len_));
          Region dst;
          const std::vector<Region> in_output = merged(out);
          if (last && in_output.size() == 1) {
            dst = in_output[0];
          } else {
            if (received[u].count == 0)
              received[u] = b_.allocate_scratch(perm_[u], std::int64_t{p_} * len_);
            dst = detail::scratch(received[u].offset + std::int64_t{own} * per * len_,
                                  std::int64_t{per} * len_);
          }
          b_.transfer(perm_[v], src[0], perm_[u], dst);
          for (int i = 0; i < per; ++i) {
            Region r = dst;
            r.offset += std::int64_t{i} * len_;
            r.count = len_;
            next[u][order[own * per + i]] = r;
          }
        }
      loc = std::move(next);
    }
    for (int v = 0; v < p_; ++v) {
      std::vector<int> by_source(p_);
      std::iota(by_source.begin(), by_source.end(), 0);
      std::sort(by_source.begin(), by_source.end(),
                [&](int a, int b) { return perm_[a] < perm_[b]; });
      std::vector<std::pair<int, Region>> moves;
      for (int m : by_source)
        moves.emplace_back(m, detail::output(std::int64_t{perm_[m]} * n_ + lo_, len_));
      move(v, loc[v], moves);
    }
  }

 private:
  int coordinate(int v, int d) const { return v / stride_[d] % c_.dims[d]; }

  // The items in the order of a layout with dimension k most significant, then the other
  // dimensions from the last to the first.
  std::vector<int> layout(int k) const {
    std::vector<int> dims{k};
    for (int d = static_cast<int>(c_.dims.size()) - 1; d >= 0; --d)
      if (d != k && c_.dims[d] > 1) dims.push_back(d);
    std::vector<std::pair<std::int64_t, int>> keyed;
    for (int m = 0; m < p_; ++m) {
      std::int64_t key = 0;
      for (int d : dims) key = key * c_.dims[d] + coordinate(m, d);
      keyed.emplace_back(key, m);
    }
    std::sort(keyed.begin(), keyed.end());
    std::vector<int> out;
    for (const auto& km : keyed) out.push_back(km.second);
    return out;
  }

  // Adjacent regions of one buffer merged, in the order given.
  static std::vector<Region> merged(const std::vector<Region>& regions) {
    std::vector<Region> out;
    for (const Region& r : regions) {
      if (!out.empty() && out.back().buffer == r.buffer && out.back().end() == r.offset)
        out.back().count += r.count;
      else
        out.push_back(r);
    }
    return out;
  }

  // Where items order[s, e) are, as merged regions.
  static std::vector<Region> runs(const std::vector<Region>& loc, const std::vector<int>& order,
                                  int s, int e) {
    std::vector<Region> regions;
    for (int i = s; i < e; ++i) regions.push_back(loc[order[i]]);
    return merged(regions);
  }

  // Copies items to their targets on virtual rank v (in the order given), a run of items
  // adjacent at both ends as one copy, and records where they are.
  void move(int v, std::vector<Region>& loc, const std::vector<std::pair<int, Region>>& moves) {
    Region src, dst;
    auto flush = [&] {
      if (dst.count > 0) b_.copy(perm_[v], src, dst);
      src = dst = Region{};
    };
    for (const auto& [m, target] : moves) {
      const Region from = loc[m];
      loc[m] = target;
      if (from == target) {
        flush();
        continue;
      }
      if (dst.count > 0 && src.buffer == from.buffer && src.end() == from.offset &&
          dst.buffer == target.buffer && dst.end() == target.offset) {
        src.count += from.count;
        dst.count += target.count;
        continue;
      }
      flush();
      src = from;
      dst = target;
    }
    flush();
  }

  ScheduleBuilder& b_;
  const Composition& c_;
  const int p_;
  const std::int64_t n_;
  std::vector<int> phases_;  // the lane's dimensions of size > 1, in order
  std::vector<int> stride_, perm_;
  std::int64_t lo_ = 0, len_ = 0;
};

}  // namespace

bool composable(Collective collective) {
  return collective == Collective::AllReduce || collective == Collective::ReduceScatter ||
         collective == Collective::AllGather || collective == Collective::AllToAll;
}

Schedule build_composed(const CollectiveSpec& spec, const Composition& composition) {
  validate(spec, composition);
  AlgorithmOptions options;
  options.chunks = composition.chunks;
  options.channels = 1;
  ScheduleBuilder b(spec, "composed", options);
  const int p = spec.ranks;
  const std::int64_t n = spec.count;
  std::vector<std::int64_t> work_base(p, 0);
  if (spec.collective == Collective::ReduceScatter && p > 1)
    for (int r = 0; r < p; ++r) work_base[r] = b.allocate_scratch(r, std::int64_t{p} * n).offset;
  if (p == 1) {
    b.copy(0, detail::input(0, n), detail::output(0, n));
    return std::move(b).finish();
  }
  if (composition.tree_shape != TreeShape::None) {
    const int k = composition.trees;
    for (int t = 0; t < k; ++t) {
      // Tree t over the order rotated to start at position t p / k.
      const int offset = static_cast<int>(std::int64_t{t} * p / k);
      auto rank_at = [&](int pos) {
        const int v = (pos + offset) % p;
        return composition.perm.empty() ? v : composition.perm[v];
      };
      std::vector<int> parent(p, -1);
      for (int pos = 1; pos < p; ++pos)
        parent[rank_at(pos)] = rank_at(composition.tree_shape == TreeShape::Chain
                                           ? pos - 1
                                           : detail::binary_tree_parent(p, pos));
      const std::int64_t lo = block_offset(n, k, t);
      detail::tree_all_reduce_range(b, parent, lo, lo + block_size(n, k, t));
    }
    return std::move(b).finish();
  }
  for (std::size_t l = 0; l < composition.lanes.size(); ++l) {
    if (spec.collective == Collective::AllToAll) {
      AllToAllLane(b, spec, composition, composition.lanes[l], static_cast<int>(l)).build();
      continue;
    }
    LaneBuilder lane(b, spec, composition, composition.lanes[l], static_cast<int>(l), work_base);
    switch (spec.collective) {
      case Collective::AllReduce:
        lane.all_reduce();
        break;
      case Collective::ReduceScatter:
        lane.reduce_scatter();
        break;
      default:
        lane.all_gather();
        break;
    }
  }
  return std::move(b).finish();
}

std::string describe_composition(const Composition& c) {
  std::string out = "dims ";
  for (std::size_t d = 0; d < c.dims.size(); ++d) out += (d ? "x" : "") + std::to_string(c.dims[d]);
  if (c.tree_shape != TreeShape::None)
    out += std::string(" trees ") + (c.tree_shape == TreeShape::Binary ? "binary " : "chain ") +
           std::to_string(c.trees);
  else
    out += " lanes ";
  for (std::size_t l = 0; l < c.lanes.size(); ++l) {
    if (l) out += ",";
    const auto& phases = c.lanes[l].phases;
    for (std::size_t j = 0; j < phases.size(); ++j) {
      if (j) out += ".";
      out += std::to_string(phases[j].dim);
      if (phases[j].direct) out += "d";
      if (phases[j].reversed) out += "r";
    }
  }
  out += " chunks " + std::to_string(c.chunks);
  if (!c.perm.empty()) {
    out += " perm ";
    for (std::size_t i = 0; i < c.perm.size(); ++i)
      out += (i ? "," : "") + std::to_string(c.perm[i]);
  }
  return out;
}

namespace {

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::string cur;
  for (char ch : s) {
    if (ch == sep) {
      out.push_back(cur);
      cur.clear();
    } else {
      cur += ch;
    }
  }
  out.push_back(cur);
  return out;
}

int parse_int(const std::string& s, const std::string& what) {
  if (s.empty() || s.size() > 9 || !std::all_of(s.begin(), s.end(), ::isdigit))
    invalid("'" + s + "' is not a number (" + what + ")");
  return std::stoi(s);
}

}  // namespace

Composition parse_composition(const std::string& text) {
  std::istringstream in(text);
  Composition c;
  std::string key, value;
  bool has_dims = false, has_lanes = false;
  while (in >> key) {
    if (!(in >> value)) invalid("'" + key + "' has no value");
    if (key == "dims") {
      for (const std::string& d : split(value, 'x')) c.dims.push_back(parse_int(d, "dims"));
      has_dims = true;
    } else if (key == "lanes") {
      for (const std::string& lane : split(value, ',')) {
        ComposedLane l;
        for (std::string phase : split(lane, '.')) {
          ComposedPhase ph;
          while (!phase.empty() && (phase.back() == 'd' || phase.back() == 'r')) {
            (phase.back() == 'd' ? ph.direct : ph.reversed) = true;
            phase.pop_back();
          }
          ph.dim = parse_int(phase, "a lane's phase");
          l.phases.push_back(ph);
        }
        c.lanes.push_back(l);
      }
      has_lanes = true;
    } else if (key == "trees") {
      if (value == "binary")
        c.tree_shape = TreeShape::Binary;
      else if (value == "chain")
        c.tree_shape = TreeShape::Chain;
      else
        invalid("unknown tree shape '" + value + "' (binary, chain)");
      std::string count;
      if (!(in >> count)) invalid("'trees " + value + "' has no count");
      c.trees = parse_int(count, "trees");
      has_lanes = true;
    } else if (key == "chunks") {
      c.chunks = parse_int(value, "chunks");
    } else if (key == "perm") {
      for (const std::string& r : split(value, ',')) c.perm.push_back(parse_int(r, "perm"));
    } else {
      invalid("unknown key '" + key + "'");
    }
  }
  if (!has_dims || !has_lanes) invalid("a composition needs dims and lanes (or trees)");
  return c;
}

std::vector<ComposedLane> rotated_lanes(const std::vector<int>& order, bool rotate,
                                        bool both_directions, const std::vector<bool>& direct) {
  std::vector<ComposedLane> out;
  const int k = static_cast<int>(order.size());
  for (int start = 0; start < (rotate ? std::max(k, 1) : 1); ++start)
    for (int dir = 0; dir < (both_directions ? 2 : 1); ++dir) {
      ComposedLane lane;
      for (int i = 0; i < k; ++i) {
        const int d = order[(start + i) % k];
        const bool is_direct = d < static_cast<int>(direct.size()) && direct[d];
        lane.phases.push_back({d, is_direct, dir == 1 && !is_direct});
      }
      out.push_back(lane);
    }
  return out;
}

}  // namespace spora::parallel
