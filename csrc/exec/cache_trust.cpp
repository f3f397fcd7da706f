#include "exec/cache_trust.h"

#include <unistd.h>

#include <cstdio>

namespace tpu::exec {

namespace {

std::string octal_mode(mode_t mode) {
  char buf[8];
  std::snprintf(buf, sizeof buf, "%04o", static_cast<unsigned>(mode & 07777));
  return buf;
}

}  // namespace

std::string distrust_warning(const struct stat& st, CacheFileKind kind, const std::string& path) {
  const bool directory = kind == CacheFileKind::Directory;
  const uid_t me = ::geteuid();
  std::string reason, fix;
  if (directory ? !S_ISDIR(st.st_mode) : !S_ISREG(st.st_mode)) {
    reason = S_ISLNK(st.st_mode) ? "is a symbolic link"
             : directory         ? "is not a directory"
                                 : "is not a regular file";
    fix = directory ? "Choose another TORCH_TPU_CACHE_DIR" : "Remove " + path;
  } else if (st.st_uid != me) {
    reason = "is owned by uid " + std::to_string(st.st_uid) + ", not by this user (uid " +
             std::to_string(me) + "), so the program" + (directory ? "s" : "") +
             " in it could be another user's code";
    fix = "Remove " + path + " or choose another TORCH_TPU_CACHE_DIR";
  } else if ((st.st_mode & (S_IWGRP | S_IWOTH)) != 0) {
    reason = "is writable by group or others (mode " + octal_mode(st.st_mode) + "), so another user could " +
             (directory ? "put programs in it for this process to run" : "have changed the program in it");
    fix = "Run `chmod " + std::string(directory ? "700 " : "600 ") + path +
          "` or choose another TORCH_TPU_CACHE_DIR";
  } else {
    return {};
  }
  // An untrusted entry turns the whole directory off too: someone else could write there.
  const std::string dir = directory ? path : path.substr(0, path.rfind('/'));
  return "not using the compile cache directory " + dir + ": " +
         (directory ? "it " : "its entry " + path + " ") + reason + ". " + fix +
         "; until then the compile cache is off (torch_tpu.cache.enable() checks again)";
}

}  // namespace tpu::exec
