#include <mpi.h>
#include <sched.h>
#include <unistd.h>

#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
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

// ---- the collective timeout (SPORA_COLLECTIVE_TIMEOUT, see mpi_comm.h) --------------------------

constexpr int kNoticeTag = 1;
constexpr double kGraceSeconds = 2.0;  // how long a stalled rank waits to hear from the others

// World-wide: a private duplicate of MPI_COMM_WORLD on which a rank that waited past the timeout
// tells every other rank, and one receive always posted for such a notice.
struct Watchdog {
  double timeout = 0;  // seconds; 0: waits are MPI's blocking calls, without a timeout
  MPI_Comm comm = MPI_COMM_NULL;
  int rank = 0, size = 1;
  std::int64_t notice = 0;  // the receive's buffer
  MPI_Request posted = MPI_REQUEST_NULL;
  std::vector<char> heard;  // ranks whose notice arrived
};

Watchdog& watchdog() {
  static Watchdog w;
  return w;
}

void post_notice_receive() {
  Watchdog& w = watchdog();
  MPI_Irecv(&w.notice, 1, MPI_INT64_T, MPI_ANY_SOURCE, kNoticeTag, w.comm, &w.posted);
}

// Collective over the world, once, before the first communicator: every process reads the same
// environment (mpirun passes it on), so all of them make the duplicate or none does.
void start_watchdog() {
  Watchdog& w = watchdog();
  if (w.comm != MPI_COMM_NULL) return;
  w.timeout = collective_timeout_seconds();
  if (w.timeout <= 0) return;
  check(MPI_Comm_dup(MPI_COMM_WORLD, &w.comm), "MPI_Comm_dup");
  MPI_Comm_set_errhandler(w.comm, MPI_ERRORS_RETURN);
  MPI_Comm_rank(w.comm, &w.rank);
  MPI_Comm_size(w.comm, &w.size);
  w.heard.assign(static_cast<size_t>(w.size), 0);
  post_notice_receive();
}

// True when another rank's notice has arrived.
bool notice_arrived() {
  Watchdog& w = watchdog();
  int flag = 0;
  MPI_Status st;
  MPI_Test(&w.posted, &flag, &st);
  if (!flag) return false;
  w.heard[static_cast<size_t>(st.MPI_SOURCE)] = 1;
  post_notice_receive();
  return true;
}

std::string rank_list(const std::vector<int>& ranks) {
  std::string out = ranks.size() == 1 ? "rank " : "ranks ";
  for (size_t i = 0; i < ranks.size(); ++i) out += (i ? ", " : "") + std::to_string(ranks[i]);
  return out;
}

// A wait passed the timeout here, or another rank's did: every rank still responding tells the
// others, listens for kGraceSeconds, and the ranks nobody heard from are the ones that did not
// arrive. The lowest responding rank prints one line; every responding rank then exits with
// status 1 and mpirun stops the rest (the silent ranks included).
[[noreturn]] void stall(const char* where) {
  Watchdog& w = watchdog();
  w.heard[static_cast<size_t>(w.rank)] = 1;
  std::int64_t mine = w.rank;
  std::vector<MPI_Request> sends;
  for (int r = 0; r < w.size; ++r)
    if (r != w.rank) {
      sends.emplace_back();
      MPI_Isend(&mine, 1, MPI_INT64_T, r, kNoticeTag, w.comm, &sends.back());
    }
  const double start = MPI_Wtime();
  int heard = 0;
  while (MPI_Wtime() - start < kGraceSeconds) {
    notice_arrived();
    heard = 0;
    for (char h : w.heard) heard += h;
    if (heard == w.size) break;
    sched_yield();
  }
  std::vector<int> silent;
  int reporter = -1;
  for (int r = 0; r < w.size; ++r) {
    if (!w.heard[static_cast<size_t>(r)])
      silent.push_back(r);
    else if (reporter < 0)
      reporter = r;
  }
  std::fflush(nullptr);
  if (w.rank == reporter) {
    char seconds[32];
    std::snprintf(seconds, sizeof seconds, "%g", w.timeout);
    const std::string line =
        silent.empty()
            ? std::string("spora: every rank waited in a collective for ") + seconds +
                  " s (SPORA_COLLECTIVE_TIMEOUT) and none is missing: the ranks wait for each "
                  "other "
                  "(rank " +
                  std::to_string(w.rank) + " in " + where + "); stopping the run\n"
            : "spora: " + rank_list(silent) + " did not arrive at a collective within " + seconds +
                  " s (SPORA_COLLECTIVE_TIMEOUT; rank " + std::to_string(w.rank) + " waited in " +
                  where + "); stopping the run\n";
    std::fputs(line.c_str(), stderr);
    std::fflush(stderr);
  } else {
    ::usleep(500 * 1000);  // the reporter's line first: mpirun stops the job at the first exit
  }
  std::_Exit(1);
}

// Polls `done` (an MPI_Test of the pending operation) until it is true, or the timeout passes,
// or another rank reports a stall.
template <class Done>
void wait_with_timeout(Done done, const char* where) {
  Watchdog& w = watchdog();
  const double start = MPI_Wtime();
  for (long polls = 0;; ++polls) {
    if (done()) return;
    if (notice_arrived() || MPI_Wtime() - start > w.timeout) stall(where);
    if (polls > 64) sched_yield();  // ranks may share cores (mpirun --oversubscribe)
  }
}

void wait_request(MPI_Request& r, const char* where) {
  wait_with_timeout(
      [&] {
        int flag = 0;
        check(MPI_Test(&r, &flag, MPI_STATUS_IGNORE), where);
        return flag != 0;
      },
      where);
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
    if (watchdog().timeout > 0) {
      wait_with_timeout(
          [&] {
            check(MPI_Testsome(static_cast<int>(handles_.size()), handles_.data(), &count,
                               indices_.data(), MPI_STATUSES_IGNORE),
                  "MPI_Testsome");
            return count != 0;
          },
          "a point-to-point exchange (MPI_Waitsome)");
    } else {
      check(MPI_Waitsome(static_cast<int>(handles_.size()), handles_.data(), &count,
                         indices_.data(), MPI_STATUSES_IGNORE),
            "MPI_Waitsome");
    }
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
    if (watchdog().timeout > 0) return native_with_timeout(c);
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

  void barrier() override {
    if (watchdog().timeout > 0) {
      MPI_Request r;
      check(MPI_Ibarrier(comm_, &r), "MPI_Ibarrier");
      wait_request(r, "MPI_Barrier");
      return;
    }
    check(MPI_Barrier(comm_), "MPI_Barrier");
  }

 private:
  // native() with SPORA_COLLECTIVE_TIMEOUT: MPI's non-blocking collectives, polled.
  void native_with_timeout(const CollectiveCall& c) {
    const MPI_Datatype t = mpi_type(c.dtype);
    const int n = as_int(c.count, "element count");
    void* out = c.output;
    const void* in = c.input;
    MPI_Request r;
    const char* name = "";
    switch (c.collective) {
      case Collective::Broadcast:
        if (rank_ == c.root && n) copy(out, in, c.count * dtype_size(c.dtype));
        check(MPI_Ibcast(out, n, t, c.root, comm_, &r), name = "MPI_Bcast");
        break;
      case Collective::Scatter:
        check(MPI_Iscatter(in, n, t, out, n, t, c.root, comm_, &r), name = "MPI_Scatter");
        break;
      case Collective::Gather:
        check(MPI_Igather(in, n, t, out, n, t, c.root, comm_, &r), name = "MPI_Gather");
        break;
      case Collective::Reduce:
        check(MPI_Ireduce(in, out, n, t, mpi_op(c.op), c.root, comm_, &r), name = "MPI_Reduce");
        break;
      case Collective::AllReduce:
        check(MPI_Iallreduce(in, out, n, t, mpi_op(c.op), comm_, &r), name = "MPI_Allreduce");
        break;
      case Collective::AllGather:
        check(MPI_Iallgather(in, n, t, out, n, t, comm_, &r), name = "MPI_Allgather");
        break;
      case Collective::ReduceScatter:
        check(MPI_Ireduce_scatter_block(in, out, n, t, mpi_op(c.op), comm_, &r),
              name = "MPI_Reduce_scatter_block");
        break;
      case Collective::AllToAll:
        check(MPI_Ialltoall(in, n, t, out, n, t, comm_, &r), name = "MPI_Alltoall");
        break;
      default:
        throw CommError("mpi: unknown collective");
    }
    wait_request(r, name);
  }

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
  if (!mpi_initialized()) return;
  Watchdog& w = watchdog();
  if (w.comm != MPI_COMM_NULL) {
    // MPI_Finalize waits for every rank: a rank that stopped would hold the others here.
    MPI_Request r;
    if (MPI_Ibarrier(w.comm, &r) == MPI_SUCCESS) wait_request(r, "MPI_Finalize");
    MPI_Cancel(&w.posted);
    MPI_Wait(&w.posted, MPI_STATUS_IGNORE);
    MPI_Comm_free(&w.comm);
  }
  MPI_Finalize();
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
  start_watchdog();
  MPI_Comm dup;
  check(MPI_Comm_dup(MPI_COMM_WORLD, &dup), "MPI_Comm_dup");
  MPI_Comm_set_errhandler(dup, MPI_ERRORS_RETURN);
  return std::make_unique<MpiCommunicator>(dup);
}

std::unique_ptr<Communicator> make_mpi_communicator(int ranks) {
  if (!mpi_initialized()) throw CommError("mpi: call mpi_initialize first");
  start_watchdog();
  const int me = mpi_world_rank();
  MPI_Comm sub;
  check(MPI_Comm_split(MPI_COMM_WORLD, me < ranks ? 0 : MPI_UNDEFINED, me, &sub), "MPI_Comm_split");
  if (sub == MPI_COMM_NULL) return nullptr;
  MPI_Comm_set_errhandler(sub, MPI_ERRORS_RETURN);
  return std::make_unique<MpiCommunicator>(sub);
}

}  // namespace spora::comm
