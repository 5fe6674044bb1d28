// Built instead of nccl.cpp when CMake finds no CUDA/NCCL: the functions exist and say so.
#include "backends/comm/nccl_comm.h"

namespace spora::comm {

bool nccl_available() { return false; }

int cuda_device_count(std::string* why) {
  if (why) *why = "Spora was built without CUDA/NCCL";
  return 0;
}

void run_nccl_threads(int, const std::function<void(Communicator&)>&) {
  throw CommError("nccl: Spora was built without CUDA/NCCL");
}

std::string nccl_unique_id() { throw CommError("nccl: Spora was built without CUDA/NCCL"); }

std::unique_ptr<Communicator> make_nccl_communicator(const std::string&, int, int, int) {
  throw CommError("nccl: Spora was built without CUDA/NCCL");
}

}  // namespace spora::comm
