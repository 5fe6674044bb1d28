// parse_file / parse_string (lang/parser.h): wires the byte stream, the token source, the
// generated parser with Spora's error strategy and listener, and the AST builder together.
#include "lang/parser.h"

#include <fmt/format.h>

#include "SporaParser.h"
#include "antlr4-runtime.h"
#include "lang/ast_builder.h"
#include "lang/syntax_errors.h"
#include "lang/token_source.h"

namespace spora::lang {

namespace {

// How many grammar rules may be active at once. A bracket costs two rules (expr, primary),
// a prefix operator one, so this admits kMaxBracketDepth brackets with some room. In an
// AddressSanitizer build a frame of the generated expr() takes about 7.5 KiB: 500 of them
// (3.7 MiB) fit an 8 MiB stack with room to spare (1100 do not).
constexpr int kMaxRuleDepth = 500;

struct RuleDepthExceeded {
  antlr4::Token* token;
};

// The generated parser, refusing to recurse deeper than kMaxRuleDepth.
class GuardedParser : public spora_antlr::SporaParser {
 public:
  using SporaParser::enterRecursionRule;
  using SporaParser::SporaParser;

  void enterRule(antlr4::ParserRuleContext* ctx, size_t state, size_t rule) override {
    SporaParser::enterRule(ctx, state, rule);
    check_depth(ctx);
  }
  void enterRecursionRule(antlr4::ParserRuleContext* ctx, size_t state, size_t rule,
                          int precedence) override {
    SporaParser::enterRecursionRule(ctx, state, rule, precedence);
    check_depth(ctx);
  }

 private:
  // depth() walks the context chain: a few dozen steps in ordinary code.
  void check_depth(antlr4::ParserRuleContext* ctx) {
    if (ctx->depth() > kMaxRuleDepth) throw RuleDepthExceeded{getCurrentToken()};
  }
};

}  // namespace

std::unique_ptr<Module> parse_file(SourceManager& sources, int file, DiagnosticEngine& diags) {
  const std::string& text = sources.text(file);
  int errors_before = diags.error_count();

  ByteStream input(text, sources.path(file));
  TokenSource lexer(&input, text, file, diags);
  antlr4::CommonTokenStream tokens(&lexer);
  GuardedParser parser(&tokens);
  SyntaxErrorListener listener(text, file, diags, lexer);
  parser.removeErrorListeners();
  parser.addErrorListener(&listener);
  parser.setErrorHandler(std::make_shared<SyntaxErrorStrategy>(text, file, diags, lexer));

  spora_antlr::SporaParser::File_Context* tree = nullptr;
  try {
    tree = parser.file_();
  } catch (const RuleDepthExceeded& e) {
    diags.error(
        token_range(file, e.token),
        fmt::format("code is nested too deeply (the limit is {} levels)", kMaxNestingDepth));
    return nullptr;
  }
  if (diags.error_count() > errors_before || parser.getNumberOfSyntaxErrors() > 0 ||
      lexer.had_errors()) {
    return nullptr;
  }
  return AstBuilder(text, file, diags).build(tree);
}

std::unique_ptr<Module> parse_string(SourceManager& sources, std::string path, std::string text,
                                     DiagnosticEngine& diags) {
  int file = sources.add(std::move(path), std::move(text));
  return parse_file(sources, file, diags);
}

}  // namespace spora::lang
