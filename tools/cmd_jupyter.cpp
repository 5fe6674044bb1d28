// `spora jupyter install`: registers the Spora kernel with Jupyter (tools/jupyter/spora_kernel.py).
//
// It writes a kernel spec folder, `<kernels>/spora/` with kernel.json and spora_kernel.py:
//   - <kernels> is $JUPYTER_DATA_DIR/kernels, else $XDG_DATA_HOME/jupyter/kernels, else
//     ~/.local/share/jupyter/kernels, where Jupyter looks for a user's kernels; with
//     `--prefix DIR`, DIR/share/jupyter/kernels (a virtual environment's or a system's);
//   - kernel.json runs the script with a Python that imports ipykernel (`--python`, else the
//     first of python3 on PATH and /usr/bin/python3 that does) and passes this spora program's
//     path in SPORA_BIN.
// Both files are written atomically; installing again replaces them.
#include <fmt/format.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <iostream>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "backends/runtime/data/files.h"
#include "lang/diagnostics.h"
#include "tools/commands.h"

namespace spora::tools {

extern const char kJupyterKernelSource[];

namespace {

struct {
  CLI::App* install = nullptr;
  std::string prefix;
  std::string python;
  std::string name = "spora";
} g_jupyter;

// True when `python` runs and imports ipykernel.
bool has_ipykernel(const std::string& python) {
  const pid_t pid = ::fork();
  if (pid < 0) return false;
  if (pid == 0) {
    const char* argv[] = {python.c_str(), "-c", "import ipykernel", nullptr};
    std::freopen("/dev/null", "w", stderr);
    ::execvp(argv[0], const_cast<char* const*>(argv));
    std::_Exit(127);
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) && WEXITSTATUS(status) == 0;
}

// `name` on PATH as an absolute path ("" when absent).
std::string on_path(const std::string& name) {
  const char* path = std::getenv("PATH");
  if (!path) return "";
  std::string dirs = path;
  for (size_t start = 0; start <= dirs.size();) {
    size_t end = dirs.find(':', start);
    if (end == std::string::npos) end = dirs.size();
    const std::filesystem::path p = std::filesystem::path(dirs.substr(start, end - start)) / name;
    if (::access(p.c_str(), X_OK) == 0) return p.string();
    start = end + 1;
  }
  return "";
}

std::string kernels_dir() {
  namespace fs = std::filesystem;
  if (!g_jupyter.prefix.empty())
    return (fs::absolute(g_jupyter.prefix) / "share" / "jupyter" / "kernels").string();
  if (const char* d = std::getenv("JUPYTER_DATA_DIR"); d && *d)
    return (fs::absolute(d) / "kernels").string();
  if (const char* d = std::getenv("XDG_DATA_HOME"); d && *d)
    return (fs::absolute(d) / "jupyter" / "kernels").string();
  const char* home = std::getenv("HOME");
  if (!home || !*home)
    throw lang::UserError("HOME is not set: say where to install the kernel with --prefix DIR "
                          "or JUPYTER_DATA_DIR");
  return (fs::path(home) / ".local" / "share" / "jupyter" / "kernels").string();
}

int install() {
  std::string python = g_jupyter.python;
  if (python.empty()) {
    std::vector<std::string> tried;
    for (const std::string& candidate : {on_path("python3"), std::string("/usr/bin/python3")}) {
      if (candidate.empty()) continue;
      tried.push_back(candidate);
      if (has_ipykernel(candidate)) {
        python = candidate;
        break;
      }
    }
    if (python.empty())
      throw lang::UserError(fmt::format(
          "no Python here imports ipykernel (tried {}): install it (Debian: apt install "
          "python3-ipykernel python3-jupyter-client) or name one with --python",
          fmt::join(tried, ", ")));
  } else if (!has_ipykernel(python)) {
    throw lang::UserError(fmt::format("'{}' cannot import ipykernel (or does not run)", python));
  }
  const std::string self = std::filesystem::read_symlink("/proc/self/exe").string();
  const std::filesystem::path dir = std::filesystem::path(kernels_dir()) / g_jupyter.name;
  const std::string script = (dir / "spora_kernel.py").string();
  const nlohmann::json spec = {
      {"argv", {python, script, "-f", "{connection_file}"}},
      {"display_name", "Spora"},
      {"language", "spora"},
      {"interrupt_mode", "signal"},
      // (PYDEVD_...: ipykernel's debugger, which the kernel does not offer, warns otherwise)
      {"env", {{"SPORA_BIN", self}, {"PYDEVD_DISABLE_FILE_VALIDATION", "1"}}},
  };
  runtime::data::write_files_atomic({{script, kJupyterKernelSource},
                                     {(dir / "kernel.json").string(), spec.dump(1) + "\n"}});
  std::cout << fmt::format(
      "installed the Spora kernel in {}\n  python: {}\n  spora:  {}\n"
      "Choose \"Spora\" in Jupyter, or run `jupyter console --kernel {}`.\n",
      dir.string(), python, self, g_jupyter.name);
  return 0;
}

}  // namespace

CLI::App* add_jupyter_subcommand(CLI::App& app) {
  CLI::App* jupyter = app.add_subcommand("jupyter", "The Spora kernel for Jupyter notebooks");
  jupyter->require_subcommand(1);
  g_jupyter.install = jupyter->add_subcommand(
      "install", "Register the kernel with Jupyter (a cell runs in eager mode and keeps its names)");
  g_jupyter.install->add_option("--prefix", g_jupyter.prefix,
                                "Install into DIR/share/jupyter/kernels (default: the user's "
                                "Jupyter data folder)");
  g_jupyter.install->add_option("--python", g_jupyter.python,
                                "The Python that runs the kernel (it must import ipykernel)");
  g_jupyter.install->add_option("--name", g_jupyter.name, "The kernel's name (default spora)");
  return jupyter;
}

int run_jupyter_subcommand() {
  try {
    return install();
  } catch (const lang::UserError& e) {
    std::cerr << fmt::format("spora jupyter install: error: {}\n", e.what());
    return 1;
  } catch (const std::filesystem::filesystem_error& e) {
    std::cerr << fmt::format("spora jupyter install: error: {}\n", e.what());
    return 1;
  }
}

}  // namespace spora::tools
