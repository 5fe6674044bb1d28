// Collective primitives: what the SPMD partitioner (parallel/partition/) inserts between a
// producer's layout and the layout its consumer needs. Each names the device mesh it was
// partitioned for (`mesh`, its shape) and the mesh axes it runs over, so the group of ranks is
// known from the rank alone (backends/comm/collective_context.h has the mesh convention).
//
//   all_reduce(x, axes=[a...], mesh=[...])       sum over the group of axes a...: partial
//                                                  sums -> the replicated total; same shape
//   all_gather(x, dim=d, axis=a, mesh=[...])     concatenate the group's pieces along d in
//                                                  group order: shape[d] * mesh[a]
//   reduce_scatter(x, dim=d, axis=a, mesh=[...]) sum over the group, keep piece i (this rank's
//                                                  coordinate on a) along d: shape[d] / mesh[a]
//   all_to_all(x, split_dim=s, concat_dim=c, axis=a, mesh=[...])
//                                                  split along s into mesh[a] pieces, piece j
//                                                  to group member j, concatenate what arrives
//                                                  along c: shape[s] / n, shape[c] * n
//   shard_slice(x, dim=d, axis=a, mesh=[...])    local: piece i of x along d (no messages)
// A dimension that must split evenly and does not is a user error naming the shape.
//
// Kernels: direct exchange over the thread's communicator (set_collective_context): every
// rank sends each group member the piece it needs and sums what it receives in group order,
// so all members of a group compute bit-identical results (a replicated value stays
// replicated exactly, which the equivalence tests rely on). The exchange is O(group) messages
// per rank: meant for correctness and the small meshes of one machine, not for bandwidth
// (parallel/collectives has the bandwidth-optimal schedules). f32/f64 tensors take those
// schedules instead (ring_eligible below). Staging buffers come from the tensor allocator and
// the communicator's block cache, never a fresh heap block per call (see staging()).
//
// Derivative convention. The partitioned program computes one replicated scalar objective;
// the cotangent of a value is held like this: a replicated value's cotangent is replicated
// (every rank holds the whole, identical cotangent), a sharded value's cotangent is sharded
// the same way, and a partial sum's cotangent is replicated (each rank's summand affects the
// total with derivative one). Under it the rules are transposes without extra communication
// where none is needed:
//   all_reduce      vjp: dout itself (identity)           jvp: all_reduce(t)
//   all_gather      vjp: shard_slice(dout) (local)        jvp: all_gather(t)
//   reduce_scatter  vjp: all_gather(dout)                 jvp: reduce_scatter(t)
//   shard_slice     vjp: all_gather(dout)                 jvp: shard_slice(t)
//   all_to_all      vjp: all_to_all(dout) with split and concat exchanged
// (JAX's convention differs: there the cotangent of a replicated value is each device's share,
// which makes psum its own transpose and all_gather the transpose of reduce_scatter.)
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <cstring>

#include "backends/comm/collective_context.h"
#include "backends/comm/communicator.h"
#include "backends/comm/executor.h"
#include "backends/comm/group.h"
#include "ops/ad_util.h"
#include "ops/facet_util.h"
#include "ops/families.h"
#include "ops/kernel_util.h"
#include "parallel/collectives/algorithms.h"
#include "parallel/sharding/sharding.h"
#include "semantics/cost.h"
#include "semantics/passes/fusion_kind.h"

namespace spora::ops {

namespace {

using AK = ParamSpec::AttrKind;

using comm::mesh_coords;
using comm::mesh_group;

// The communicator of a kernel, checked against the mesh it was partitioned for.
comm::Communicator& context_for(const std::string& prim, const std::vector<int64_t>& mesh) {
  comm::Communicator* c = comm::collective_communicator();
  if (!c) user_error(prim + " needs a multi-rank run: spora run --strategy s.json --ranks N");
  const int64_t devices = numel_of(mesh);
  if (c->size() != devices)
    user_error(fmt::format("{} was partitioned for a mesh of {} devices [{}] but runs on {} ranks",
                           prim, devices, fmt::join(mesh, ", "), c->size()));
  return *c;
}

const std::vector<int64_t>& mesh_attr(const Attrs& attrs, const std::string& prim) {
  const auto& mesh = attrs.get_ints("mesh");
  if (mesh.empty()) user_error(prim + ": mesh must not be empty");
  for (int64_t n : mesh)
    if (n < 1) user_error(fmt::format("{}: mesh axes must be positive, got {}", prim, n));
  return mesh;
}

int64_t axis_attr(const Attrs& attrs, const std::string& name, const std::vector<int64_t>& mesh,
                  const std::string& prim) {
  const int64_t a = attrs.get_int(name);
  if (a < 0 || a >= static_cast<int64_t>(mesh.size()))
    user_error(fmt::format("{}: mesh axis {} is out of range for a mesh of rank {}", prim, a,
                           mesh.size()));
  return a;
}

// A tensor seen as [outer, d, inner] around dimension `dim`.
struct Around {
  int64_t outer = 1, d = 1, inner = 1;
};
Around around(const Shape& s, int64_t dim) {
  Around a;
  for (int64_t i = 0; i < dim; ++i) a.outer *= s[i];
  a.d = s[dim];
  for (size_t i = dim + 1; i < s.size(); ++i) a.inner *= s[i];
  return a;
}

// Staging buffers come from the tensor allocator (backends/runtime's caching allocator under
// `spora run`): a std::vector per call zero-fills its bytes, and one of a few hundred KiB is a
// fresh mmap whose every 4 KiB page faults when touched (W4's partitioned step spent 10 of its
// 58 ms so).
Tensor staging(size_t bytes) {
  return Tensor::empty(DType::i32, {static_cast<int64_t>((bytes + 3) / 4)});
}

// Copies piece j of n of x along dim into dst (contiguous).
void copy_piece(const Tensor& x, int64_t dim, int64_t j, int64_t n, char* dst) {
  const Around a = around(x.shape(), dim);
  const int64_t dl = a.d / n;
  const size_t es = dtype_size(x.dtype());
  const size_t row = static_cast<size_t>(dl * a.inner) * es;
  const char* src = static_cast<const char*>(x.raw());
  for (int64_t o = 0; o < a.outer; ++o)
    std::memcpy(dst + o * row, src + (o * a.d + j * dl) * a.inner * es, row);
}

// Piece j of n of x along dim (contiguous bytes).
std::vector<char> piece(const Tensor& x, int64_t dim, int64_t j, int64_t n) {
  std::vector<char> out(x.nbytes() / static_cast<size_t>(n));
  copy_piece(x, dim, j, n, out.data());
  return out;
}

// Writes `bytes` (a piece of `out` along dim: slot j of n, contiguous) into out.
void place(Tensor& out, int64_t dim, int64_t j, int64_t n, const char* bytes) {
  const Around a = around(out.shape(), dim);
  const int64_t dl = a.d / n;
  const size_t es = dtype_size(out.dtype());
  const size_t row = static_cast<size_t>(dl * a.inner) * es;
  char* dst = static_cast<char*>(out.raw());
  for (int64_t o = 0; o < a.outer; ++o)
    std::memcpy(dst + (o * a.d + j * dl) * a.inner * es, bytes + o * row, row);
}
void place(Tensor& out, int64_t dim, int64_t j, int64_t n, const std::vector<char>& bytes) {
  place(out, dim, j, n, bytes.data());
}

std::vector<char> bytes_of(const Tensor& x) {
  std::vector<char> b(x.nbytes());
  if (!b.empty()) std::memcpy(b.data(), x.raw(), b.size());
  return b;
}

// Sends send[j] (send_bytes[j] bytes) to group[j] and receives recv[j] (recv_bytes[j]) from
// group[j] for every member but this rank, whose own piece the caller copies. A device-memory
// communicator (NCCL) takes only its own buffers: the pieces are staged through one block each
// way (upload, messages, download). Every message is posted inside one group_start /
// group_end, which NCCL needs for a send and a receive between the same two ranks; for host
// communicators the pair does nothing.
void exchange(comm::Communicator& c, const std::vector<int64_t>& group, size_t me,
              const std::vector<const char*>& send, const std::vector<size_t>& send_bytes,
              const std::vector<char*>& recv, const std::vector<size_t>& recv_bytes) {
  const int tag = 100 + static_cast<int>(comm::next_collective_call() % 30000);
  const bool device = c.memory_space() == comm::MemorySpace::Device;
  std::vector<const char*> sp = send;
  std::vector<char*> rp = recv;
  comm::Buffer dsend, drecv;
  if (device) {
    size_t ns = 0, nr = 0;
    for (size_t j = 0; j < group.size(); ++j)
      if (j != me) ns += send_bytes[j], nr += recv_bytes[j];
    dsend = comm::Buffer(c, ns);
    drecv = comm::Buffer(c, nr);
    for (size_t j = 0, os = 0, orr = 0; j < group.size(); ++j) {
      if (j == me) continue;
      sp[j] = static_cast<const char*>(dsend.data()) + os;
      rp[j] = static_cast<char*>(drecv.data()) + orr;
      c.upload(const_cast<char*>(sp[j]), send[j], send_bytes[j]);
      os += send_bytes[j];
      orr += recv_bytes[j];
    }
  }
  std::vector<comm::Request> reqs;
  c.group_start();
  for (size_t j = 0; j < group.size(); ++j) {
    if (j == me) continue;
    const int peer = static_cast<int>(group[j]);
    reqs.push_back(c.irecv(rp[j], recv_bytes[j], peer, tag));
    reqs.push_back(c.isend(sp[j], send_bytes[j], peer, tag));
  }
  c.group_end();
  size_t done = 0;
  std::vector<bool> finished(reqs.size(), false);
  while (done < reqs.size()) {
    std::vector<comm::Request> pending;
    std::vector<size_t> index;
    for (size_t i = 0; i < reqs.size(); ++i)
      if (!finished[i]) {
        pending.push_back(reqs[i]);
        index.push_back(i);
      }
    for (size_t k : c.wait_some(pending)) {
      finished[index[k]] = true;
      ++done;
    }
  }
  if (device)
    for (size_t j = 0; j < group.size(); ++j)
      if (j != me) c.download(recv[j], rp[j], recv_bytes[j]);
}

// The same with vectors: recv[j] sized by the caller, recv[me] = send[me].
void exchange(comm::Communicator& c, const std::vector<int64_t>& group, size_t me,
              const std::vector<std::vector<char>>& send, std::vector<std::vector<char>>& recv) {
  std::vector<const char*> sp;
  std::vector<char*> rp;
  std::vector<size_t> sb, rb;
  for (size_t j = 0; j < group.size(); ++j) {
    sp.push_back(send[j].data());
    sb.push_back(send[j].size());
    rp.push_back(recv[j].data());
    rb.push_back(recv[j].size());
  }
  exchange(c, group, me, sp, sb, rp, rb);
  recv[me] = send[me];
}

// dst += src, elementwise, in x's dtype.
void accumulate(std::vector<char>& dst, const std::vector<char>& src, DType dtype,
                const std::string& prim) {
  dispatch(dtype, prim, [&](auto tag) {
    using T = typename decltype(tag)::type;
    if constexpr (std::is_same_v<T, uint8_t>) {
      user_error(prim + " cannot sum bool tensors");
    } else {
      T* d = reinterpret_cast<T*>(dst.data());
      const T* s = reinterpret_cast<const T*>(src.data());
      const size_t n = dst.size() / sizeof(T);
      for (size_t i = 0; i < n; ++i) d[i] += s[i];
    }
  });
}

// Sum of the pieces in group order (every member adds in the same order: identical results).
std::vector<char> sum_in_order(const std::vector<std::vector<char>>& parts, DType dtype,
                               const std::string& prim) {
  std::vector<char> total = parts[0];
  for (size_t j = 1; j < parts.size(); ++j) accumulate(total, parts[j], dtype, prim);
  return total;
}

struct GroupInfo {
  comm::Communicator* comm;
  std::vector<int64_t> group;
  size_t me;
};
GroupInfo group_of(const std::string& prim, const std::vector<int64_t>& mesh,
                   const std::vector<int64_t>& axes) {
  comm::Communicator& c = context_for(prim, mesh);
  GroupInfo g{&c, mesh_group(mesh, c.rank(), axes), 0};
  for (size_t j = 0; j < g.group.size(); ++j)
    if (g.group[j] == c.rank()) g.me = j;
  return g;
}

// Float tensors with at least one element per rank run a ring schedule of parallel/collectives
// over the group (a view of the world communicator, backends/comm/group.h): 2 (p-1) or p-1
// steps of 1/p of the data each way, the bandwidth-optimal algorithms; every rank ends with the
// same bits (each block is reduced once, then passed round). Other tensors take the direct
// exchange above.
bool ring_eligible(const Tensor& x, int64_t p) {
  return p > 1 && x.numel() >= p && (x.dtype() == DType::f32 || x.dtype() == DType::f64);
}

// `in` and `out` are host memory; a device-memory communicator (NCCL) runs the schedule on
// its own copies of them.
void run_ring(parallel::Collective c, const GroupInfo& g, DType dtype, int64_t count,
              const void* in, void* out) {
  comm::GroupView view(*g.comm, g.group);
  const int n = static_cast<int>(g.group.size());
  const parallel::Schedule s =
      parallel::build_schedule(parallel::Algorithm::Ring, {c, parallel::ReduceOp::Sum, n, count});
  const comm::DType t = dtype == DType::f32 ? comm::DType::F32 : comm::DType::F64;
  if (g.comm->memory_space() == comm::MemorySpace::Host) {
    comm::execute(s, view, t, in, out);
    return;
  }
  const size_t es = comm::dtype_size(t), unit = static_cast<size_t>(count) * es;
  const size_t in_bytes = c == parallel::Collective::ReduceScatter ? unit * n : unit;
  const size_t out_bytes = c == parallel::Collective::AllGather ? unit * n : unit;
  comm::Buffer din(*g.comm, in_bytes), dout(*g.comm, out_bytes);
  g.comm->upload(din.data(), in, in_bytes);
  comm::execute(s, view, t, din.data(), dout.data());
  g.comm->download(out, dout.data(), out_bytes);
}

Tensor from_bytes(DType dtype, const Shape& shape, const std::vector<char>& bytes) {
  Tensor t = Tensor::empty(dtype, shape);
  if (!bytes.empty()) std::memcpy(t.raw(), bytes.data(), bytes.size());
  return t;
}

// ---- shape rules ----------------------------------------------------------------------------

int64_t dim_attr(const Attrs& attrs, const std::string& name, const Type& t,
                 const std::string& prim) {
  const int64_t d = attrs.get_int(name);
  if (d < 0 || d >= t.rank())
    user_error(fmt::format("{}: {} {} is out of range for {}", prim, name, d, t.str()));
  return d;
}

void check_divides(const Type& t, int64_t dim, int64_t n, const std::string& prim) {
  if (t.shape[dim] % n != 0)
    user_error(fmt::format("{}: dimension {} of {} does not split into {} equal pieces", prim, dim,
                           t.str(), n));
}

Primitive row(std::string name, std::string doc, std::vector<ParamSpec> params) {
  Primitive p;
  p.name = std::move(name);
  p.family = "collective";
  p.doc = std::move(doc);
  p.params = std::move(params);
  p.facets[passes::kFusionFacet] = passes::FusionKind::Opaque;
  // The partitioner emits collectives for one mesh into per-rank programs; a program that
  // already has them is not partitioned again.
  p.facets[parallel::kShardingFacet] = parallel::replicated_only_rule(
      "a collective belongs to a per-rank program that is already partitioned");
  return p;
}

Attrs with(const Attrs& base, std::initializer_list<std::pair<const char*, sem::Attr>> items) {
  Attrs a;
  for (const auto& [name, value] : items) a.set(name, value);
  a.set("mesh", base.get_ints("mesh"));
  return a;
}

void add_all_reduce(sem::Registry& r) {
  Primitive p = row("all_reduce",
                    "all_reduce(x, axes, mesh): sum over the ranks of the mesh axes (partial -> "
                    "replicated)",
                    {input("x"), attr("axes", AK::Ints), attr("mesh", AK::Ints)});
  p.infer = [](const std::vector<TypeP>& in, const Attrs& attrs) -> TypeP {
    expect_inputs(in, 1, 1, "all_reduce");
    tensor_input(in, 0, "all_reduce");
    const auto& mesh = mesh_attr(attrs, "all_reduce");
    for (int64_t a : attrs.get_ints("axes"))
      if (a < 0 || a >= static_cast<int64_t>(mesh.size()))
        user_error(fmt::format("all_reduce: mesh axis {} is out of range for a mesh of rank {}", a,
                               mesh.size()));
    return in[0];
  };
  p.eval = [](const std::vector<Value>& in, const Attrs& attrs) -> Value {
    const Tensor& x = in.at(0).tensor;
    GroupInfo g = group_of("all_reduce", attrs.get_ints("mesh"), attrs.get_ints("axes"));
    if (ring_eligible(x, static_cast<int64_t>(g.group.size()))) {
      Tensor out = Tensor::empty(x.dtype(), x.shape());
      run_ring(parallel::Collective::AllReduce, g, x.dtype(), x.numel(), x.raw(), out.raw());
      return out;
    }
    std::vector<std::vector<char>> send(g.group.size(), bytes_of(x)), recv(g.group.size());
    for (auto& b : recv) b.resize(x.nbytes());
    exchange(*g.comm, g.group, g.me, send, recv);
    return from_bytes(x.dtype(), x.shape(), sum_in_order(recv, x.dtype(), "all_reduce"));
  };
  ad::set_linear_rules(
      p, [](ad::Emitter&, const ad::Node&, ad::Node*, ad::Node* dout) { return dout; });
  r.add(std::move(p));
}

void add_all_gather(sem::Registry& r) {
  Primitive p =
      row("all_gather",
          "all_gather(x, dim, axis, mesh): concatenate the pieces of the ranks along "
          "mesh axis `axis` on dimension dim",
          {input("x"), attr("dim", AK::Int), attr("axis", AK::Int), attr("mesh", AK::Ints)});
  p.infer = [](const std::vector<TypeP>& in, const Attrs& attrs) -> TypeP {
    expect_inputs(in, 1, 1, "all_gather");
    const Type& t = tensor_input(in, 0, "all_gather");
    const auto& mesh = mesh_attr(attrs, "all_gather");
    const int64_t n = mesh[axis_attr(attrs, "axis", mesh, "all_gather")];
    const int64_t d = dim_attr(attrs, "dim", t, "all_gather");
    Shape s = t.shape;
    s[d] *= n;
    return Type::tensor(t.dtype, s);
  };
  p.eval = [](const std::vector<Value>& in, const Attrs& attrs) -> Value {
    const Tensor& x = in.at(0).tensor;
    const int64_t dim = attrs.get_int("dim");
    GroupInfo g = group_of("all_gather", attrs.get_ints("mesh"), {attrs.get_int("axis")});
    const int64_t n = static_cast<int64_t>(g.group.size());
    Shape s = x.shape();
    s[dim] *= n;
    Tensor out = Tensor::empty(x.dtype(), s);
    if (ring_eligible(x, n)) {
      // Gathered block j is rank j's piece; along dim 0 the blocks are the result itself.
      Tensor all = dim == 0 ? out : staging(static_cast<size_t>(n) * x.nbytes());
      run_ring(parallel::Collective::AllGather, g, x.dtype(), x.numel(), x.raw(), all.raw());
      if (dim != 0)
        for (int64_t j = 0; j < n; ++j)
          place(out, dim, j, n, static_cast<const char*>(all.raw()) + j * x.nbytes());
      return out;
    }
    std::vector<std::vector<char>> recv(g.group.size());
    std::vector<std::vector<char>> send(g.group.size(), bytes_of(x));
    for (auto& b : recv) b.resize(x.nbytes());
    exchange(*g.comm, g.group, g.me, send, recv);
    for (int64_t j = 0; j < n; ++j) place(out, dim, j, n, recv[j]);
    return out;
  };
  ad::set_linear_rules(p, [](ad::Emitter& e, const ad::Node& node, ad::Node*, ad::Node* dout) {
    return e.op("shard_slice", {dout},
                with(node.attrs,
                     {{"dim", node.attrs.get_int("dim")}, {"axis", node.attrs.get_int("axis")}}));
  });
  r.add(std::move(p));
}

// reduce_scatter and shard_slice share the shape rule: dimension dim divided by mesh[axis].
TypeP split_infer(const std::string& prim, const std::vector<TypeP>& in, const Attrs& attrs) {
  expect_inputs(in, 1, 1, prim);
  const Type& t = tensor_input(in, 0, prim);
  const auto& mesh = mesh_attr(attrs, prim);
  const int64_t n = mesh[axis_attr(attrs, "axis", mesh, prim)];
  const int64_t d = dim_attr(attrs, "dim", t, prim);
  check_divides(t, d, n, prim);
  Shape s = t.shape;
  s[d] /= n;
  return Type::tensor(t.dtype, s);
}

ad::Node* gather_back(ad::Emitter& e, const ad::Node& node, ad::Node*, ad::Node* dout) {
  return e.op(
      "all_gather", {dout},
      with(node.attrs, {{"dim", node.attrs.get_int("dim")}, {"axis", node.attrs.get_int("axis")}}));
}

void add_reduce_scatter(sem::Registry& r) {
  Primitive p =
      row("reduce_scatter",
          "reduce_scatter(x, dim, axis, mesh): sum over the ranks of mesh axis `axis`, "
          "each keeps its piece of dimension dim",
          {input("x"), attr("dim", AK::Int), attr("axis", AK::Int), attr("mesh", AK::Ints)});
  p.infer = [](const std::vector<TypeP>& in, const Attrs& attrs) {
    return split_infer("reduce_scatter", in, attrs);
  };
  p.eval = [](const std::vector<Value>& in, const Attrs& attrs) -> Value {
    const Tensor& x = in.at(0).tensor;
    const int64_t dim = attrs.get_int("dim");
    GroupInfo g = group_of("reduce_scatter", attrs.get_ints("mesh"), {attrs.get_int("axis")});
    const int64_t n = static_cast<int64_t>(g.group.size());
    if (x.shape()[dim] % n != 0)
      user_error(fmt::format("reduce_scatter: dimension {} of {} does not split into {} pieces",
                             dim, x.type()->str(), n));
    Shape s = x.shape();
    s[dim] /= n;
    if (ring_eligible(x, n)) {
      // Piece j of dim as block j, the schedule's input; along dim 0 that is x itself.
      Tensor blocks = dim == 0 ? x : staging(x.nbytes());
      if (dim != 0)
        for (int64_t j = 0; j < n; ++j)
          copy_piece(x, dim, j, n, static_cast<char*>(blocks.raw()) + j * (x.nbytes() / n));
      Tensor out = Tensor::empty(x.dtype(), s);
      run_ring(parallel::Collective::ReduceScatter, g, x.dtype(), x.numel() / n, blocks.raw(),
               out.raw());
      return out;
    }
    std::vector<std::vector<char>> send, recv(g.group.size());
    for (int64_t j = 0; j < n; ++j) send.push_back(piece(x, dim, j, n));
    for (auto& b : recv) b.resize(send[0].size());
    exchange(*g.comm, g.group, g.me, send, recv);
    return from_bytes(x.dtype(), s, sum_in_order(recv, x.dtype(), "reduce_scatter"));
  };
  ad::set_linear_rules(p, gather_back);
  r.add(std::move(p));
}

void add_shard_slice(sem::Registry& r) {
  Primitive p =
      row("shard_slice",
          "shard_slice(x, dim, axis, mesh): this rank's piece of dimension dim "
          "(split over mesh axis `axis`), no communication",
          {input("x"), attr("dim", AK::Int), attr("axis", AK::Int), attr("mesh", AK::Ints)});
  p.infer = [](const std::vector<TypeP>& in, const Attrs& attrs) {
    return split_infer("shard_slice", in, attrs);
  };
  p.eval = [](const std::vector<Value>& in, const Attrs& attrs) -> Value {
    const Tensor& x = in.at(0).tensor;
    const int64_t dim = attrs.get_int("dim");
    const auto& mesh = attrs.get_ints("mesh");
    comm::Communicator& c = context_for("shard_slice", mesh);
    const int64_t axis = attrs.get_int("axis");
    const int64_t n = mesh[axis];
    const int64_t j = mesh_coords(mesh, c.rank())[axis];
    Shape s = x.shape();
    s[dim] /= n;
    Tensor out = Tensor::empty(x.dtype(), s);
    copy_piece(x, dim, j, n, static_cast<char*>(out.raw()));
    return out;
  };
  ad::set_linear_rules(p, gather_back);
  r.add(std::move(p));
}

void add_all_to_all(sem::Registry& r) {
  Primitive p = row("all_to_all",
                    "all_to_all(x, split_dim, concat_dim, axis, mesh): split split_dim over the "
                    "ranks of mesh axis `axis`, concatenate what arrives along concat_dim",
                    {input("x"), attr("split_dim", AK::Int), attr("concat_dim", AK::Int),
                     attr("axis", AK::Int), attr("mesh", AK::Ints)});
  p.infer = [](const std::vector<TypeP>& in, const Attrs& attrs) -> TypeP {
    expect_inputs(in, 1, 1, "all_to_all");
    const Type& t = tensor_input(in, 0, "all_to_all");
    const auto& mesh = mesh_attr(attrs, "all_to_all");
    const int64_t n = mesh[axis_attr(attrs, "axis", mesh, "all_to_all")];
    const int64_t sd = dim_attr(attrs, "split_dim", t, "all_to_all");
    const int64_t cd = dim_attr(attrs, "concat_dim", t, "all_to_all");
    check_divides(t, sd, n, "all_to_all");
    Shape s = t.shape;
    s[sd] /= n;
    s[cd] *= n;
    return Type::tensor(t.dtype, s);
  };
  p.eval = [](const std::vector<Value>& in, const Attrs& attrs) -> Value {
    const Tensor& x = in.at(0).tensor;
    const int64_t sd = attrs.get_int("split_dim"), cd = attrs.get_int("concat_dim");
    GroupInfo g = group_of("all_to_all", attrs.get_ints("mesh"), {attrs.get_int("axis")});
    const int64_t n = static_cast<int64_t>(g.group.size());
    // Piece j goes to member j: pieces and what arrives are staged contiguously.
    const size_t bytes = x.nbytes() / static_cast<size_t>(n);
    Tensor send = staging(x.nbytes()), recv = staging(x.nbytes());
    char* sbase = static_cast<char*>(send.raw());
    char* rbase = static_cast<char*>(recv.raw());
    std::vector<const char*> sp;
    std::vector<char*> rp;
    for (int64_t j = 0; j < n; ++j) {
      copy_piece(x, sd, j, n, sbase + j * bytes);
      sp.push_back(sbase + j * bytes);
      rp.push_back(rbase + j * bytes);
    }
    const std::vector<size_t> sizes(static_cast<size_t>(n), bytes);
    exchange(*g.comm, g.group, g.me, sp, sizes, rp, sizes);
    std::memcpy(rp[g.me], sp[g.me], bytes);
    Shape piece_shape = x.shape();
    piece_shape[sd] /= n;
    Shape s = piece_shape;
    s[cd] *= n;
    Tensor out = Tensor::empty(x.dtype(), s);
    for (int64_t j = 0; j < n; ++j) place(out, cd, j, n, rp[static_cast<size_t>(j)]);
    return out;
  };
  ad::set_linear_rules(p, [](ad::Emitter& e, const ad::Node& node, ad::Node*, ad::Node* dout) {
    return e.op("all_to_all", {dout},
                with(node.attrs, {{"split_dim", node.attrs.get_int("concat_dim")},
                                  {"concat_dim", node.attrs.get_int("split_dim")},
                                  {"axis", node.attrs.get_int("axis")}}));
  });
  r.add(std::move(p));
}

// ---- cost and sharding rules (semantics/cost.h, parallel/sharding/sharding.h) -------------

namespace facets {

using namespace facet_util;

// Collectives (ops/collective.cpp): the local memory traffic (the input read, the output
// written) and one addition per received element for the reductions, in the class "comm".
// The network time is not here: it depends on the cluster's links and the algorithm, which
// the simulator models from the collective schedule (parallel/collectives).
void collective_costs(sem::Registry& r) {
  auto comm_cost = [](bool reduces) -> CostRule {
    return [reduces](const CostTypes& in, const TypeP& out, const Attrs& attrs) {
      int64_t group = 1;
      if (attrs.has("axes")) {
        for (int64_t a : attrs.get_ints("axes")) group *= attrs.get_ints("mesh").at(a);
      } else if (attrs.has("axis")) {
        group = attrs.get_ints("mesh").at(attrs.get_int("axis"));
      }
      const double flops = reduces ? static_cast<double>(group - 1) * elements(out) : 0;
      return OpCost{flops, input_bytes(in) + type_bytes(out), "comm"};
    };
  };
  set_cost(r, "all_reduce", comm_cost(true));
  set_cost(r, "reduce_scatter", comm_cost(true));
  set_cost(r, "all_gather", comm_cost(false));
  set_cost(r, "all_to_all", comm_cost(false));
  set_cost(r, "shard_slice", sem::copy_cost());
}

}  // namespace facets

}  // namespace

void register_collective(sem::Registry& r) {
  add_all_reduce(r);
  add_all_gather(r);
  add_reduce_scatter(r);
  add_shard_slice(r);
  add_all_to_all(r);
  // Cost and sharding rules of the rows above.
  facets::collective_costs(r);
}

}  // namespace spora::ops
