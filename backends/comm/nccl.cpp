#include <cuda_runtime.h>
#include <nccl.h>

#include <cstring>
#include <exception>
#include <mutex>
#include <string>
#include <thread>

#include "backends/comm/nccl_comm.h"
#include "backends/comm/nccl_kernels.h"

namespace spora::comm {

namespace {

static_assert(static_cast<int>(DType::F32) == 0 && static_cast<int>(DType::F64) == 1 &&
              static_cast<int>(DType::I32) == 2 && static_cast<int>(DType::I64) == 3);
static_assert(static_cast<int>(ReduceOp::Sum) == 0 && static_cast<int>(ReduceOp::Max) == 1 &&
              static_cast<int>(ReduceOp::Min) == 2 && static_cast<int>(ReduceOp::Prod) == 3);

void check_cuda(cudaError_t e, const char* what) {
  if (e != cudaSuccess)
    throw CommError(std::string("cuda: ") + what + " failed: " + cudaGetErrorName(e) + " (" +
                    cudaGetErrorString(e) + ")");
}

void check_nccl(ncclResult_t r, const char* what) {
  if (r != ncclSuccess && r != ncclInProgress)
    throw CommError(std::string("nccl: ") + what + " failed: " + ncclGetErrorString(r));
}

ncclDataType_t nccl_type(DType t) {
  switch (t) {
    case DType::F32:
      return ncclFloat32;
    case DType::F64:
      return ncclFloat64;
    case DType::I32:
      return ncclInt32;
    case DType::I64:
      return ncclInt64;
  }
  return ncclUint8;
}

ncclRedOp_t nccl_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum:
      return ncclSum;
    case ReduceOp::Max:
      return ncclMax;
    case ReduceOp::Min:
      return ncclMin;
    case ReduceOp::Prod:
      return ncclProd;
  }
  return ncclSum;
}

class NcclCommunicator final : public Communicator {
 public:
  NcclCommunicator(ncclComm_t comm, int device) : comm_(comm), device_(device) {
    check_cuda(cudaSetDevice(device_), "cudaSetDevice");
    check_cuda(cudaStreamCreateWithFlags(&stream_, cudaStreamNonBlocking), "cudaStreamCreate");
    check_nccl(ncclCommUserRank(comm_, &rank_), "ncclCommUserRank");
    check_nccl(ncclCommCount(comm_, &size_), "ncclCommCount");
  }
  ~NcclCommunicator() override {
    cudaStreamSynchronize(stream_);
    cudaStreamDestroy(stream_);
    ncclCommDestroy(comm_);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string_view backend() const override { return "nccl"; }
  MemorySpace memory_space() const override { return MemorySpace::Device; }
  bool stream_ordered() const override { return true; }

  Request isend(const void* data, std::size_t bytes, int peer, int) override {
    check_nccl(ncclSend(data, bytes, ncclUint8, peer, comm_, stream_), "ncclSend");
    return Request{next_id_++};
  }
  Request irecv(void* data, std::size_t bytes, int peer, int) override {
    check_nccl(ncclRecv(data, bytes, ncclUint8, peer, comm_, stream_), "ncclRecv");
    return Request{next_id_++};
  }
  std::vector<std::size_t> wait_some(std::span<const Request> requests) override {
    synchronize();
    std::vector<std::size_t> all(requests.size());
    for (std::size_t i = 0; i < all.size(); ++i) all[i] = i;
    return all;
  }
  void group_start() override { check_nccl(ncclGroupStart(), "ncclGroupStart"); }
  void group_end() override { check_nccl(ncclGroupEnd(), "ncclGroupEnd"); }
  void synchronize() override {
    check_cuda(cudaStreamSynchronize(stream_), "cudaStreamSynchronize");
  }

  void copy(void* dst, const void* src, std::size_t bytes) override {
    if (bytes)
      check_cuda(cudaMemcpyAsync(dst, src, bytes, cudaMemcpyDeviceToDevice, stream_),
                 "cudaMemcpyAsync");
  }
  void reduce(void* dst, const void* src, std::size_t count, DType t, ReduceOp op) override {
    check_cuda(cuda::reduce(dst, src, count, static_cast<int>(t), static_cast<int>(op), stream_),
               "reduce kernel");
  }
  void* allocate(std::size_t bytes) override {
    void* p = nullptr;
    check_cuda(cudaMalloc(&p, std::max<std::size_t>(bytes, 1)), "cudaMalloc");
    return p;
  }
  void deallocate(void* p) override { cudaFree(p); }
  // Copies go on the rank's stream, which does not synchronise with the legacy default stream
  // (cudaStreamNonBlocking): a plain cudaMemcpy from pageable memory may return before its DMA
  // has landed, and a collective queued next on the stream would read the old contents.
  void upload(void* dst, const void* host_src, std::size_t bytes) override {
    if (!bytes) return;
    check_cuda(cudaMemcpyAsync(dst, host_src, bytes, cudaMemcpyHostToDevice, stream_),
               "cudaMemcpyAsync");
    synchronize();  // the host buffer may be gone once this returns
  }
  void download(void* host_dst, const void* src, std::size_t bytes) override {
    if (!bytes) return;
    check_cuda(cudaMemcpyAsync(host_dst, src, bytes, cudaMemcpyDeviceToHost, stream_),
               "cudaMemcpyAsync");
    synchronize();
  }

  void native(const CollectiveCall& c) override {
    const ncclDataType_t t = nccl_type(c.dtype);
    const std::size_t n = static_cast<std::size_t>(c.count), es = dtype_size(c.dtype);
    const char* in = static_cast<const char*>(c.input);
    char* out = static_cast<char*>(c.output);
    switch (c.collective) {
      case Collective::Broadcast:
        check_nccl(ncclBroadcast(c.input, c.output, n, t, c.root, comm_, stream_), "ncclBroadcast");
        break;
      case Collective::Reduce:
        check_nccl(ncclReduce(c.input, c.output, n, t, nccl_op(c.op), c.root, comm_, stream_),
                   "ncclReduce");
        break;
      case Collective::AllReduce:
        check_nccl(ncclAllReduce(c.input, c.output, n, t, nccl_op(c.op), comm_, stream_),
                   "ncclAllReduce");
        break;
      case Collective::AllGather:
        check_nccl(ncclAllGather(c.input, c.output, n, t, comm_, stream_), "ncclAllGather");
        break;
      case Collective::ReduceScatter:
        check_nccl(ncclReduceScatter(c.input, c.output, n, t, nccl_op(c.op), comm_, stream_),
                   "ncclReduceScatter");
        break;
#if NCCL_VERSION_CODE >= NCCL_VERSION(2, 28, 0)
      case Collective::AllToAll:
        check_nccl(ncclAlltoAll(c.input, c.output, n, t, comm_, stream_), "ncclAlltoAll");
        break;
      case Collective::Gather:
        check_nccl(ncclGather(c.input, c.output, n, t, c.root, comm_, stream_), "ncclGather");
        break;
      case Collective::Scatter:
        check_nccl(ncclScatter(c.input, c.output, n, t, c.root, comm_, stream_), "ncclScatter");
        break;
#else
      case Collective::AllToAll:
        group_start();
        for (int q = 0; q < size_; ++q) {
          check_nccl(ncclSend(in + q * n * es, n, t, q, comm_, stream_), "ncclSend");
          check_nccl(ncclRecv(out + q * n * es, n, t, q, comm_, stream_), "ncclRecv");
        }
        group_end();
        break;
      case Collective::Gather:
        group_start();
        if (rank_ == c.root)
          for (int q = 0; q < size_; ++q)
            check_nccl(ncclRecv(out + q * n * es, n, t, q, comm_, stream_), "ncclRecv");
        check_nccl(ncclSend(in, n, t, c.root, comm_, stream_), "ncclSend");
        group_end();
        break;
      case Collective::Scatter:
        group_start();
        if (rank_ == c.root)
          for (int q = 0; q < size_; ++q)
            check_nccl(ncclSend(in + q * n * es, n, t, q, comm_, stream_), "ncclSend");
        check_nccl(ncclRecv(out, n, t, c.root, comm_, stream_), "ncclRecv");
        group_end();
        break;
#endif
    }
    (void)in;
    (void)out;
    (void)es;
  }

  void barrier() override {
    // An all-reduce of one byte-sized element is NCCL's barrier.
    void* scratch = allocate(sizeof(float));
    check_nccl(ncclAllReduce(scratch, scratch, 1, ncclFloat32, ncclSum, comm_, stream_),
               "ncclAllReduce");
    synchronize();
    deallocate(scratch);
  }

 private:
  ncclComm_t comm_;
  int device_ = 0, rank_ = 0, size_ = 1;
  cudaStream_t stream_ = nullptr;
  std::int64_t next_id_ = 0;
};

}  // namespace

bool nccl_available() { return true; }

int cuda_device_count(std::string* why) {
  int count = 0;
  const cudaError_t e = cudaGetDeviceCount(&count);
  if (e != cudaSuccess) {
    if (why)
      *why = std::string("cudaGetDeviceCount failed: ") + cudaGetErrorName(e) + " (" +
             cudaGetErrorString(e) + ")";
    return 0;
  }
  if (count == 0 && why) *why = "no CUDA device found";
  return count;
}

void run_nccl_threads(int ranks, const std::function<void(Communicator&)>& body) {
  std::string why;
  const int devices = cuda_device_count(&why);
  if (devices < ranks)
    throw CommError("nccl: " + std::to_string(ranks) + " ranks need as many GPUs, found " +
                    std::to_string(devices) + (why.empty() ? "" : ": " + why));
  std::vector<ncclComm_t> comms(ranks);
  std::vector<int> devlist(ranks);
  for (int r = 0; r < ranks; ++r) devlist[r] = r;
  check_nccl(ncclCommInitAll(comms.data(), ranks, devlist.data()), "ncclCommInitAll");
  std::vector<std::unique_ptr<Communicator>> wrapped;
  for (int r = 0; r < ranks; ++r)
    wrapped.push_back(std::make_unique<NcclCommunicator>(comms[r], r));
  std::exception_ptr error;
  std::mutex error_mutex;
  std::vector<std::thread> threads;
  for (int r = 0; r < ranks; ++r)
    threads.emplace_back([&, r] {
      try {
        check_cuda(cudaSetDevice(r), "cudaSetDevice");
        body(*wrapped[r]);
      } catch (...) {
        std::lock_guard lock(error_mutex);
        if (!error) error = std::current_exception();
      }
    });
  for (auto& t : threads) t.join();
  if (error) std::rethrow_exception(error);
}

std::string nccl_unique_id() {
  ncclUniqueId id;
  check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
  return std::string(id.internal, sizeof(id.internal));
}

std::unique_ptr<Communicator> make_nccl_communicator(const std::string& unique_id, int ranks,
                                                     int rank, int device) {
  ncclUniqueId id;
  if (unique_id.size() != sizeof(id.internal)) throw CommError("nccl: malformed unique id");
  std::memcpy(id.internal, unique_id.data(), sizeof(id.internal));
  check_cuda(cudaSetDevice(device), "cudaSetDevice");
  ncclComm_t comm;
  check_nccl(ncclCommInitRank(&comm, ranks, id, rank), "ncclCommInitRank");
  return std::make_unique<NcclCommunicator>(comm, device);
}

}  // namespace spora::comm
