// SIGINT and SIGTERM in the spora program.
//
// install_interrupt_handlers() (tools/main.cpp, at start-up) makes either signal end the
// process at once, wherever it is:
//   - the temporary file of every atomic write in progress (data/files.h) is removed, so a
//     checkpoint, curve, strategy or trace being written keeps its previous contents and no
//     partial file is left; files written before are complete (they were renamed into place);
//   - one line on stderr, `spora: interrupted by SIGINT` (with `while writing 'x.ckpt'; it keeps
//     its previous contents` when a write was cut), except in MPI ranks (mpirun reports) and in
//     forked children;
//   - the process then ends by the signal itself, so the exit status is the shell's 130
//     (SIGINT) or 143 (SIGTERM), no core dump.
// While `spora run --ranks N` waits for mpirun (backends/distributed/launch.cpp), the signal is
// passed on to mpirun (forward_interrupts_to), which stops the ranks; the launcher then ends by
// the same signal.
#pragma once

#include <sys/types.h>

namespace spora::runtime {

void install_interrupt_handlers();
// Forward SIGINT / SIGTERM to `child` instead of ending (0: stop forwarding).
void forward_interrupts_to(pid_t child);
// The last signal forwarded to the latest child (0: none).
int forwarded_interrupt();
// Ends the process by `sig` after the one-line message, as the handler does.
[[noreturn]] void end_by_interrupt(int sig);

}  // namespace spora::runtime
