// Preloaded by run.sh into the AddressSanitizer suite (LD_PRELOAD): Open MPI and PMIx unload
// their MCA plugins (mca_*.so, pmix_mca_*.so) with dlclose() before the process exits, and
// LeakSanitizer then prints the plugins' allocations as "<unknown module>" frames that no
// suppression can name. This dlclose() keeps those plugins mapped, so lsan_openmpi.supp can
// match them by module, and passes every other handle on to the real dlclose(). It is built
// without sanitizers: the Python, shell and mpirun processes of the suite load it too.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <link.h>
#include <string.h>

static int is_mpi_plugin(const char* path) {
  const char* base = strrchr(path, '/');
  base = base ? base + 1 : path;
  return strncmp(base, "mca_", 4) == 0 || strncmp(base, "pmix_mca_", 9) == 0;
}

int dlclose(void* handle) {
  static int (*next)(void*) = 0;
  if (!next) next = (int (*)(void*))dlsym(RTLD_NEXT, "dlclose");
  struct link_map* map = 0;
  if (handle && dlinfo(handle, RTLD_DI_LINKMAP, &map) == 0 && map && map->l_name &&
      is_mpi_plugin(map->l_name))
    return 0;
  return next(handle);
}
