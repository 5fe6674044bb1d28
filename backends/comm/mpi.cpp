#include <mpi.h>

#include <climits>
#include <string>

#include "backends/comm/mpi_comm.h"

namespace spora::comm {

namespace {

void check(int code, const char* what) {
  if (code == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(code, text, &length);
  throw CommError(std::string("mpi: ") + what + " failed: " + std::string(text, length));
}

MPI_Datatype mpi_type(DType t) {
  switch (t) {
    case DType::F32:
      return MPI_FLOAT;
    case DType::F64:
      return MPI_DOUBLE;
    case DType::I32:
      return MPI_INT32_T;
    case DType::I64:
      return MPI_INT64_T;
  }
  return MPI_BYTE;
}

MPI_Op mpi_op(ReduceOp op) {
  switch (op) {
    case ReduceOp::Sum:
      return MPI_SUM;
    case ReduceOp::Max:
      return MPI_MAX;
    case ReduceOp::Min:
      return MPI_MIN;
    case ReduceOp::Prod:
      return MPI_PROD;
  }
  return MPI_SUM;
}

int as_int(std::int64_t n, const char* what) {
  if (n < 0 || n > INT_MAX) throw CommError(std::string("mpi: ") + what + " exceeds INT_MAX");
  return static_cast<int>(n);
}

class MpiCommunicator final : public Communicator {
 public:
  explicit MpiCommunicator(MPI_Comm comm) : comm_(comm) {
    MPI_Comm_rank(comm_, &rank_);
    MPI_Comm_size(comm_, &size_);
    int flag = 0;
    int* tag_ub = nullptr;
    MPI_Comm_get_attr(comm_, MPI_TAG_UB, &tag_ub, &flag);
    tag_ub_ = flag && tag_ub ? *tag_ub : 32767;
  }
  ~MpiCommunicator() override {
    int finalized = 0;
    MPI_Finalized(&finalized);
    if (!finalized) MPI_Comm_free(&comm_);
  }

  int rank() const override { return rank_; }
  int size() const override { return size_; }
  std::string_view backend() const override { return "mpi"; }

  Request isend(const void* data, std::size_t bytes, int peer, int tag) override {
    MPI_Request r;
    check(
        MPI_Isend(data, as_int(bytes, "message size"), MPI_BYTE, peer, checked_tag(tag), comm_, &r),
        "MPI_Isend");
    return track(r);
  }
  Request irecv(void* data, std::size_t bytes, int peer, int tag) override {
    MPI_Request r;
    check(
        MPI_Irecv(data, as_int(bytes, "message size"), MPI_BYTE, peer, checked_tag(tag), comm_, &r),
        "MPI_Irecv");
    return track(r);
  }

  std::vector<std::size_t> wait_some(std::span<const Request> requests) override {
    handles_.clear();
    for (const Request& r : requests) handles_.push_back(slots_.at(r.id));
    indices_.resize(requests.size());
    int count = 0;
    check(MPI_Waitsome(static_cast<int>(handles_.size()), handles_.data(), &count, indices_.data(),
                       MPI_STATUSES_IGNORE),
          "MPI_Waitsome");
    std::vector<std::size_t> done;
    if (count == MPI_UNDEFINED) return done;
    for (int i = 0; i < count; ++i) {
      const std::int64_t id = requests[indices_[i]].id;
      slots_[id] = MPI_REQUEST_NULL;
      free_.push_back(id);
      done.push_back(static_cast<std::size_t>(indices_[i]));
    }
    return done;
  }

  void native(const CollectiveCall& c) override {
    const MPI_Datatype t = mpi_type(c.dtype);
    const int n = as_int(c.count, "element count");
    void* out = c.output;
    const void* in = c.input;
    switch (c.collective) {
      case Collective::Broadcast:
        if (rank_ == c.root && n) copy(out, in, c.count * dtype_size(c.dtype));
        check(MPI_Bcast(out, n, t, c.root, comm_), "MPI_Bcast");
        break;
      case Collective::Scatter:
        check(MPI_Scatter(in, n, t, out, n, t, c.root, comm_), "MPI_Scatter");
        break;
      case Collective::Gather:
        check(MPI_Gather(in, n, t, out, n, t, c.root, comm_), "MPI_Gather");
        break;
      case Collective::Reduce:
        check(MPI_Reduce(in, out, n, t, mpi_op(c.op), c.root, comm_), "MPI_Reduce");
        break;
      case Collective::AllReduce:
        check(MPI_Allreduce(in, out, n, t, mpi_op(c.op), comm_), "MPI_Allreduce");
        break;
      case Collective::AllGather:
        check(MPI_Allgather(in, n, t, out, n, t, comm_), "MPI_Allgather");
        break;
      case Collective::ReduceScatter:
        check(MPI_Reduce_scatter_block(in, out, n, t, mpi_op(c.op), comm_),
              "MPI_Reduce_scatter_block");
        break;
      case Collective::AllToAll:
        check(MPI_Alltoall(in, n, t, out, n, t, comm_), "MPI_Alltoall");
        break;
    }
  }

  void barrier() override { check(MPI_Barrier(comm_), "MPI_Barrier"); }

 private:
  int checked_tag(int tag) const {
    if (tag < 0 || tag > tag_ub_)
      throw CommError("mpi: tag " + std::to_string(tag) + " exceeds MPI_TAG_UB " +
                      std::to_string(tag_ub_));
    return tag;
  }
  Request track(MPI_Request r) {
    std::int64_t id;
    if (!free_.empty()) {
      id = free_.back();
      free_.pop_back();
      slots_[id] = r;
    } else {
      id = static_cast<std::int64_t>(slots_.size());
      slots_.push_back(r);
    }
    return Request{id};
  }

  MPI_Comm comm_;
  int rank_ = 0, size_ = 1, tag_ub_ = 32767;
  std::vector<MPI_Request> slots_, handles_;
  std::vector<std::int64_t> free_;
  std::vector<int> indices_;
};

}  // namespace

bool mpi_available() { return true; }

bool mpi_initialized() {
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  return initialized && !finalized;
}

void mpi_initialize(int* argc, char*** argv) {
  int initialized = 0;
  MPI_Initialized(&initialized);
  if (initialized) return;
  int provided = 0;
  check(MPI_Init_thread(argc, argv, MPI_THREAD_FUNNELED, &provided), "MPI_Init_thread");
  MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN);
}

void mpi_finalize() {
  if (mpi_initialized()) MPI_Finalize();
}

int mpi_world_rank() {
  int r = 0;
  MPI_Comm_rank(MPI_COMM_WORLD, &r);
  return r;
}

int mpi_world_size() {
  int n = 1;
  MPI_Comm_size(MPI_COMM_WORLD, &n);
  return n;
}

std::unique_ptr<Communicator> make_mpi_communicator() {
  if (!mpi_initialized()) throw CommError("mpi: call mpi_initialize first");
  MPI_Comm dup;
  check(MPI_Comm_dup(MPI_COMM_WORLD, &dup), "MPI_Comm_dup");
  MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN);
  return std::make_unique<MpiCommunicator>(dup);
}

std::unique_ptr<Communicator> make_mpi_communicator(int ranks) {
  if (!mpi_initialized()) throw CommError("mpi: call mpi_initialize first");
  const int me = mpi_world_rank();
  MPI_Comm sub;
  check(MPI_Comm_split(MPI_COMM_WORLD, me < ranks ? 0 : MPI_UNDEFINED, me, &sub), "MPI_Comm_split");
  if (sub == MPI_COMM_NULL) return nullptr;
  MPI_Comm_set_errhandler(sub, MPI_ERRORS_RETURN);
  return std::make_unique<MpiCommunicator>(sub);
}

}  // namespace spora::comm
