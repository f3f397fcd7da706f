// Whether a file of the persistent compile cache may be used. The cache holds machine code that
// this process loads and runs, and an entry's checksum detects damage, not tampering: so, like ssh
// with its key files, a cache directory or entry that another user owns or can write is never
// used, whatever its contents.
#pragma once
#include <sys/stat.h>

#include <string>

namespace tpu::exec {

enum class CacheFileKind { Directory, Entry };

// "" when `st` describes a directory (an entry: a regular file) owned by the effective user and
// writable by no one else; otherwise the warning for `path`: why it is not used, what happens
// instead and the fix. `st` must come from fstat of the descriptor that is then read (or, for a
// path that cannot be opened that way, from lstat), never from a second lookup of `path`.
// Group write covers POSIX ACLs too: with an ACL the group bits are its mask, which allows
// writing as soon as any named user or group may write.
std::string distrust_warning(const struct stat& st, CacheFileKind kind, const std::string& path);

}  // namespace tpu::exec
