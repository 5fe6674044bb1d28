// The ThreadSanitizer run's probe (run.sh tsan runs it before the suites): a run that reports
// nothing means something only if the same settings report a race that is there.
//   race_probe threads      two std::threads increment one int unsynchronised: a race
//   race_probe omp-race     an OpenMP loop whose iterations all write one int: a race
//   race_probe omp-clean    an OpenMP reduction, a barrier and a critical section: no race
//                           (Archer tells TSan about libomp's synchronisation; without it,
//                           libomp's own barriers are reported)
#include <omp.h>

#include <cstdio>
#include <cstring>
#include <thread>
#include <vector>

namespace {

int shared_counter = 0;

int threads() {
  std::thread a([] {
    for (int i = 0; i < 1000; ++i) ++shared_counter;
  });
  std::thread b([] {
    for (int i = 0; i < 1000; ++i) ++shared_counter;
  });
  a.join();
  b.join();
  return shared_counter > 0 ? 0 : 1;
}

int omp_race() {
  int last = 0;
#pragma omp parallel for num_threads(4)
  for (int i = 0; i < 4000; ++i) last = i;
  return last >= 0 ? 0 : 1;
}

int omp_clean() {
  std::vector<double> x(1 << 16);
  double sum = 0;
#pragma omp parallel num_threads(4)
  {
#pragma omp for
    for (int i = 0; i < static_cast<int>(x.size()); ++i) x[static_cast<size_t>(i)] = i % 7;
    // The implicit barrier above orders the writes before the reads below.
#pragma omp for reduction(+ : sum)
    for (int i = 0; i < static_cast<int>(x.size()); ++i) sum += x[static_cast<size_t>(i)];
#pragma omp critical
    shared_counter += omp_get_thread_num() + 1;
  }
  std::printf("sum %.0f counter %d\n", sum, shared_counter);
  return sum > 0 ? 0 : 1;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2 && std::strcmp(argv[1], "threads") == 0) return threads();
  if (argc == 2 && std::strcmp(argv[1], "omp-race") == 0) return omp_race();
  if (argc == 2 && std::strcmp(argv[1], "omp-clean") == 0) return omp_clean();
  std::fprintf(stderr, "usage: race_probe threads|omp-race|omp-clean\n");
  return 2;
}
