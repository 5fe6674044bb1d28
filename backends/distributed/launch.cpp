// spawn_mpirun, MpiWorld: see launch.h.
#include "backends/distributed/launch.h"

#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <sstream>

#include "backends/comm/mpi_comm.h"
#include "backends/runtime/signals.h"
#include "lang/diagnostics.h"

namespace spora::distributed {

bool under_mpi() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMI_SIZE") || std::getenv("PMIX_RANK");
}

int mpi_world_size() {
  for (const char* name : {"OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE"})
    if (const char* v = std::getenv(name)) {
      const int n = std::atoi(v);
      if (n > 0) return n;
    }
  return 0;
}

namespace {
int env_int(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::atoi(v) : -1;
}
}  // namespace

int mpi_local_rank() { return env_int("OMPI_COMM_WORLD_LOCAL_RANK"); }
int mpi_local_size() { return env_int("OMPI_COMM_WORLD_LOCAL_SIZE"); }

int spawn_mpirun(int ranks, const std::vector<std::string>& args, const LaunchOptions& o) {
  char self[4096];
  const ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  if (len <= 0) throw lang::UserError("cannot find the spora executable (/proc/self/exe)");
  self[len] = '\0';
  std::vector<std::string> argv = {"mpirun",
                                   "--oversubscribe",
                                   "--allow-run-as-root",
                                   "-np",
                                   std::to_string(ranks),
                                   "-x",
                                   "OMP_NUM_THREADS=1",
                                   "-x",
                                   "OPENBLAS_NUM_THREADS=1"};
  try {
    comm::collective_timeout_seconds();  // checked before any rank starts
  } catch (const comm::CommError& e) {
    throw lang::UserError(e.what());
  }
  if (std::getenv("SPORA_COLLECTIVE_TIMEOUT")) {  // for ranks on other hosts
    argv.push_back("-x");
    argv.push_back("SPORA_COLLECTIVE_TIMEOUT");
  }
  if (o.tag_output) argv.push_back("--tag-output");
  if (!o.hostfile.empty()) {
    argv.push_back("--hostfile");
    argv.push_back(o.hostfile);
  }
  argv.insert(argv.end(), o.mpirun_args.begin(), o.mpirun_args.end());
  if (const char* extra = std::getenv("SPORA_MPIRUN_ARGS")) {
    std::istringstream words(extra);
    for (std::string w; words >> w;) argv.push_back(w);
  }
  argv.push_back(self);
  argv.insert(argv.end(), args.begin(), args.end());
  std::vector<char*> c;
  for (std::string& a : argv) c.push_back(a.data());
  c.push_back(nullptr);
  std::fflush(stdout);
  std::fflush(stderr);
  // SIGINT / SIGTERM from fork on go to mpirun, which stops the ranks (runtime/signals.h).
  sigset_t interrupts, before;
  sigemptyset(&interrupts);
  sigaddset(&interrupts, SIGINT);
  sigaddset(&interrupts, SIGTERM);
  sigprocmask(SIG_BLOCK, &interrupts, &before);
  const pid_t pid = fork();
  if (pid < 0) {
    sigprocmask(SIG_SETMASK, &before, nullptr);
    throw lang::UserError("cannot start mpirun (fork failed)");
  }
  if (pid == 0) {
    sigprocmask(SIG_SETMASK, &before, nullptr);
    execvp("mpirun", c.data());
    std::fprintf(stderr, "spora run: error: cannot run mpirun: %s\n", std::strerror(errno));
    _exit(127);
  }
  runtime::forward_interrupts_to(pid);
  sigprocmask(SIG_SETMASK, &before, nullptr);
  int status = 0;
  while (waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  runtime::forward_interrupts_to(0);
  if (const int sig = runtime::forwarded_interrupt()) runtime::end_by_interrupt(sig);
  return WIFEXITED(status) ? WEXITSTATUS(status) : 1;
}

}  // namespace spora::distributed
