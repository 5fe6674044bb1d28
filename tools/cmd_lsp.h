// `spora lsp`: a Language Server Protocol server over stdio for .sp files (cmd_lsp.cpp).
#pragma once

#include <CLI/CLI.hpp>
#include <functional>
#include <iosfwd>
#include <string>

namespace spora::tools {

CLI::App* add_lsp_subcommand(CLI::App& app);
int run_lsp_subcommand();
// The server loop: framed messages from `in`, framed replies and notifications to `send` (the
// subcommand: stdin and the real stdout). Returns the exit status LSP prescribes: 0 after
// shutdown then exit, 1 on exit without shutdown or at the end of the input.
int serve_lsp(std::istream& in, const std::function<void(const std::string&)>& send);

}  // namespace spora::tools
