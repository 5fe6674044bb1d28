// Every primitive with a reference kernel has a CPU kernel ("kernel.cpu" facet), except the
// rows listed below, which stay on their reference kernel on purpose.
#include <set>

#include "tests/cpu/cpu_test_util.h"

namespace spora::cpu::testing {
namespace {

// Rows that are not tensor computations: effects (print, assert, grad_check), the tuple and
// record plumbing of the front end, and the tape lists of reverse-mode loops. Their reference
// kernels are already what a CPU kernel would be.
// (list_add_at and list_add add tensors through the backend's own add kernel.)
const std::set<std::string> kReferenceOnly = {
    "print", "assert", "grad_check", "make_tuple", "tuple_get", "make_record", "record_get",
    "list_empty", "list_push", "list_get", "list_len", "list_add_at", "list_add",
    "list_get_or_zeros",
    // stacks the lists and runs the backend's matmul kernel (kernel_for) on them
    "list_tmatmul_sum"};

TEST(CpuCoverage, EveryPrimitiveWithAReferenceKernelHasACpuKernel) {
  prim("add");  // registers everything
  int with_kernel = 0;
  for (const sem::Primitive* p : sem::Registry::instance().all()) {
    if (!p->eval) continue;                   // control flow
    if (p->family == "collective") continue;  // communication: the kernel is the communicator
    bool has = p->facet<sem::RefKernel>(sem::kCpuKernelFacet) != nullptr;
    if (kReferenceOnly.count(p->name)) {
      EXPECT_FALSE(has) << p->name << " is in the allow-list but has a cpu kernel";
      continue;
    }
    EXPECT_TRUE(has) << p->name << " has no cpu kernel";
    with_kernel += has;
  }
  EXPECT_GE(with_kernel, 85);
}

}  // namespace
}  // namespace spora::cpu::testing
