// Batching, shuffling, prefetching and the two datasets (see dataset.h).
#include "backends/runtime/data/dataset.h"

#include <cstring>
#include <map>
#include <mutex>
#include <numeric>

#include "backends/runtime/data/idx.h"
#include "lang/diagnostics.h"

namespace spora::runtime::data {

namespace {

[[noreturn]] void fail(const std::string& message) { throw lang::UserError(message); }

uint64_t splitmix64(uint64_t& state) {
  uint64_t z = (state += 0x9E3779B97F4A7C15ull);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  return z ^ (z >> 31);
}

// Uniform in [0, bound) without modulo bias (Lemire's multiply-and-reject).
uint64_t bounded(uint64_t& state, uint64_t bound) {
  unsigned __int128 m = static_cast<unsigned __int128>(splitmix64(state)) * bound;
  uint64_t low = static_cast<uint64_t>(m);
  if (low < bound) {
    const uint64_t threshold = (0 - bound) % bound;
    while (low < threshold) {
      m = static_cast<unsigned __int128>(splitmix64(state)) * bound;
      low = static_cast<uint64_t>(m);
    }
  }
  return static_cast<uint64_t>(m >> 64);
}

std::mutex g_mu;
std::map<std::string, int64_t>& walks() {
  static std::map<std::string, int64_t> w;
  return w;
}
std::map<std::string, std::string>& headers() {
  static std::map<std::string, std::string> h;
  return h;
}

}  // namespace

// ---- plans, permutations, walks, headers ------------------------------------------------------

BatchPlan plan_batches(int64_t n, int64_t batch, bool drop_last) {
  if (batch < 1) fail("batch must be at least 1, not " + std::to_string(batch));
  BatchPlan p;
  p.n = n;
  p.batch = batch;
  p.full = n / batch;
  p.rem = drop_last ? 0 : n % batch;
  return p;
}

std::vector<sem::TypeP> BatchPlan::types(const std::vector<sem::TypeP>& example) const {
  auto batch_of = [&](int64_t rows) {
    std::vector<sem::TypeP> parts;
    for (const auto& t : example) {
      sem::Shape s{rows};
      s.insert(s.end(), t->shape.begin(), t->shape.end());
      parts.push_back(sem::Type::tensor(t->dtype, s));
    }
    return parts.size() == 1 ? parts[0] : sem::Type::tuple(parts);
  };
  std::vector<sem::TypeP> out;
  if (full > 0) out.push_back(batch_of(batch));
  if (rem > 0) out.push_back(batch_of(rem));
  if (out.empty()) out.push_back(batch_of(batch));  // no element at all: the full type, never walked
  return out;
}

std::vector<int64_t> permutation(int64_t n, int64_t seed, int64_t walk) {
  std::vector<int64_t> p(static_cast<size_t>(n));
  std::iota(p.begin(), p.end(), int64_t{0});
  uint64_t state = static_cast<uint64_t>(seed) * 0xD1B54A32D192ED03ull ^ static_cast<uint64_t>(walk);
  splitmix64(state);
  for (int64_t i = n - 1; i > 0; --i) {
    const auto j = static_cast<int64_t>(bounded(state, static_cast<uint64_t>(i + 1)));
    std::swap(p[static_cast<size_t>(i)], p[static_cast<size_t>(j)]);
  }
  return p;
}

int64_t next_walk(const std::string& key) {
  std::lock_guard<std::mutex> lock(g_mu);
  return walks()[key]++;
}

void reset_walks() {
  std::lock_guard<std::mutex> lock(g_mu);
  walks().clear();
}

void remember_header(const std::string& path, const std::string& header) {
  std::lock_guard<std::mutex> lock(g_mu);
  headers()[path] = header;
}

void check_header(const std::string& path, const std::string& now) {
  std::lock_guard<std::mutex> lock(g_mu);
  auto it = headers().find(path);
  if (it != headers().end() && it->second != now)
    fail("'" + path + "' changed since the program was compiled: it held " + it->second + " then, " + now + " now");
}

// ---- BatchIterable ----------------------------------------------------------------------------

BatchIterable::BatchIterable(std::string key, std::string label, int64_t n, BatchOptions options)
    : key_(std::move(key)), label_(std::move(label)), options_(options),
      plan_(plan_batches(n, options.batch, options.drop_last)) {}

BatchIterable::~BatchIterable() { stop(); }

void BatchIterable::stop() {
  if (prefetcher_) prefetcher_->stop();
  prefetcher_.reset();
  bar_.reset();
  pending_ = false;
}

void BatchIterable::reset() {
  stop();
  walk_ = next_walk(key_);
  cursor_ = 0;
  last_rows_ = 0;
  auto order = std::make_shared<std::vector<int64_t>>();
  if (options_.shuffle) {
    *order = permutation(plan_.n, options_.seed, walk_);
  } else {
    order->resize(static_cast<size_t>(plan_.n));
    std::iota(order->begin(), order->end(), int64_t{0});
  }
  const int64_t batch = plan_.batch;
  const BatchPlan plan = plan_;
  const int64_t index = shard_index_, count = shard_count_;
  prefetcher_ = std::make_unique<Prefetcher>(
      plan_.count(), static_cast<size_t>(std::max<int64_t>(1, options_.prefetch)), [this] { prepare(); },
      [this, order, batch, plan, index, count](int64_t i) {
        const int64_t rows = plan.rows(i);
        if (count <= 1 || rows % count != 0) return gather(*order, i * batch, rows);
        RawBatch b = gather(*order, i * batch + index * (rows / count), rows / count);
        b.samples = rows;  // the progress bar counts the global batch
        return b;
      });
  if (options_.progress && ProgressBar::enabled())
    bar_ = std::make_unique<ProgressBar>(label_ + " epoch " + std::to_string(walk_ + 1), plan_.count(), plan_.n);
}

bool BatchIterable::pull(sem::Value& out) {
  if (bar_ && cursor_ > 0) bar_->tick(last_rows_);
  RawBatch b;
  if (!prefetcher_->pop(b))
    throw lang::InternalError("data: the prefetch thread ended after " + std::to_string(cursor_) + " of " +
                              std::to_string(plan_.count()) + " batches");
  ++cursor_;
  last_rows_ = b.samples;
  last_global_rows_ = plan_.rows(cursor_ - 1);
  if (b.parts.size() == 1) {
    out = sem::Value(b.parts[0].to_tensor());
  } else {
    std::vector<sem::Value> parts;
    for (const RawTensor& t : b.parts) parts.emplace_back(t.to_tensor());
    out = sem::Value::tuple(std::move(parts));
  }
  return true;
}

void BatchIterable::set_shard(int64_t index, int64_t count) {
  if (count < 1 || index < 0 || index >= count)
    throw lang::InternalError("data: shard " + std::to_string(index) + " of " + std::to_string(count));
  shard_index_ = index;
  shard_count_ = count;
}

bool BatchIterable::next_in(int64_t part, sem::Value& out) {
  if (walk_ < 0 && part == 0) reset();
  if (!prefetcher_) return false;  // the walk is over
  if (cursor_ >= plan_.count()) {
    if (bar_) {
      if (cursor_ > 0) bar_->tick(last_rows_);
      bar_->finish();
    }
    stop();
    return false;
  }
  if (plan_.part(cursor_) != part) return false;
  return pull(out);
}

bool BatchIterable::next(sem::Value& out) {
  if (walk_ < 0) reset();
  if (!prefetcher_) return false;
  return next_in(plan_.part(std::min(cursor_, std::max<int64_t>(0, plan_.count() - 1))), out);
}

// ---- Fashion-MNIST ------------------------------------------------------------------------------

namespace {

std::string find_idx(const std::string& root, const std::string& name, const std::string& what) {
  const std::string base = root + (root.empty() || root.back() == '/' ? "" : "/") + name;
  if (file_exists(base + ".gz")) return base + ".gz";
  if (file_exists(base)) return base;
  fail("fashion_mnist: cannot find the " + what + ": '" + base + ".gz' does not exist (nor '" + base +
       "'); install the Debian package dataset-fashion-mnist, or pass root=<directory of the idx files>");
}

}  // namespace

FashionFiles fashion_files(const FashionOptions& o) {
  if (o.split != "train" && o.split != "test")
    fail("fashion_mnist: split must be \"train\" or \"test\", not \"" + o.split + "\"");
  const std::string prefix = o.split == "train" ? "train" : "t10k";
  FashionFiles f;
  f.images = find_idx(o.root, prefix + "-images-idx3-ubyte", o.split + " images");
  f.labels = find_idx(o.root, prefix + "-labels-idx1-ubyte", o.split + " labels");
  const IdxHeader hi = read_idx_header(f.images);
  const IdxHeader hl = read_idx_header(f.labels);
  if (hi.type != 0x08 || hi.shape.size() != 3)
    fail("fashion_mnist: '" + f.images + "' holds " + hi.str() + ", expected images u8[n,rows,cols]");
  if (hl.type != 0x08 || hl.shape.size() != 1)
    fail("fashion_mnist: '" + f.labels + "' holds " + hl.str() + ", expected labels u8[n]");
  if (hi.shape[0] != hl.shape[0])
    fail("fashion_mnist: '" + f.images + "' has " + std::to_string(hi.shape[0]) + " images but '" + f.labels +
         "' has " + std::to_string(hl.shape[0]) + " labels");
  remember_header(f.images, hi.str());
  remember_header(f.labels, hl.str());
  f.n = hi.shape[0];
  f.rows = hi.shape[1];
  f.cols = hi.shape[2];
  if (o.limit < 0) fail("fashion_mnist: limit must be 0 (all) or positive, not " + std::to_string(o.limit));
  if (o.limit > f.n)
    fail("fashion_mnist: limit=" + std::to_string(o.limit) + " is more than the " + std::to_string(f.n) +
         " examples of the " + o.split + " split");
  if (o.limit > 0) f.n = o.limit;
  return f;
}

std::vector<sem::TypeP> fashion_example(const FashionOptions& o, const FashionFiles& f) {
  sem::Shape image = o.flatten ? sem::Shape{f.rows * f.cols} : sem::Shape{1, f.rows, f.cols};
  return {sem::Type::tensor(DType::f32, image), sem::Type::scalar(DType::i32)};
}

struct FashionMnist::Decoded {
  Bytes images, labels;  // u8, without headers
};

namespace {
// Decoded files stay for the process: an epoch loop makes the dataset again every epoch.
std::shared_ptr<const FashionMnist::Decoded> decoded(const std::string& images, const std::string& labels);
}  // namespace

FashionMnist::FashionMnist(FashionOptions options, BatchOptions batching, FashionFiles files)
    : BatchIterable("fashion_mnist(" + options.root + "," + options.split + "," + std::to_string(files.n) + "," +
                        std::to_string(batching.batch) + "," + std::to_string(batching.shuffle) + "," +
                        std::to_string(batching.seed) + "," + std::to_string(batching.drop_last) + ")",
                    "fashion_mnist " + options.split, files.n, batching),
      options_(std::move(options)), files_(std::move(files)) {}

void FashionMnist::prepare() {
  if (!data_) data_ = decoded(files_.images, files_.labels);
}

RawBatch FashionMnist::gather(const std::vector<int64_t>& order, int64_t begin, int64_t rows) {
  const int64_t pixels = files_.rows * files_.cols;
  RawBatch b;
  b.samples = rows;
  RawTensor x, y;
  x.dtype = DType::f32;
  x.shape = options_.flatten ? sem::Shape{rows, pixels} : sem::Shape{rows, 1, files_.rows, files_.cols};
  x.bytes.resize(static_cast<size_t>(rows * pixels) * sizeof(float));
  y.dtype = DType::i32;
  y.shape = {rows};
  y.bytes.resize(static_cast<size_t>(rows) * sizeof(int32_t));
  float table[256];
  for (int v = 0; v < 256; ++v) {
    const double unit = v / 255.0;
    table[v] = static_cast<float>(options_.normalize ? (unit - options_.mean) / options_.std : unit);
  }
  auto* xp = reinterpret_cast<float*>(x.bytes.data());
  auto* yp = reinterpret_cast<int32_t*>(y.bytes.data());
  for (int64_t r = 0; r < rows; ++r) {
    const int64_t e = order[static_cast<size_t>(begin + r)];
    const uint8_t* src = data_->images.data() + e * pixels;
    float* dst = xp + r * pixels;
    for (int64_t k = 0; k < pixels; ++k) dst[k] = table[src[k]];
    yp[r] = data_->labels[static_cast<size_t>(e)];
  }
  b.parts.push_back(std::move(x));
  b.parts.push_back(std::move(y));
  return b;
}

namespace {
std::shared_ptr<const FashionMnist::Decoded> decoded(const std::string& images, const std::string& labels) {
  static std::mutex mu;
  static std::map<std::string, std::shared_ptr<const FashionMnist::Decoded>> cache;
  const std::string key = images + "\n" + labels;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = cache.find(key);
    if (it != cache.end()) return it->second;
  }
  auto d = std::make_shared<FashionMnist::Decoded>();
  IdxHeader hi, hl;
  d->images = read_idx_u8(images, hi);
  d->labels = read_idx_u8(labels, hl);
  check_header(images, hi.str());
  check_header(labels, hl.str());
  if (hi.shape.size() != 3 || hl.shape.size() != 1 || hi.shape[0] != hl.shape[0])
    fail("fashion_mnist: '" + images + "' (" + hi.str() + ") and '" + labels + "' (" + hl.str() + ") do not match");
  // A damaged label would index past the logits' classes.
  for (size_t i = 0; i < d->labels.size(); ++i)
    if (d->labels[i] > 9)
      fail("'" + labels + "' is corrupt " + at_byte(hl.data_offset + i, hl.gz) + ": label " +
           std::to_string(d->labels[i]) + ", where Fashion-MNIST's classes are 0 to 9");
  std::lock_guard<std::mutex> lock(mu);
  cache[key] = d;
  return d;
}
}  // namespace

// ---- batches over tensors ---------------------------------------------------------------------

TensorBatches::TensorBatches(std::vector<sem::Tensor> tensors, BatchOptions batching, std::string key)
    : BatchIterable(std::move(key), "batches", tensors.at(0).shape().at(0), batching), tensors_(std::move(tensors)) {}

RawBatch TensorBatches::gather(const std::vector<int64_t>& order, int64_t begin, int64_t rows) {
  RawBatch b;
  b.samples = rows;
  for (const sem::Tensor& t : tensors_) {
    RawTensor r;
    r.dtype = t.dtype();
    r.shape = t.shape();
    r.shape[0] = rows;
    const size_t row_bytes = t.shape()[0] ? t.nbytes() / static_cast<size_t>(t.shape()[0]) : 0;
    r.bytes.resize(row_bytes * static_cast<size_t>(rows));
    const auto* src = static_cast<const uint8_t*>(t.raw());
    for (int64_t i = 0; i < rows; ++i)
      std::memcpy(r.bytes.data() + static_cast<size_t>(i) * row_bytes,
                  src + static_cast<size_t>(order[static_cast<size_t>(begin + i)]) * row_bytes, row_bytes);
    b.parts.push_back(std::move(r));
  }
  return b;
}

}  // namespace spora::runtime::data
