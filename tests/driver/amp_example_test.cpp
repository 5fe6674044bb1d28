// Mixed-precision training end to end (examples/fashion_mlp_amp.sp in small): the MLP trained
// on a subset of Fashion-MNIST with `spora run --amp O1 --amp-dtype bf16` and with `--amp O2
// --amp-dtype f16` plus std.amp's dynamic loss scaling reaches the f32 run's test accuracy
// within 1 percentage point, and the f16 run's loss scale stays a power of two.
#include <gtest/gtest.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <string>

namespace fs = std::filesystem;

namespace {

const std::string kSpora = std::string(SPORA_BINARY_DIR) + "/bin/spora";

// 200 Adam steps of batch 64 on the first 12800 training images, tested on 2000.
const char* kProgram = R"(
import std.nn
import std.optim
import std.amp

model MLP(hidden: int = 256) {
    param l1 = Dense(784, hidden)
    param l2 = Dense(hidden, 10)
    def forward(x) = l2(relu(l1(x)))
}

def loss(net: MLP, x, y) = cross_entropy(net(x), y)

def main() {
    var net = MLP(hidden=256, seed=0)
    let opt = adam(lr=0.001)
    var state = opt.init(net)
    var scaler = loss_scaler()
    for (x, y) in fashion_mnist("train", batch=64, shuffle=true, seed=0, flatten=true, limit=12800) {
        let (l, g) = scaled_value_and_grad(loss, scaler)(net, x, y)
        (net, state, scaler) = scaler.step(opt, net, g, state)
    }
    var correct = 0.0
    for (x, y) in fashion_mnist("test", batch=1000, flatten=true, limit=2000) {
        correct = correct + sum(cast(argmax(net(x), axis=1) == y, f32))
    }
    print("test_acc", correct / 2000.0, "scale", scaler.scale, "steps", state[0])
}
)";

struct Result {
  int status = -1;
  std::string out;
  double acc = -1, scale = -1, steps = -1;
};

Result run(const std::string& path, const std::string& flags) {
  Result r;
  const std::string cmd = kSpora + " run " + flags + " " + path + " 2>&1";
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) return r;
  std::array<char, 4096> buf;
  size_t n;
  while ((n = fread(buf.data(), 1, buf.size(), p)) > 0) r.out.append(buf.data(), n);
  const int st = ::pclose(p);
  r.status = WIFEXITED(st) ? WEXITSTATUS(st) : -1;
  std::smatch m;
  static const std::regex line(R"(test_acc (\S+) scale (\S+) steps (\S+))");
  if (std::regex_search(r.out, m, line)) {
    r.acc = std::stod(m[1].str());
    r.scale = std::stod(m[2].str());
    r.steps = std::stod(m[3].str());
  }
  return r;
}

TEST(AmpExample, LowPrecisionReachesTheF32Accuracy) {
  const fs::path path =
      fs::temp_directory_path() / ("spora_amp_example_" + std::to_string(::getpid()) + ".sp");
  std::ofstream(path) << kProgram;
  const Result f32 = run(path.string(), "--amp O0");
  const Result bf16 = run(path.string(), "--amp O1 --amp-dtype bf16");
  const Result f16 = run(path.string(), "--amp O2 --amp-dtype f16");
  fs::remove(path);
  for (const Result* r : {&f32, &bf16, &f16}) {
    ASSERT_EQ(r->status, 0) << r->out;
    ASSERT_GE(r->acc, 0) << r->out;
    // Groups with f16/bf16 values run node by node; the kernel generator never sees them.
    EXPECT_EQ(r->out.find("could not be compiled"), std::string::npos) << r->out;
  }
  EXPECT_GT(f32.acc, 0.75) << f32.out;  // it learned something
  EXPECT_NEAR(bf16.acc, f32.acc, 0.01) << "O1 bf16: " << bf16.out << "f32: " << f32.out;
  EXPECT_NEAR(f16.acc, f32.acc, 0.01) << "O2 f16: " << f16.out << "f32: " << f32.out;
  // No step of the f32 run overflows: 200 updates, the scale untouched (< 2000 steps).
  EXPECT_EQ(f32.steps, 200) << f32.out;
  EXPECT_EQ(f32.scale, 65536) << f32.out;
  // The f16 run's scale is a power of two (halved on overflow, never grown in 200 steps).
  int e = 0;
  EXPECT_EQ(std::frexp(f16.scale, &e), 0.5) << f16.out;
  EXPECT_LE(f16.scale, 65536) << f16.out;
}

}  // namespace
