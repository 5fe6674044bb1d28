#include "sim/transformer/gpt_config.h"

#include <fmt/format.h>

namespace spora::sim::transformer {

std::string_view recompute_name(Recompute r) {
  switch (r) {
    case Recompute::None:
      return "none";
    case Recompute::Selective:
      return "selective";
    case Recompute::Full:
      return "full";
  }
  return "?";
}

Recompute parse_recompute(const std::string& name) {
  if (name == "none") return Recompute::None;
  if (name == "selective") return Recompute::Selective;
  if (name == "full") return Recompute::Full;
  throw GptConfigError(
      fmt::format("--recompute: expected none, selective or full, got '{}'", name));
}

namespace {
void require_positive(int64_t v, const char* option) {
  if (v < 1) throw GptConfigError(fmt::format("{} must be a positive integer, got {}", option, v));
}
}  // namespace

void resolve_parallel(const GptModel& m, GptParallel& p, int64_t gpus) {
  require_positive(m.hidden, "--hidden");
  require_positive(m.layers, "--layers");
  require_positive(m.heads, "--heads");
  require_positive(m.vocab, "--vocab");
  require_positive(m.seq, "--seq");
  require_positive(p.global_batch, "--batch");
  require_positive(p.tp, "--tp");
  require_positive(p.pp, "--pp");
  require_positive(p.virtual_stages, "--virtual-stages");
  if (m.hidden % m.heads != 0)
    throw GptConfigError(fmt::format("--heads {} does not divide --hidden {}", m.heads, m.hidden));
  if (m.heads % p.tp != 0)
    throw GptConfigError(fmt::format("--tp {} does not divide --heads {}", p.tp, m.heads));
  if (m.vocab % p.tp != 0)
    throw GptConfigError(fmt::format("--tp {} does not divide --vocab {}", p.tp, m.vocab));
  if (m.layers % p.pp != 0)
    throw GptConfigError(fmt::format("--pp {} does not divide --layers {}", p.pp, m.layers));
  if (m.layers % (p.pp * p.virtual_stages) != 0)
    throw GptConfigError(
        fmt::format("--pp {} x --virtual-stages {} = {} does not divide --layers {}", p.pp,
                    p.virtual_stages, p.pp * p.virtual_stages, m.layers));
  if (p.virtual_stages > 1 && p.pp == 1)
    throw GptConfigError("--virtual-stages needs --pp of at least 2");
  if (p.zero < 0 || p.zero > 3)
    throw GptConfigError(fmt::format("--zero: expected 0, 1, 2 or 3, got {}", p.zero));
  if (p.precision != "bf16" && p.precision != "f16")
    throw GptConfigError(fmt::format("--precision: expected bf16 or f16, got '{}'", p.precision));
  if (p.dp == 0) {
    if (gpus % (p.tp * p.pp) != 0)
      throw GptConfigError(fmt::format("tp x pp = {} x {} = {} does not divide --gpus {}", p.tp,
                                       p.pp, p.tp * p.pp, gpus));
    p.dp = gpus / (p.tp * p.pp);
  }
  require_positive(p.dp, "--dp");
  if (p.gpus() != gpus)
    throw GptConfigError(fmt::format("tp x pp x dp = {} x {} x {} = {} GPUs, but --gpus is {}",
                                     p.tp, p.pp, p.dp, p.gpus(), gpus));
  if (p.global_batch % p.dp != 0)
    throw GptConfigError(fmt::format("--dp {} does not divide --batch {}", p.dp, p.global_batch));
  if (p.micro_batch != 0) check_micro_batch(p, p.micro_batch);
}

void check_micro_batch(const GptParallel& p, int64_t b) {
  require_positive(b, "--micro-batch");
  const int64_t per_replica = p.global_batch / p.dp;
  if (per_replica % b != 0)
    throw GptConfigError(
        fmt::format("--micro-batch {} does not divide the {} sequences per data-parallel replica",
                    b, per_replica));
  const int64_t m = per_replica / b;
  if (p.virtual_stages > 1 && m % p.pp != 0)
    throw GptConfigError(fmt::format(
        "the interleaved schedule needs the micro-batch count ({}) to be a multiple of --pp {}", m,
        p.pp));
}

double layer_parameter_count(const GptModel& m) {
  const double h = static_cast<double>(m.hidden);
  return 12 * h * h + 13 * h;
}

double parameter_count(const GptModel& m) {
  const double h = static_cast<double>(m.hidden), l = static_cast<double>(m.layers);
  return l * layer_parameter_count(m) + static_cast<double>(m.vocab + m.seq) * h;
}

double megatron_model_flops(const GptModel& m, int64_t global_batch, Recompute recompute) {
  const double B = static_cast<double>(global_batch), s = static_cast<double>(m.seq);
  const double l = static_cast<double>(m.layers), h = static_cast<double>(m.hidden);
  const double V = static_cast<double>(m.vocab);
  if (recompute == Recompute::Full)
    return 96 * B * s * l * h * h * (1 + s / (6 * h) + V / (16 * l * h));
  return 72 * B * s * l * h * h * (1 + s / (6 * h) + V / (12 * l * h));
}

}  // namespace spora::sim::transformer
