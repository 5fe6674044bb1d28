// SIGINT / SIGTERM handling (see signals.h). Only async-signal-safe calls in the handler.
#include "backends/runtime/signals.h"

#include <signal.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>

#include "backends/runtime/data/files.h"

namespace spora::runtime {

namespace {

std::atomic<pid_t> g_forward{0};
std::atomic<int> g_forwarded{0};
pid_t g_installer = 0;
bool g_in_rank = false;

void put(const char* s) {
  size_t n = std::strlen(s);
  while (n > 0) {
    const ssize_t k = ::write(STDERR_FILENO, s, n);
    if (k < 0 && errno == EINTR) continue;
    if (k <= 0) return;
    s += k;
    n -= static_cast<size_t>(k);
  }
}

void report_and_raise(int sig) {
  const char* cut = data::discard_unfinished_writes();
  if (::getpid() == g_installer && !g_in_rank) {
    put(sig == SIGINT ? "spora: interrupted by SIGINT" : "spora: interrupted by SIGTERM");
    if (cut) {
      put(" while writing '");
      put(cut);
      put("'; it keeps its previous contents");
    }
    put("\n");
  }
  // End by the signal itself (it is blocked until this handler returns).
  struct sigaction dfl {};
  dfl.sa_handler = SIG_DFL;
  sigemptyset(&dfl.sa_mask);
  ::sigaction(sig, &dfl, nullptr);
  ::raise(sig);
}

void on_interrupt(int sig) {
  const int saved_errno = errno;
  if (const pid_t child = g_forward.load(); child > 0) {
    g_forwarded.store(sig);
    ::kill(child, sig);
    errno = saved_errno;
    return;
  }
  report_and_raise(sig);
  errno = saved_errno;
}

}  // namespace

void install_interrupt_handlers() {
  g_installer = ::getpid();
  g_in_rank =
      std::getenv("OMPI_COMM_WORLD_SIZE") || std::getenv("PMI_SIZE") || std::getenv("PMIX_RANK");
  struct sigaction sa {};
  sa.sa_handler = on_interrupt;
  sigemptyset(&sa.sa_mask);
  sigaddset(&sa.sa_mask, SIGINT);
  sigaddset(&sa.sa_mask, SIGTERM);
  sa.sa_flags = 0;  // no SA_RESTART: a waitpid for mpirun sees EINTR and waits again
  for (int sig : {SIGINT, SIGTERM}) {
    struct sigaction old {};
    ::sigaction(sig, nullptr, &old);
    if (old.sa_handler == SIG_IGN)
      continue;  // started ignoring it (nohup, a background job's SIGINT)
    ::sigaction(sig, &sa, nullptr);
  }
}

void forward_interrupts_to(pid_t child) {
  if (child > 0) g_forwarded.store(0);
  g_forward.store(child);
}

int forwarded_interrupt() { return g_forwarded.load(); }

void end_by_interrupt(int sig) {
  report_and_raise(sig);  // raises sig, blocked or not
  sigset_t set;
  sigemptyset(&set);
  sigaddset(&set, sig);
  ::sigprocmask(SIG_UNBLOCK, &set, nullptr);
  std::_Exit(128 + sig);
}

}  // namespace spora::runtime
