// Device memory that is host memory (XLA:CPU): how the process's allocator treats it.
#pragma once

namespace tpu::runtime {

// XLA:CPU allocates each execution's temporary buffer (hundreds of MB for a training step) and
// its results with posix_memalign, from its worker threads. glibc serves a large block in such a
// thread with a fresh mmap and unmaps it when freed, so every execution page-faults its buffers
// in again and the kernel zeroes each page: about 30 % of a 512-token training step's time on
// 2 cores. This keeps freed memory in the process for reuse, as a device's caching allocator
// does: one arena (another thread's arena would still mmap blocks past its 64 MiB heaps), no
// mmap for large blocks, and the heap's free top returned to the system only past a quarter of
// physical memory (at most 2 GiB, mallopt's limit). Call before the plugin starts its threads.
// Does nothing when the user tunes glibc's allocator (GLIBC_TUNABLES, MALLOC_ARENA_MAX,
// MALLOC_MMAP_MAX_, MALLOC_TRIM_THRESHOLD_) or on other C libraries.
void retain_freed_host_memory();

}  // namespace tpu::runtime
