// Quantities with units, as written in cluster specs and on the command line.
//
//   text      := number [spaces] [prefix] unit
//   bandwidth    B/s Bps (bytes)  b/s bit/s bps (bits)    prefixes k M G T P E, Ki Mi Gi Ti Pi
//   FLOP rate    FLOP/s FLOPS flop/s flops (any case)      prefixes k M G T P E
//   bytes        B                                         prefixes k M G T P E, Ki Mi Gi Ti Pi
//   duration     s                                         prefixes m u µ n p
// Decimal prefixes are powers of 1000, binary ones of 1024. A bare number is in SI base units.
#include <fmt/format.h>

#include <array>
#include <cctype>
#include <cmath>
#include <cstdlib>
#include <string>
#include <utility>

#include "sim/cluster_spec.h"

namespace spora::sim {

namespace {

struct Prefix {
  std::string_view text;
  double scale;
};

constexpr std::array<Prefix, 12> kLargePrefixes{{{"Ki", 1024.0},
                                                 {"Mi", 1048576.0},
                                                 {"Gi", 1073741824.0},
                                                 {"Ti", 1099511627776.0},
                                                 {"Pi", 1125899906842624.0},
                                                 {"k", 1e3},
                                                 {"K", 1e3},
                                                 {"M", 1e6},
                                                 {"G", 1e9},
                                                 {"T", 1e12},
                                                 {"P", 1e15},
                                                 {"E", 1e18}}};
constexpr std::array<Prefix, 5> kTimePrefixes{
    {{"m", 1e-3}, {"u", 1e-6}, {"\xC2\xB5", 1e-6}, {"n", 1e-9}, {"p", 1e-12}}};

std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front()))) s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.remove_suffix(1);
  return s;
}

// Splits "2.5 GB/s" into 2.5 and "GB/s"; nullopt when there is no finite leading number.
std::optional<std::pair<double, std::string_view>> split_number(std::string_view text) {
  text = trim(text);
  const std::string copy(text);
  char* end = nullptr;
  const double value = std::strtod(copy.c_str(), &end);
  if (end == copy.c_str() || !std::isfinite(value)) return std::nullopt;
  return std::pair{value, trim(text.substr(static_cast<std::size_t>(end - copy.c_str())))};
}

template <std::size_t N>
std::optional<double> with_unit(std::string_view text, const std::array<Prefix, N>& prefixes,
                                std::initializer_list<std::pair<std::string_view, double>> units,
                                bool case_insensitive_unit = false) {
  const auto split = split_number(text);
  if (!split) return std::nullopt;
  const auto [value, unit] = *split;
  if (unit.empty()) return value;
  auto same = [&](std::string_view a, std::string_view b) {
    if (a.size() != b.size()) return false;
    for (std::size_t i = 0; i < a.size(); ++i) {
      const char x = case_insensitive_unit ? static_cast<char>(std::tolower(a[i])) : a[i];
      const char y = case_insensitive_unit ? static_cast<char>(std::tolower(b[i])) : b[i];
      if (x != y) return false;
    }
    return true;
  };
  auto base = [&](std::string_view rest) -> std::optional<double> {
    for (const auto& [name, scale] : units)
      if (same(rest, name)) return scale;
    return std::nullopt;
  };
  if (auto s = base(unit)) return value * *s;
  for (const Prefix& p : prefixes)
    if (unit.substr(0, p.text.size()) == p.text)
      if (auto s = base(unit.substr(p.text.size()))) return value * p.scale * *s;
  return std::nullopt;
}

}  // namespace

std::optional<double> parse_bandwidth(std::string_view text) {
  return with_unit(text, kLargePrefixes,
                   {{"B/s", 1.0}, {"Bps", 1.0}, {"b/s", 0.125}, {"bit/s", 0.125}, {"bps", 0.125}});
}

std::optional<double> parse_flop_rate(std::string_view text) {
  return with_unit(text, kLargePrefixes, {{"flop/s", 1.0}, {"flops", 1.0}},
                   /*case_insensitive_unit=*/true);
}

std::optional<double> parse_bytes(std::string_view text) {
  return with_unit(text, kLargePrefixes, {{"B", 1.0}});
}

std::optional<double> parse_duration(std::string_view text) {
  return with_unit(text, kTimePrefixes, {{"s", 1.0}});
}

std::string format_bandwidth(double v) {
  if (v >= 1e12) return fmt::format("{:g} TB/s", v / 1e12);
  if (v >= 1e9) return fmt::format("{:g} GB/s", v / 1e9);
  if (v >= 1e6) return fmt::format("{:g} MB/s", v / 1e6);
  return fmt::format("{:g} B/s", v);
}

std::string format_duration(double s) {
  if (s == 0) return "0 s";
  if (s < 1e-6) return fmt::format("{:g} ns", s * 1e9);
  if (s < 1e-3) return fmt::format("{:g} us", s * 1e6);
  if (s < 1) return fmt::format("{:g} ms", s * 1e3);
  return fmt::format("{:g} s", s);
}

}  // namespace spora::sim
