// Tree algorithms: double binary tree ("tree") and binomial tree ("binomial") for all-reduce,
// broadcast, reduce, gather and scatter.
//
// Both are built from four operations on an arbitrary rooted spanning tree, each over an
// element range so that a collective can run several trees side by side on parts of the data:
//
//   reduce     leaves send their input up; an inner node adds its children's sums into its own
//              accumulator (the output, or scratch where the rank has no output) and forwards
//   broadcast  the root sends down; an inner node forwards what it received
//   gather     every node packs its subtree's blocks in preorder into one scratch message, so
//              each edge carries one message; the root unpacks into rank order
//   scatter    the reverse of gather
//
// Trees (p = 7 shown):
//
//   binomial (relative rank v = r - root)          double binary tree (NCCL's)
//          0                                       tree 1: 0 --- 4            tree 2: shifted
//        / | \                                             /   \              by one rank, so
//       1  2   4                                          2     6             (nearly) every
//          |   | \                                       / \   /              inner node of
//          3   5  6                                     1   3 5               one is a leaf of
//   children of v: v + 2^k for 2^k < lowbit(v)                                the other
//
// 1. binomial all-reduce: reduce to rank 0, then broadcast from it, both on the whole buffer.
// 2. double binary tree: the data is cut in two halves; half 0 runs on tree 1, half 1 on
//    tree 2 (tree 1 mirrored for even p, shifted by one rank for odd p). A rank that is an
//    inner node in one tree is a leaf in the other, so both halves move at full bandwidth.
//    All-reduce reduces each half to its tree's top and broadcasts it back from there.
// 3. Rooted collectives need the data to start or end at `root`, which generally is not a
//    tree's top: the tree is re-rooted by cutting root from its parent and hanging the old
//    top under root. The result is still a spanning tree with at most three children per node.
// 4. Pipelining: with chunks > 1 every edge's message is split and each piece climbs (or
//    descends) on its own, so a deep tree streams instead of waiting level by level.
#include <algorithm>
#include <functional>

#include "parallel/collectives/generators.h"

namespace spora::parallel::detail {

namespace {

struct Tree {
  int root = 0;
  std::vector<int> parent;                 // -1 at the root
  std::vector<std::vector<int>> children;  // ascending

  static Tree from_parents(std::vector<int> parent) {
    Tree t;
    t.children.resize(parent.size());
    for (int v = 0; v < static_cast<int>(parent.size()); ++v)
      if (parent[v] < 0)
        t.root = v;
      else
        t.children[parent[v]].push_back(v);
    t.parent = std::move(parent);
    return t;
  }
  std::vector<int> preorder(int v) const {
    std::vector<int> out;
    std::function<void(int)> walk = [&](int u) {
      out.push_back(u);
      for (int c : children[u]) walk(c);
    };
    walk(v);
    return out;
  }
  std::vector<int> postorder() const {
    std::vector<int> pre = preorder(root), out;
    // Reverse preorder visits every child before its parent.
    out.assign(pre.rbegin(), pre.rend());
    return out;
  }
};

// NCCL's binary tree over 0..p-1, rooted at 0: a rank's parent flips its lowest set bit up.
int btree_parent(int p, int r) {
  if (r == 0) return -1;
  const int bit = r & -r;
  const int up = (r ^ bit) | (bit << 1);
  return up < p ? up : (r ^ bit);
}

Tree binary_tree(int p, int which) {
  std::vector<int> parent(p);
  for (int r = 0; r < p; ++r) {
    if (which == 0) {
      parent[r] = btree_parent(p, r);
    } else if (p % 2 == 0) {  // mirror
      const int u = btree_parent(p, p - 1 - r);
      parent[r] = u < 0 ? -1 : p - 1 - u;
    } else {  // shift by one
      const int u = btree_parent(p, (r - 1 + p) % p);
      parent[r] = u < 0 ? -1 : (u + 1) % p;
    }
  }
  return Tree::from_parents(std::move(parent));
}

Tree binomial_tree(int p, int root) {
  std::vector<int> parent(p);
  for (int r = 0; r < p; ++r) {
    const int v = (r - root + p) % p;
    parent[r] = v == 0 ? -1 : ((v & (v - 1)) + root) % p;
  }
  Tree t = Tree::from_parents(std::move(parent));
  // Children by relative rank, so every subtree is a run of consecutive relative ranks.
  for (auto& c : t.children)
    std::sort(c.begin(), c.end(),
              [&](int a, int b) { return (a - root + p) % p < (b - root + p) % p; });
  return t;
}

Tree reroot(Tree t, int root) {
  if (t.root == root) return t;
  std::erase(t.children[t.parent[root]], root);
  t.parent[root] = -1;
  t.parent[t.root] = root;
  t.children[root].push_back(t.root);
  t.root = root;
  return t;
}

// Ranks in preorder are consecutive ascending (u, u+1, ...): a subtree's blocks can then move
// straight between rank-ordered buffers without packing.
bool consecutive(const std::vector<int>& ranks) {
  for (std::size_t i = 1; i < ranks.size(); ++i)
    if (ranks[i] != ranks[0] + static_cast<int>(i)) return false;
  return true;
}

// Reduce of elements [lo, hi) to t.root's output. Inner non-root nodes accumulate in their
// output when they have one (all-reduce), otherwise in scratch.
void tree_reduce(ScheduleBuilder& b, const Tree& t, std::int64_t lo, std::int64_t hi,
                 bool inner_have_output) {
  const std::int64_t m = hi - lo;
  if (m == 0) return;
  std::vector<Region> acc(t.parent.size());
  for (int v = 0; v < static_cast<int>(acc.size()); ++v) {
    if (v != t.root && t.children[v].empty()) continue;  // a leaf sends its input
    acc[v] = v == t.root || inner_have_output ? output(lo, m) : b.allocate_scratch(v, m);
    b.copy(v, input(lo, m), acc[v]);
  }
  for (int v : t.postorder()) {
    if (v == t.root) continue;
    b.transfer(v, t.children[v].empty() ? input(lo, m) : acc[v], t.parent[v], acc[t.parent[v]],
               /*reduce=*/true);
  }
}

// Broadcast of elements [lo, hi) from t.root (its input, or its output when from_input is
// false) into everyone's output.
void tree_broadcast(ScheduleBuilder& b, const Tree& t, std::int64_t lo, std::int64_t hi,
                    bool from_input) {
  const std::int64_t m = hi - lo;
  if (m == 0) return;
  if (from_input) b.copy(t.root, input(lo, m), output(lo, m));
  for (int v : t.preorder(t.root)) {
    const Region src = v == t.root && from_input ? input(lo, m) : output(lo, m);
    // Biggest subtree first: it has the longest way to go.
    for (auto c = t.children[v].rbegin(); c != t.children[v].rend(); ++c)
      b.transfer(v, src, *c, output(lo, m));
  }
}

// Gather of elements [lo, hi) of every rank's n-element input into t.root's output, where
// rank u's elements land at u * n + lo.
void tree_gather(ScheduleBuilder& b, const Tree& t, std::int64_t n, std::int64_t lo,
                 std::int64_t hi) {
  const std::int64_t m = hi - lo;
  if (m == 0) return;
  const int p = static_cast<int>(t.parent.size());
  std::vector<std::vector<int>> order(p);
  std::vector<Region> stage(p);
  for (int v = 0; v < p; ++v) {
    order[v] = t.preorder(v);
    if (v == t.root) {
      b.copy(v, input(lo, m), output(v * n + lo, m));
    } else if (t.children[v].empty()) {
      stage[v] = input(lo, m);
    } else {
      stage[v] = b.allocate_scratch(v, static_cast<std::int64_t>(order[v].size()) * m);
      b.copy(v, input(lo, m), sub(stage[v], 0, m));
    }
  }
  std::vector<std::pair<Region, int>> unpack;  // root: (received region, first child rank)
  for (int v : t.postorder()) {
    if (v == t.root) continue;
    const int up = t.parent[v];
    const std::int64_t size = static_cast<std::int64_t>(order[v].size()) * m;
    Region dst;
    if (up != t.root) {
      const auto pos = std::find(order[up].begin(), order[up].end(), v) - order[up].begin();
      dst = sub(stage[up], pos * m, size);
    } else if (m == n && consecutive(order[v])) {
      dst = output(order[v][0] * n, size);
    } else {
      dst = b.allocate_scratch(up, size);
      unpack.emplace_back(dst, v);
    }
    b.transfer(v, stage[v], up, dst);
  }
  for (const auto& [region, child] : unpack)
    for (std::size_t i = 0; i < order[child].size(); ++i)
      b.copy(t.root, sub(region, static_cast<std::int64_t>(i) * m, m),
             output(order[child][i] * n + lo, m));
}

// Scatter: elements [lo, hi) of block u of t.root's p*n input go to rank u's output.
void tree_scatter(ScheduleBuilder& b, const Tree& t, std::int64_t n, std::int64_t lo,
                  std::int64_t hi) {
  const std::int64_t m = hi - lo;
  if (m == 0) return;
  const int p = static_cast<int>(t.parent.size());
  std::vector<std::vector<int>> order(p);
  for (int v = 0; v < p; ++v) order[v] = t.preorder(v);
  std::vector<Region> stage(p);  // what each non-root rank receives
  for (int v = 0; v < p; ++v)
    if (v != t.root)
      stage[v] = t.children[v].empty()
                     ? output(lo, m)
                     : b.allocate_scratch(v, static_cast<std::int64_t>(order[v].size()) * m);

  for (int v : t.preorder(t.root)) {
    if (v == t.root) {
      b.copy(v, input(v * n + lo, m), output(lo, m));
    } else if (!t.children[v].empty()) {
      b.copy(v, sub(stage[v], 0, m), output(lo, m));
    }
    for (auto c = t.children[v].rbegin(); c != t.children[v].rend(); ++c) {
      const std::int64_t size = static_cast<std::int64_t>(order[*c].size()) * m;
      Region src;
      if (v != t.root) {
        const auto pos = std::find(order[v].begin(), order[v].end(), *c) - order[v].begin();
        src = sub(stage[v], pos * m, size);
      } else if (m == n && consecutive(order[*c])) {
        src = input(order[*c][0] * n, size);
      } else {
        src = b.allocate_scratch(v, size);
        for (std::size_t i = 0; i < order[*c].size(); ++i)
          b.copy(v, input(order[*c][i] * n + lo, m), sub(src, static_cast<std::int64_t>(i) * m, m));
      }
      b.transfer(v, src, *c, stage[*c]);
    }
  }
}

}  // namespace

int binary_tree_parent(int p, int r) { return btree_parent(p, r); }

void tree_all_reduce_range(ScheduleBuilder& b, const std::vector<int>& parent, std::int64_t lo,
                           std::int64_t hi) {
  const Tree t = Tree::from_parents(parent);
  tree_reduce(b, t, lo, hi, /*inner_have_output=*/true);
  tree_broadcast(b, t, lo, hi, /*from_input=*/false);
}

Schedule tree_schedule(const CollectiveSpec& spec, const AlgorithmOptions& options,
                       bool double_binary) {
  ScheduleBuilder b(spec, double_binary ? "tree" : "binomial", options);
  const int p = spec.ranks;
  const std::int64_t n = spec.count;

  // (tree, lo, hi) triples: which part of the data (of the buffer, or of each rank's block for
  // gather/scatter) runs on which tree.
  struct Part {
    Tree tree;
    std::int64_t lo, hi;
  };
  std::vector<Part> parts;
  const bool rooted = spec.collective != Collective::AllReduce;
  if (double_binary) {
    const std::int64_t half = (n + 1) / 2;
    for (int which = 0; which < 2; ++which) {
      Tree t = binary_tree(p, which);
      if (rooted) t = reroot(std::move(t), spec.root);
      parts.push_back({std::move(t), which == 0 ? 0 : half, which == 0 ? half : n});
    }
  } else {
    parts.push_back({binomial_tree(p, rooted ? spec.root : 0), 0, n});
  }

  for (const Part& part : parts) {
    switch (spec.collective) {
      case Collective::AllReduce:
        tree_reduce(b, part.tree, part.lo, part.hi, /*inner_have_output=*/true);
        tree_broadcast(b, part.tree, part.lo, part.hi, /*from_input=*/false);
        break;
      case Collective::Reduce:
        tree_reduce(b, part.tree, part.lo, part.hi, /*inner_have_output=*/false);
        break;
      case Collective::Broadcast:
        tree_broadcast(b, part.tree, part.lo, part.hi, /*from_input=*/true);
        break;
      case Collective::Gather:
        tree_gather(b, part.tree, n, part.lo, part.hi);
        break;
      case Collective::Scatter:
        tree_scatter(b, part.tree, n, part.lo, part.hi);
        break;
      default:
        break;
    }
  }
  return std::move(b).finish();
}

}  // namespace spora::parallel::detail
