#include "sim/isolation.h"

#include <fmt/format.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace spora::sim {

namespace {

// The child's answer on the pipe: one status byte ('+' result, '!' error message), then text.
void write_all(int fd, const std::string& data) {
  std::size_t done = 0;
  while (done < data.size()) {
    const ssize_t n = ::write(fd, data.data() + done, data.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<std::size_t>(n);
  }
}

// Reads until the end of the pipe; false when `timeout_seconds` (> 0) passed first.
bool read_all(int fd, double timeout_seconds, std::string& out) {
  using clock = std::chrono::steady_clock;
  const auto deadline = clock::now() + std::chrono::duration<double>(timeout_seconds);
  char buffer[65536];
  for (;;) {
    if (timeout_seconds > 0) {
      const double left = std::chrono::duration<double>(deadline - clock::now()).count();
      if (left <= 0) return false;
      pollfd p{fd, POLLIN, 0};
      const int ready = ::poll(&p, 1, static_cast<int>(left * 1000) + 1);
      if (ready < 0 && errno == EINTR) continue;
      if (ready == 0) continue;  // the loop's clock check decides
    }
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    out.append(buffer, static_cast<std::size_t>(n));
  }
  return true;
}

}  // namespace

std::string run_isolated(const std::function<std::string()>& body, double timeout_seconds) {
  int fds[2];
  if (::pipe(fds) != 0)
    throw SimulationError(fmt::format("cannot create a pipe: {}", std::strerror(errno)));
  std::fflush(nullptr);
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    throw SimulationError(fmt::format("cannot fork the simulation: {}", std::strerror(errno)));
  }
  if (pid == 0) {  // the child: run, answer, and leave without running the parent's atexit work
    ::close(fds[0]);
    std::string answer;
    try {
      answer = "+" + body();
    } catch (const std::exception& e) {
      answer = std::string("!") + e.what();
    } catch (...) {
      answer = "!unknown error in the simulation";
    }
    write_all(fds[1], answer);
    ::close(fds[1]);
    std::fflush(nullptr);
    ::_exit(0);
  }
  ::close(fds[1]);
  std::string answer;
  const bool in_time = read_all(fds[0], timeout_seconds, answer);
  ::close(fds[0]);
  int status = 0;
  if (!in_time) {
    ::kill(pid, SIGKILL);
    while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
    }
    throw SimulationTimeout(
        fmt::format("the simulation did not finish within {:.3g} s", timeout_seconds));
  }
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFSIGNALED(status))
    throw SimulationError(fmt::format("the simulation process died of signal {} ({})",
                                      WTERMSIG(status), strsignal(WTERMSIG(status))));
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || answer.empty())
    throw SimulationError(fmt::format("the simulation process exited with status {}",
                                      WIFEXITED(status) ? WEXITSTATUS(status) : -1));
  if (answer[0] == '!') throw SimulationError(answer.substr(1));
  return answer.substr(1);
}

double read_number(std::istream& in) {
  std::string s;
  in >> s;
  return std::strtod(s.c_str(), nullptr);
}

}  // namespace spora::sim
