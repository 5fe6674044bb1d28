#include "semantics/pipeline.h"

#include <fmt/format.h>

#include "semantics/ir/parser.h"

namespace spora::sem {

namespace {
bool ends_with(const std::string& s, const std::string& suffix) {
  return s.size() >= suffix.size() && s.compare(s.size() - suffix.size(), suffix.size(), suffix) == 0;
}
}  // namespace

Compiled compile_file(lang::SourceManager& sources, lang::DiagnosticEngine& diags, const std::string& path,
                      const LowerOptions& options) {
  Compiled out;
  if (ends_with(path, ".ir")) {
    int file;
    try {
      file = sources.load(path);
    } catch (const std::exception& e) {
      diags.error({}, fmt::format("cannot read '{}': {}", path, e.what()));
      return out;
    }
    try {
      out.module = ir::parse_module(sources, file, diags);
    } catch (const lang::CompileError&) {
      out.module.reset();
    }
    if (diags.has_errors()) out.module.reset();
    return out;
  }
  out.program = load_program(sources, path, diags);
  if (!out.program) return out;
  out.module = lower_program(*out.program, diags, options);
  return out;
}

}  // namespace spora::sem
