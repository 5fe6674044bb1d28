// Datasets as iterators (semantics/iterable.h): Fashion-MNIST from its idx files, and batches
// over tensors in memory, both batched ahead of the compute by a prefetch thread (prefetch.h).
//
// Batching. n examples in batches of B give n / B full batches and, unless drop_last, one
// partial batch of n % B rows; its type differs (shapes are static), so the iterator type lists
// both (BatchPlan::types) and the loop is walked in two parts (iterable.h).
//
// Shuffling. Walk w of a dataset (w = 0, 1, ... counted per description: the same call made
// again, as an epoch loop does, continues the count) visits the examples in the order of
// permutation(n, seed, w): Fisher-Yates driven by SplitMix64 seeded from (seed, w). So each
// epoch has its own order, a run is reproducible from its seed, and graph and eager mode see
// the same batches. Without shuffle the order is 0..n-1.
//
// Compile time vs run time. The iterator type comes from the files' headers, read when the
// program is compiled (like JAX knowing shapes at trace time); the headers seen then are
// remembered (remember_header) and a file whose header differs at run time is an error:
//   'train-images-idx3-ubyte.gz' changed since the program was compiled: it held
//   u8[60000,28,28] then, u8[100,28,28] now
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "backends/runtime/data/prefetch.h"
#include "backends/runtime/data/progress.h"
#include "semantics/iterable.h"
#include "semantics/types.h"

namespace spora::runtime::data {

struct BatchPlan {
  int64_t n = 0, batch = 1, full = 0, rem = 0;
  int64_t count() const { return full + (rem > 0 ? 1 : 0); }
  int64_t rows(int64_t i) const { return i < full ? batch : rem; }
  // The part of batch i: 0 for full batches, 1 for a partial one after full ones.
  int64_t part(int64_t i) const { return i < full || full == 0 ? 0 : 1; }
  // The element types for a per-example type `example` (rows prepended; a tuple of parts).
  std::vector<sem::TypeP> types(const std::vector<sem::TypeP>& example) const;
};
BatchPlan plan_batches(int64_t n, int64_t batch, bool drop_last);

// The permutation of walk `walk` (see above) and the walk counters.
std::vector<int64_t> permutation(int64_t n, int64_t seed, int64_t walk);
int64_t next_walk(const std::string& key);
void reset_walks();

// The compile-time header of a file, and the run-time check against it.
void remember_header(const std::string& path, const std::string& header);
void check_header(const std::string& path, const std::string& header_now);

struct BatchOptions {
  int64_t batch = 64;
  bool shuffle = false;
  int64_t seed = 0;
  bool drop_last = false;
  bool progress = false;
  int64_t prefetch = 4;  // batches decoded ahead
};

// The walking, prefetching and progress machinery; subclasses say how to load and gather.
// A subclass's destructor calls stop(): the thread calls its gather() until joined, and by the
// time ~BatchIterable runs, the subclass's members are gone.
class BatchIterable : public sem::Iterable {
 public:
  BatchIterable(std::string key, std::string label, int64_t n, BatchOptions options);
  ~BatchIterable() override;
  void reset() override;
  bool next(sem::Value& out) override;
  bool next_in(int64_t part, sem::Value& out) override;
  std::string describe() const override { return key_; }
  const BatchPlan& plan() const { return plan_; }
  int64_t walk() const { return walk_; }
  // Stops the prefetch thread (as leaving a loop early does); for tests.
  void stop();
  // Data parallelism: from the next walk on, a batch whose rows `count` divides is gathered as
  // its shard `index` only (rows [index r/count, (index + 1) r/count) of the global batch, in
  // the one-device order); other batches stay whole. sharded(v) says which a batch was.
  void set_shard(int64_t index, int64_t count);
  int64_t shard_count() const { return shard_count_; }
  bool sharded(int64_t local_rows) const {
    return shard_count_ > 1 && local_rows * shard_count_ == last_global_rows_;
  }
  const Prefetcher* prefetcher() const { return prefetcher_.get(); }

 protected:
  // On the prefetch thread, before the first batch of each walk (e.g. decoding files).
  virtual void prepare() {}
  // On the prefetch thread: the batch of examples order[begin, begin + rows).
  virtual RawBatch gather(const std::vector<int64_t>& order, int64_t begin, int64_t rows) = 0;

 private:
  bool pull(sem::Value& out);
  std::string key_, label_;
  BatchOptions options_;
  BatchPlan plan_;
  int64_t walk_ = -1;
  int64_t cursor_ = 0;   // batches handed out in this walk
  bool pending_ = false; // a batch was popped but not handed out (it belongs to another part)
  RawBatch pending_batch_;
  std::unique_ptr<Prefetcher> prefetcher_;
  std::unique_ptr<ProgressBar> bar_;
  int64_t last_rows_ = 0;
  int64_t last_global_rows_ = 0;
  int64_t shard_index_ = 0, shard_count_ = 1;
};

// ---- Fashion-MNIST --------------------------------------------------------------------------

struct FashionOptions {
  std::string root = "/usr/share/datasets/fashion-mnist";
  std::string split = "train";  // or "test"
  bool normalize = true;
  double mean = 0.2860, std = 0.3530;
  bool flatten = false;  // f32[B,784] instead of f32[B,1,28,28]
  int64_t limit = 0;     // the first `limit` examples only (0: all)
};

// The idx files of a split: <root>/<prefix>-images-idx3-ubyte(.gz) and -labels-idx1-ubyte.
struct FashionFiles {
  std::string images, labels;
  int64_t n = 0, rows = 0, cols = 0;
};
// Finds the files and reads their headers (UserError naming the path when missing or bad).
FashionFiles fashion_files(const FashionOptions& o);
// The per-example types: (f32[1,28,28] or f32[784], i32[]).
std::vector<sem::TypeP> fashion_example(const FashionOptions& o, const FashionFiles& f);

class FashionMnist : public BatchIterable {
 public:
  FashionMnist(FashionOptions options, BatchOptions batching, FashionFiles files);
  // Joins the prefetch thread while this object's members (which gather reads) still live.
  ~FashionMnist() override { stop(); }
  struct Decoded;  // the files' bytes, shared by every FashionMnist of the process

 protected:
  void prepare() override;
  RawBatch gather(const std::vector<int64_t>& order, int64_t begin, int64_t rows) override;

 private:
  FashionOptions options_;
  FashionFiles files_;
  std::shared_ptr<const Decoded> data_;
};

// ---- batches over tensors -------------------------------------------------------------------

class TensorBatches : public BatchIterable {
 public:
  TensorBatches(std::vector<sem::Tensor> tensors, BatchOptions batching, std::string key);
  ~TensorBatches() override { stop(); }  // as ~FashionMnist

 protected:
  RawBatch gather(const std::vector<int64_t>& order, int64_t begin, int64_t rows) override;

 private:
  std::vector<sem::Tensor> tensors_;
};

}  // namespace spora::runtime::data
