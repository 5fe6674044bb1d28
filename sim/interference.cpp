// Communication-computation interference on one device (interference.h).
#include "sim/interference.h"

namespace spora::sim {

namespace sg4 = simgrid::s4u;

void run_compute(const Platform& platform, double seconds, double share) {
  if (share <= 0) {
    sg4::this_actor::sleep_for(seconds);
    return;
  }
  sg4::this_actor::execute(platform.flops_for(sg4::this_actor::get_host(), seconds));
}

CommShare::CommShare(double share) {
  if (share <= 0) return;
  const sg4::Host* host = sg4::this_actor::get_host();
  // Far more work than any step: the Exec runs until the collective ends and cancels it.
  exec_ = sg4::this_actor::exec_init(host->get_speed() * 1e9);
  exec_->set_bound(share * host->get_speed());
  exec_->start();
}

CommShare::~CommShare() {
  if (exec_) exec_->cancel();
}

}  // namespace spora::sim
