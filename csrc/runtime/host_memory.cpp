#include "runtime/host_memory.h"

#include <unistd.h>

#include <algorithm>
#include <climits>
#include <cstdlib>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace tpu::runtime {

void retain_freed_host_memory() {
#if defined(__GLIBC__)
  for (const char* tuned :
       {"GLIBC_TUNABLES", "MALLOC_ARENA_MAX", "MALLOC_MMAP_MAX_", "MALLOC_TRIM_THRESHOLD_"})
    if (std::getenv(tuned) != nullptr) return;
  const long pages = sysconf(_SC_PHYS_PAGES), page = sysconf(_SC_PAGESIZE);
  const long long quarter = pages > 0 && page > 0 ? static_cast<long long>(pages) * page / 4 : INT_MAX;
  const int trim = static_cast<int>(std::min<long long>(quarter, INT_MAX));
  mallopt(M_ARENA_MAX, 1);
  mallopt(M_MMAP_MAX, 0);
  mallopt(M_TRIM_THRESHOLD, trim);
#endif
}

}  // namespace tpu::runtime
