// libFuzzer target over cluster specs (sim/cluster_spec.h: the YAML of examples/clusters/):
// any input gives a spec or a ClusterSpecError naming the file, never a crash, a hang or a
// sanitizer report.
#include "sim/cluster_spec.h"
#include "tests/fuzz/fuzz_util.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace spora::sim;
  try {
    const ClusterSpec c = parse_cluster_spec(spora::fuzz::text(data, size), "fuzz.yaml");
    (void)c.summary();
  } catch (const ClusterSpecError&) {
  }
  return 0;
}
