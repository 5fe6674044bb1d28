// libFuzzer target over the GEMM choice file (backends/cpu/gemm_choice.h): any text gives the
// choices or nullopt with a line number, never a crash or a sanitizer report; what parses
// prints back to text that parses to the same choices.
#include <cstdlib>
#include <string>
#include <string_view>

#include "backends/cpu/gemm_choice.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace spora::cpu;
  constexpr std::string_view header = "spora-gemm-choices 3 | cpu=fuzz";
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  std::string error;
  const auto parsed = parse_gemm_choices(text, header, &error);
  if (!parsed) {
    if (error.rfind("line ", 0) != 0) std::abort();
    return 0;
  }
  const std::string again = format_gemm_choices(header, *parsed);
  const auto back = parse_gemm_choices(again, header);
  if (!back || back->size() != parsed->size()) std::abort();
  for (size_t i = 0; i < back->size(); ++i)
    if (!((*back)[i].shape == (*parsed)[i].shape) || (*back)[i].lib != (*parsed)[i].lib)
      std::abort();
  return 0;
}
