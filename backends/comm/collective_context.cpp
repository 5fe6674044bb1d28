#include "backends/comm/collective_context.h"

#include <cstddef>
#include <utility>

namespace spora::comm {

namespace {

thread_local CollectiveContext t_context;

}  // namespace

void set_collective_context(Communicator* comm, std::vector<int64_t> mesh) {
  t_context.comm = comm;
  t_context.mesh = std::move(mesh);
  t_context.calls = 0;
}

Communicator* collective_communicator() { return t_context.comm; }

CollectiveContext collective_context() { return t_context; }
void restore_collective_context(CollectiveContext c) { t_context = std::move(c); }
int64_t next_collective_call() { return t_context.calls++; }

std::vector<int64_t> mesh_coords(const std::vector<int64_t>& mesh, int64_t rank) {
  std::vector<int64_t> c(mesh.size());
  for (std::size_t i = mesh.size(); i-- > 0;) {
    c[i] = rank % mesh[i];
    rank /= mesh[i];
  }
  return c;
}

int64_t mesh_rank(const std::vector<int64_t>& mesh, const std::vector<int64_t>& coords) {
  int64_t r = 0;
  for (std::size_t i = 0; i < mesh.size(); ++i) r = r * mesh[i] + coords[i];
  return r;
}

std::vector<int64_t> mesh_group(const std::vector<int64_t>& mesh, int64_t rank,
                                const std::vector<int64_t>& axes) {
  const std::vector<int64_t> mine = mesh_coords(mesh, rank);
  std::vector<int64_t> group;
  int64_t total = 1;
  for (int64_t n : mesh) total *= n;
  for (int64_t r = 0; r < total; ++r) {
    const std::vector<int64_t> c = mesh_coords(mesh, r);
    bool same = true;
    for (std::size_t i = 0; i < mesh.size() && same; ++i) {
      bool in_axes = false;
      for (int64_t a : axes) in_axes |= a == static_cast<int64_t>(i);
      same = in_axes || c[i] == mine[i];
    }
    if (same) group.push_back(r);
  }
  return group;
}

}  // namespace spora::comm
