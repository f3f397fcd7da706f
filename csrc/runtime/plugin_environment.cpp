#include "runtime/plugin_environment.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <stdexcept>

#include "runtime/plugin.h"

namespace tpu::runtime {

namespace {

constexpr const char* kCompileVariables[] = {"XLA_FLAGS", "LIBTPU_INIT_ARGS"};
// Exit status of the checking child when PJRT_Client_Create returned an error: an ordinary
// failure, which this process's own start reports as usual.
constexpr int kCreateReturnedError = 3;
// A client start that takes longer (a child that hangs) is not waited for: the check is skipped.
constexpr int kCheckTimeoutSeconds = 120;
constexpr size_t kMaxOutput = 1 << 16;
constexpr size_t kMaxFlagFile = 1 << 20;

// XLA reads flags from a file when the value's first non-blank character is not '-'.
bool names_a_flag_file(const std::string& value) {
  const size_t first = value.find_first_not_of(" \t\r\n");
  return first != std::string::npos && value[first] != '-';
}

// glog lines of the child's output at ERROR or FATAL severity, without the "F0000 00:00:...
// file.cc:123] " prefix: what the plugin says went wrong.
std::vector<std::string> complaints(const std::string& output) {
  std::vector<std::string> out;
  size_t start = 0;
  while (start < output.size()) {
    size_t end = output.find('\n', start);
    if (end == std::string::npos) end = output.size();
    std::string line = output.substr(start, end - start);
    start = end + 1;
    if (line.size() < 6 || (line[0] != 'E' && line[0] != 'F') || line.find_first_not_of("0123456789", 1) != 5)
      continue;
    const size_t text = line.find("] ");
    if (text != std::string::npos) out.push_back(line.substr(text + 2, 500));
  }
  return out;
}

// "--a --b" out of "Unknown flags in XLA_FLAGS: --a --b"; "" when there is no such complaint.
std::string unknown_flags(const std::vector<std::string>& lines, bool* plural) {
  static const std::string kOne = "Unknown flag in XLA_FLAGS: ", kMany = "Unknown flags in XLA_FLAGS: ";
  for (const std::string& line : lines) {
    for (const std::string* head : {&kOne, &kMany}) {
      if (line.rfind(*head, 0) == 0) {
        *plural = head == &kMany;
        return line.substr(head->size());
      }
    }
  }
  return {};
}

// Reads the child's output until it exits (or the pipe closes), for at most the time limit.
// Returns false when the child hung and was killed. `status` is its wait status (-1 unknown).
bool collect(pid_t pid, int fd, std::string& output, int& status) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(kCheckTimeoutSeconds);
  status = -1;
  bool open = true, reaped = false;
  char buf[4096];
  while (!reaped) {
    if (std::chrono::steady_clock::now() > deadline) {
      ::kill(pid, SIGKILL);
      while (::waitpid(pid, nullptr, 0) < 0 && errno == EINTR) {}
      return false;
    }
    if (open) {
      // Poll in short slices so an exited child is noticed even if something it started holds
      // the pipe open.
      struct pollfd p = {fd, POLLIN, 0};
      if (::poll(&p, 1, 50) > 0) {
        const ssize_t n = ::read(fd, buf, sizeof buf);
        if (n > 0 && output.size() < kMaxOutput) output.append(buf, static_cast<size_t>(n));
        if (n == 0 || (n < 0 && errno != EINTR && errno != EAGAIN)) open = false;
        if (n > 0) continue;
      }
    } else {
      ::usleep(2000);
    }
    int s = 0;
    const pid_t r = ::waitpid(pid, &s, WNOHANG);
    if (r == pid) {
      status = s;
      reaped = true;
    } else if (r < 0 && errno != EINTR) {
      reaped = true;  // reaped elsewhere (SIGCHLD ignored): status unknown
    }
  }
  // What it wrote just before it exited.
  ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) | O_NONBLOCK);
  for (ssize_t n; (n = ::read(fd, buf, sizeof buf)) > 0;)
    if (output.size() < kMaxOutput) output.append(buf, static_cast<size_t>(n));
  return true;
}

}  // namespace

std::vector<std::pair<std::string, std::string>> read_compile_environment() {
  std::vector<std::pair<std::string, std::string>> out;
  for (const char* name : kCompileVariables) {
    const char* v = std::getenv(name);
    std::string value = v == nullptr ? "unset" : std::string("=") + v;
    if (v != nullptr && std::string(name) == "XLA_FLAGS" && names_a_flag_file(v)) {
      std::ifstream f(v, std::ios::binary);
      std::string contents(std::istreambuf_iterator<char>(f), {});
      value += f ? "\nfile contents:\n" + contents.substr(0, kMaxFlagFile) : "\n(file unreadable)";
    }
    out.emplace_back(name, value);
  }
  return out;
}

// Why a forked child, and not something cheaper or simpler:
// - The plugin calls _exit(1) inside PJRT_Client_Create: nothing of this process runs after it
//   (no atexit handler, no signal, no exception), so the check has to happen in another process
//   before this one creates its client.
// - It must be the plugin's own parser that judges: the flags differ between plugins (XLA:CPU,
//   libtpu) and their versions, and values are parsed too (a bool that is not one), so a list of
//   known names or a re-implemented parser would go stale.
// - fork rather than a fresh helper process: the project builds no executable of its own, and
//   a new interpreter would need `import torch` (seconds) before it could load the plugin
//   through _C. The forked child has the plugin loaded and initialised already; it only calls
//   PJRT_Client_Create and _exit()s, never returning to Python or touching torch (only malloc
//   and thread creation, which glibc keeps usable after fork, as DataLoader's forked workers
//   rely on). Its stdout and stderr go to a pipe, so nothing of it reaches this process's
//   output, and it is killed if it does not finish in time (the check is then skipped).
// - Only a child that dies complaining about XLA_FLAGS (or in XLA's flag parser) raises: one
//   that fails for any other reason says nothing about the flags, and this process then starts
//   exactly as it would have without the check.
// - With libtpu the child's client opens the TPU chips for as long as it lives; that start
//   (seconds) is the price of setting XLA_FLAGS there. Unset, nothing happens at all.
void check_plugin_accepts_flags(const Plugin& plugin, const PJRT_Client_Create_Args& args) {
  const char* flags = std::getenv("XLA_FLAGS");
  if (flags == nullptr) return;
  int fds[2];
  if (::pipe2(fds, O_CLOEXEC) != 0) return;  // cannot check: start as without the check
  const pid_t pid = ::fork();
  if (pid < 0) {
    ::close(fds[0]);
    ::close(fds[1]);
    return;
  }
  if (pid == 0) {
    ::dup2(fds[1], 1);
    ::dup2(fds[1], 2);
    PJRT_Client_Create_Args create = args;
    PJRT_Error* error = plugin.api()->PJRT_Client_Create(&create);
    ::_exit(error == nullptr ? 0 : kCreateReturnedError);
  }
  ::close(fds[1]);
  std::string output;
  int status = -1;
  const bool finished = collect(pid, fds[0], output, status);
  ::close(fds[0]);
  if (!finished || status == -1) return;
  if (WIFEXITED(status) && (WEXITSTATUS(status) == 0 || WEXITSTATUS(status) == kCreateReturnedError)) return;
  if (output.find("XLA_FLAGS") == std::string::npos &&
      output.find("parse_flags_from_env") == std::string::npos)
    return;
  // All of it, for TORCH_TPU_VERBOSE_PLUGIN=1 (stderr is muted during the client's start
  // otherwise), e.g. the list of flags the plugin prints for XLA_FLAGS=--help.
  for (size_t done = 0; done < output.size();) {
    const ssize_t n = ::write(2, output.data() + done, output.size() - done);
    if (n <= 0) break;
    done += static_cast<size_t>(n);
  }
  const std::vector<std::string> said = complaints(output);
  bool plural = false;
  const std::string unknown = unknown_flags(said, &plural);
  std::string message =
      "torch_tpu: the PJRT plugin " + plugin.path() + " rejects XLA_FLAGS=\"" + flags + "\"";
  message += WIFEXITED(status) ? " (it would end this process with exit status " +
                                     std::to_string(WEXITSTATUS(status)) + " as the device starts)"
                               : " (it would end this process with signal " +
                                     std::to_string(WTERMSIG(status)) + " as the device starts)";
  if (!unknown.empty()) {
    message += ": unknown flag" + std::string(plural ? "s " : " ") + unknown + ". Remove " +
               (plural ? "them" : "it") + " from XLA_FLAGS or correct the spelling";
  } else {
    message += ". Correct XLA_FLAGS or unset it";
  }
  message +=
      "; TORCH_TPU_VERBOSE_PLUGIN=1 shows the plugin's full output (XLA_FLAGS=--help lists "
      "the flags it knows).";
  if (!said.empty()) {
    message += " The plugin said:";
    for (size_t i = 0; i < said.size() && i < 4; ++i) message += "\n  " + said[i];
  }
  throw std::runtime_error(message);
}

}  // namespace tpu::runtime
