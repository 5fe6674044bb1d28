// `spora lsp`: the Language Server Protocol (3.17) over stdio, JSON-RPC with Content-Length
// framing, for .sp files. What it offers:
//
//   diagnostics     on open and on every change (full text sync): the errors and warnings of
//                   `spora check` (parse, types, shapes), with their notes as related
//                   information; nothing runs (LowerOptions::never_eager: set_mode("eager") is
//                   checked as graph mode);
//   hover           a function's or model's header line and the comment above it; the type of
//                   a name as the lowering bound or read it (`x: f32[64,784]`; every type when
//                   its function was specialised several times); a primitive's signature and
//                   doc;
//   definition      of a function, model or module-level let, in the file or in std;
//   completion      primitives with their signatures, the functions and models of the file and
//                   its imports, keywords;
//   documentSymbol  functions, models (with fields and methods) and module-level lets.
//
// Positions: LSP lines and characters are 0-based, Spora's 1-based; characters count bytes,
// which equal UTF-16 units on ASCII lines (the language's identifiers are ASCII). Navigation
// uses the last text that parsed, so it keeps working while a line is half typed. A malformed
// message gets a JSON-RPC error, never a crash.
#include "tools/cmd_lsp.h"

#include <fmt/format.h>
#include <unistd.h>

#include <cstdio>
#include <functional>
#include <iostream>
#include <map>
#include <memory>
#include <nlohmann/json.hpp>
#include <optional>
#include <set>
#include <string>

#include "lang/ast.h"
#include "lang/diagnostics.h"
#include "semantics/lower.h"
#include "semantics/registry.h"
#include "tools/commands.h"

namespace spora::tools {

namespace {

using json = nlohmann::json;

// JSON-RPC error codes (LSP).
constexpr int kParseError = -32700;
constexpr int kInvalidRequest = -32600;
constexpr int kMethodNotFound = -32601;
constexpr int kInternalError = -32603;

// ---- documents ----------------------------------------------------------------------------

std::string uri_to_path(const std::string& uri) {
  std::string s = uri.rfind("file://", 0) == 0 ? uri.substr(7) : uri;
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size() && std::isxdigit(static_cast<unsigned char>(s[i + 1])) &&
        std::isxdigit(static_cast<unsigned char>(s[i + 2]))) {
      out += static_cast<char>(std::stoi(s.substr(i + 1, 2), nullptr, 16));
      i += 2;
    } else {
      out += s[i];
    }
  }
  return out;
}

std::string path_to_uri(const std::string& path) {
  std::string out = "file://";
  for (unsigned char c : path) {
    if (std::isalnum(c) || std::string("/-_.~").find(static_cast<char>(c)) != std::string::npos)
      out += static_cast<char>(c);
    else
      out += fmt::format("%{:02X}", c);
  }
  return out;
}

// One analysis of a document's text: the sources (which own every file's text and give the
// ranges their meaning), the program when it parsed, and the diagnostics.
struct Analysis {
  lang::SourceManager sources;
  std::unique_ptr<sem::Program> program;
  std::vector<lang::Diagnostic> diagnostics;
  int main_file = 0;
  // The names of the main file the lowering bound or read, by the (line, col) their range
  // starts at, with their types (one per specialisation of the function around them, in
  // order, without repeats).
  std::map<std::pair<int, int>, std::vector<std::string>> names;
};

std::unique_ptr<Analysis> analyse(const std::string& path, const std::string& text) {
  auto a = std::make_unique<Analysis>();
  lang::DiagnosticEngine diags(a->sources);
  try {
    a->program = sem::load_program_text(a->sources, path, text, diags);
    if (a->program) {
      sem::LowerOptions options;
      options.check_all = true;
      options.never_eager = true;
      Analysis* out = a.get();
      options.on_name = [out](lang::SourceRange r, const std::string& type) {
        if (r.begin.file != out->main_file) return;
        std::vector<std::string>& types = out->names[{r.begin.line, r.begin.col}];
        if (std::find(types.begin(), types.end(), type) == types.end() && types.size() < 8)
          types.push_back(type);
      };
      sem::lower_program(*a->program, diags, options);
    }
  } catch (const lang::CompileError&) {
    // reported to diags
  } catch (const std::exception& e) {
    diags.error({}, fmt::format("internal error while checking: {}", e.what()));
  }
  a->diagnostics = diags.diagnostics();
  return a;
}

struct Document {
  std::string path;
  std::string text;
  std::unique_ptr<Analysis> parsed;  // the latest analysis whose program parsed (navigation)
};

// ---- positions and words ------------------------------------------------------------------

json position(int line, int col) {  // 1-based -> 0-based
  return {{"line", std::max(0, line - 1)}, {"character", std::max(0, col - 1)}};
}

json range_json(const lang::SourceRange& r) {
  if (!r.valid()) return {{"start", position(1, 1)}, {"end", position(1, 1)}};
  const lang::SourceLoc end = r.end.valid() ? r.end : r.begin;
  return {{"start", position(r.begin.line, r.begin.col)}, {"end", position(end.line, end.col)}};
}

std::string line_of(const std::string& text, int line0) {
  size_t start = 0;
  for (int l = 0; l < line0; ++l) {
    start = text.find('\n', start);
    if (start == std::string::npos) return "";
    ++start;
  }
  const size_t end = text.find('\n', start);
  return text.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

bool word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// The identifier at (line0, char0), and the name before a dot in front of it ("nn" in nn.Dense).
std::pair<std::string, std::string> word_at(const std::string& text, int line0, int char0) {
  const std::string l = line_of(text, line0);
  int b = std::min<int>(char0, static_cast<int>(l.size()));
  int e = b;
  while (b > 0 && word_char(l[static_cast<size_t>(b - 1)])) --b;
  while (e < static_cast<int>(l.size()) && word_char(l[static_cast<size_t>(e)])) ++e;
  std::string qualifier;
  if (b > 1 && l[static_cast<size_t>(b - 1)] == '.') {
    int q = b - 1;
    while (q > 0 && word_char(l[static_cast<size_t>(q - 1)])) --q;
    qualifier = l.substr(static_cast<size_t>(q), static_cast<size_t>(b - 1 - q));
  }
  return {l.substr(static_cast<size_t>(b), static_cast<size_t>(e - b)), qualifier};
}

// ---- declarations -------------------------------------------------------------------------

struct Decl {
  enum class Kind { Function, Model, Global } kind;
  std::string name;
  std::string module;  // "" for the main file, "std.nn", ...
  lang::SourceRange range, name_range;
};

std::vector<Decl> declarations(const Analysis& a) {
  std::vector<Decl> out;
  if (!a.program) return out;
  for (size_t m = 0; m < a.program->modules.size(); ++m) {
    const lang::Module& mod = *a.program->modules[m];
    const std::string& name = a.program->module_names[m];
    for (const auto& f : mod.functions)
      out.push_back({Decl::Kind::Function, f->name, name, f->range, f->name_range});
    for (const auto& md : mod.models)
      out.push_back({Decl::Kind::Model, md->name, name, md->range, md->name_range});
    for (const auto& g : mod.globals)
      if (g->kind == lang::StmtKind::Let && !g->pattern.is_tuple)
        out.push_back({Decl::Kind::Global, g->pattern.name, name, g->range, g->pattern.range});
  }
  return out;
}

// The module a qualifier names in the main file ("nn" for `import std.nn as nn`, "std.nn").
std::string module_of_qualifier(const Analysis& a, const std::string& qualifier) {
  if (qualifier.empty() || !a.program) return "";
  for (const auto& imp : a.program->modules[0]->imports) {
    std::string full;
    for (size_t k = 0; k < imp.path.size(); ++k) full += (k ? "." : "") + imp.path[k];
    if (imp.alias == qualifier || (imp.alias.empty() && imp.path.back() == qualifier)) return full;
  }
  return "";
}

const Decl* find_decl(const std::vector<Decl>& decls, const std::string& word,
                      const std::string& module) {
  const Decl* any = nullptr;
  for (const Decl& d : decls) {
    if (d.name != word) continue;
    if (!module.empty()) {
      if (d.module == module) return &d;
      continue;
    }
    if (d.module.empty()) return &d;  // the file's own first
    if (!any) any = &d;
  }
  return any;
}

// The header line of a declaration, with the comment lines right above it.
std::string header_of(const Analysis& a, const Decl& d) {
  const int file = d.range.begin.file;
  std::string comment;
  for (int l = d.range.begin.line - 1; l >= 1; --l) {
    std::string_view t = a.sources.line_text(file, l);
    const size_t first = t.find_first_not_of(' ');
    if (first == std::string_view::npos || t[first] != '#') break;
    comment = std::string(t.substr(first)) + "\n" + comment;
  }
  const std::string line(a.sources.line_text(file, d.range.begin.line));
  return fmt::format("```spora\n{}```\n```spora\n{}\n```{}", comment, line,
                     d.module.empty() ? "" : "\n(" + d.module + ")");
}

// ---- the server ---------------------------------------------------------------------------

class Server {
 public:
  explicit Server(std::function<void(const std::string&)> send) : send_(std::move(send)) {}

  // One message; false once `exit` arrived.
  bool handle(const std::string& body) {
    json msg;
    try {
      msg = json::parse(body);
    } catch (const std::exception& e) {
      reply_error(nullptr, kParseError, std::string("parse error: ") + e.what());
      return true;
    }
    if (!msg.is_object() || !msg.contains("method") || !msg["method"].is_string()) {
      if (msg.is_object() && msg.contains("id"))
        reply_error(msg["id"], kInvalidRequest, "no method");
      return true;
    }
    const std::string method = msg["method"];
    const json id = msg.contains("id") ? msg["id"] : json();
    const json params = msg.contains("params") ? msg["params"] : json::object();
    try {
      if (method == "exit") return false;
      std::optional<json> result = dispatch(method, params);
      if (!id.is_null()) {
        if (result)
          reply(id, *result);
        else
          reply_error(id, kMethodNotFound, "unknown method " + method);
      }
    } catch (const std::exception& e) {
      if (!id.is_null()) reply_error(id, kInternalError, e.what());
    }
    return true;
  }

  bool shut_down() const { return shutdown_; }

 private:
  std::function<void(const std::string&)> send_;
  std::map<std::string, Document> docs_;
  bool shutdown_ = false;

  void write(const json& j) { send_(j.dump()); }
  void reply(const json& id, const json& result) {
    write({{"jsonrpc", "2.0"}, {"id", id}, {"result", result}});
  }
  void reply_error(const json& id, int code, const std::string& message) {
    write({{"jsonrpc", "2.0"}, {"id", id}, {"error", {{"code", code}, {"message", message}}}});
  }
  void notify(const std::string& method, const json& params) {
    write({{"jsonrpc", "2.0"}, {"method", method}, {"params", params}});
  }

  // The result of a request, json() for a notification it handles; nullopt: unknown method.
  std::optional<json> dispatch(const std::string& method, const json& params) {
    if (method == "initialize") return initialize();
    if (method == "initialized" || method == "$/cancelRequest" || method == "$/setTrace")
      return json();
    if (method == "shutdown") {
      shutdown_ = true;
      return json();
    }
    if (method == "textDocument/didOpen") {
      const json& td = params.at("textDocument");
      update(td.at("uri"), td.at("text"));
      return json();
    }
    if (method == "textDocument/didChange") {
      const json& changes = params.at("contentChanges");
      if (!changes.empty()) update(params.at("textDocument").at("uri"), changes.back().at("text"));
      return json();
    }
    if (method == "textDocument/didSave") return json();
    if (method == "textDocument/didClose") {
      const std::string uri = params.at("textDocument").at("uri");
      docs_.erase(uri);
      notify("textDocument/publishDiagnostics", {{"uri", uri}, {"diagnostics", json::array()}});
      return json();
    }
    if (method == "textDocument/hover") return hover(params);
    if (method == "textDocument/definition") return definition(params);
    if (method == "textDocument/completion") return completion(params);
    if (method == "textDocument/documentSymbol") return symbols(params);
    if (method.rfind("$/", 0) == 0) return json();  // optional notifications
    return std::nullopt;
  }

  static json initialize() {
    return {{"capabilities",
             {{"textDocumentSync", {{"openClose", true}, {"change", 1}, {"save", true}}},
              {"hoverProvider", true},
              {"definitionProvider", true},
              {"completionProvider", {{"triggerCharacters", json::array({"."})}}},
              {"documentSymbolProvider", true}}},
            {"serverInfo", {{"name", "spora"}}}};
  }

  void update(const std::string& uri, const std::string& text) {
    Document& d = docs_[uri];
    d.path = uri_to_path(uri);
    d.text = text;
    std::unique_ptr<Analysis> a = analyse(d.path, text);
    publish(uri, *a);
    if (a->program) d.parsed = std::move(a);
  }

  void publish(const std::string& uri, const Analysis& a) {
    json list = json::array();
    const lang::Diagnostic* owner = nullptr;  // the error or warning a note belongs to
    json* owner_json = nullptr;
    for (const lang::Diagnostic& d : a.diagnostics) {
      const bool here = !d.range.valid() || d.range.begin.file == a.main_file;
      if (d.severity == lang::Severity::Note) {
        if (owner && owner_json && d.range.valid()) {
          (*owner_json)["relatedInformation"].push_back(
              {{"location",
                {{"uri", path_to_uri(a.sources.path(d.range.begin.file))},
                 {"range", range_json(d.range)}}},
               {"message", d.message}});
        }
        continue;
      }
      if (!here) {  // an error inside an imported module: shown at the file's start
        owner = nullptr;
        owner_json = nullptr;
        list.push_back(
            {{"range", range_json({})},
             {"severity", d.severity == lang::Severity::Error ? 1 : 2},
             {"source", "spora"},
             {"message", fmt::format("{}:{}:{}: {}", a.sources.path(d.range.begin.file),
                                     d.range.begin.line, d.range.begin.col, d.message)}});
        continue;
      }
      list.push_back({{"range", range_json(d.range)},
                      {"severity", d.severity == lang::Severity::Error ? 1 : 2},
                      {"source", "spora"},
                      {"message", d.message}});
      owner = &d;
      owner_json = &list.back();
    }
    notify("textDocument/publishDiagnostics", {{"uri", uri}, {"diagnostics", list}});
  }

  const Document* document(const json& params) const {
    auto it = docs_.find(params.at("textDocument").at("uri").get<std::string>());
    return it == docs_.end() ? nullptr : &it->second;
  }

  json hover(const json& params) const {
    const Document* d = document(params);
    if (!d) return json();
    const int line0 = params.at("position").at("line");
    const int char0 = params.at("position").at("character");
    const auto [word, qualifier] = word_at(d->text, line0, char0);
    if (word.empty()) return json();
    if (d->parsed) {
      const std::vector<Decl> decls = declarations(*d->parsed);
      if (const Decl* decl = find_decl(decls, word, module_of_qualifier(*d->parsed, qualifier)))
        return {{"contents", {{"kind", "markdown"}, {"value", header_of(*d->parsed, *decl)}}}};
      // A name the lowering bound or read here (its range starts with the word under the
      // cursor): its type.
      const std::string line = line_of(d->text, line0);
      for (const auto& [begin, entry] : d->parsed->names) {
        const std::vector<std::string>& types = entry;
        const int start = begin.second - 1;
        if (begin.first != line0 + 1 || char0 < start ||
            char0 >= start + static_cast<int>(word.size()) ||
            line.compare(static_cast<size_t>(start), word.size(), word) != 0)
          continue;
        std::string shown;
        for (const std::string& t : types) shown += (shown.empty() ? "" : " | ") + t;
        return {
            {"contents",
             {{"kind", "markdown"}, {"value", fmt::format("```spora\n{}: {}\n```", word, shown)}}}};
      }
    }
    if (const sem::Primitive* p = sem::Registry::instance().find(word))
      return {
          {"contents",
           {{"kind", "markdown"},
            {"value", fmt::format("```spora\n{}\n```\n{} (primitive, {})", primitive_signature(*p),
                                  primitive_description(*p), p->family)}}}};
    return json();
  }

  json definition(const json& params) const {
    const Document* d = document(params);
    if (!d || !d->parsed) return json();
    const auto [word, qualifier] =
        word_at(d->text, params.at("position").at("line"), params.at("position").at("character"));
    const std::vector<Decl> decls = declarations(*d->parsed);
    const Decl* decl = find_decl(decls, word, module_of_qualifier(*d->parsed, qualifier));
    if (!decl) return json();
    const int file = decl->name_range.begin.file;
    const std::string uri = file == d->parsed->main_file
                                ? params.at("textDocument").at("uri").get<std::string>()
                                : path_to_uri(d->parsed->sources.path(file));
    return {{"uri", uri}, {"range", range_json(decl->name_range)}};
  }

  json completion(const json& params) const {
    json items = json::array();
    std::set<std::string> seen;
    auto add = [&](const std::string& label, int kind, const std::string& detail,
                   const std::string& doc) {
      if (!seen.insert(label).second) return;
      json item = {{"label", label}, {"kind", kind}, {"detail", detail}};
      if (!doc.empty()) item["documentation"] = doc;
      items.push_back(item);
    };
    // Keywords first: `if` and `while` are also the names of control-flow rows.
    for (const char* k : {"def", "model", "param", "let", "var", "if", "else", "for", "in", "while",
                          "return", "import", "as", "fn", "true", "false", "none"})
      add(k, 14, "keyword", "");
    const Document* d = document(params);
    if (d && d->parsed) {
      for (const Decl& decl : declarations(*d->parsed)) {
        const int kind = decl.kind == Decl::Kind::Model      ? 7    // Class
                         : decl.kind == Decl::Kind::Function ? 3    // Function
                                                             : 21;  // Constant
        const std::string line(
            d->parsed->sources.line_text(decl.range.begin.file, decl.range.begin.line));
        add(decl.name, kind, line, decl.module);
      }
    }
    for (const sem::Primitive* p : sem::Registry::instance().all())
      add(p->name, 3, primitive_signature(*p), primitive_description(*p));
    return {{"isIncomplete", false}, {"items", items}};
  }

  json symbols(const json& params) const {
    json out = json::array();
    const Document* d = document(params);
    if (!d || !d->parsed || !d->parsed->program) return out;
    const lang::Module& mod = *d->parsed->program->modules[0];
    auto symbol = [](const std::string& name, int kind, const lang::SourceRange& range,
                     const lang::SourceRange& selection) {
      return json{{"name", name},
                  {"kind", kind},
                  {"range", range_json(range)},
                  {"selectionRange", range_json(selection.valid() ? selection : range)}};
    };
    for (const auto& [kind, index] : mod.order) {
      const size_t i = static_cast<size_t>(index);
      if (kind == 0) {
        const lang::FuncDef& f = *mod.functions[i];
        out.push_back(symbol(f.name, 12, f.range, f.name_range));  // Function
      } else if (kind == 1) {
        const lang::ModelDef& m = *mod.models[i];
        json s = symbol(m.name, 5, m.range, m.name_range);  // Class
        s["children"] = json::array();
        for (const lang::FieldDecl& f : m.fields)
          s["children"].push_back(symbol(f.name, 8, f.range, f.range));  // Field
        for (const auto& fn : m.methods)
          s["children"].push_back(symbol(fn->name, 6, fn->range, fn->name_range));  // Method
        out.push_back(s);
      } else if (kind == 2) {
        const lang::Stmt& g = *mod.globals[i];
        if (g.kind == lang::StmtKind::Let && !g.pattern.is_tuple)
          out.push_back(symbol(g.pattern.name, 14, g.range, g.pattern.range));  // Constant
      }
    }
    return out;
  }
};

// One framed message from `in` into `body`; false at the end of the input.
bool read_message(std::istream& in, std::string& body) {
  std::string line;
  long long length = -1;
  for (;;) {
    if (!std::getline(in, line)) return false;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.empty()) {
      if (length >= 0) break;
      continue;  // stray blank line before a header
    }
    const std::string key = "content-length:";
    std::string lower = line.substr(0, std::min(line.size(), key.size()));
    for (char& c : lower) c = static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    if (lower == key) {
      try {
        length = std::stoll(line.substr(key.size()));
      } catch (const std::exception&) {
        length = -1;
      }
      if (length < 0 || length > (64ll << 20)) return false;  // 64 MiB: not an editor's buffer
    }
  }
  body.assign(static_cast<size_t>(length), '\0');
  in.read(body.data(), length);
  return in.gcount() == length;
}

}  // namespace

int serve_lsp(std::istream& in, const std::function<void(const std::string&)>& send) {
  Server server([&send](const std::string& body) {
    send(fmt::format("Content-Length: {}\r\n\r\n{}", body.size(), body));
  });
  std::string body;
  while (read_message(in, body))
    if (!server.handle(body)) return server.shut_down() ? 0 : 1;
  return 1;
}

CLI::App* add_lsp_subcommand(CLI::App& app) {
  return app.add_subcommand("lsp",
                            "A Language Server Protocol server over stdio for .sp files (for "
                            "editors: diagnostics, hover, definition, completion, symbols)");
}

int run_lsp_subcommand() {
  // The protocol owns the real stdout; anything else the libraries print goes to stderr.
  std::fflush(stdout);
  std::cout.flush();
  const int protocol = ::dup(STDOUT_FILENO);
  if (protocol < 0 || ::dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
    std::cerr << "spora lsp: cannot set up stdout\n";
    return 1;
  }
  std::ios::sync_with_stdio(false);
  return serve_lsp(std::cin, [protocol](const std::string& bytes) {
    size_t done = 0;
    while (done < bytes.size()) {
      const ssize_t n = ::write(protocol, bytes.data() + done, bytes.size() - done);
      if (n <= 0) return;
      done += static_cast<size_t>(n);
    }
  });
}

}  // namespace spora::tools
