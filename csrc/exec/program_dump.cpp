#include "exec/program_dump.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <mutex>
#include <sstream>

#include "exec/sha256.h"

namespace tpu::exec {

namespace {

const std::string& dump_dir() {
  static const std::string dir = [] {
    const char* v = std::getenv("TORCH_TPU_DUMP_DIR");
    return std::string(v != nullptr ? v : "");
  }();
  return dir;
}

std::string file_part(const std::string& name) {
  std::string out;
  for (char c : name.substr(0, 60))
    out += (std::isalnum(static_cast<unsigned char>(c)) || c == '.') ? c : '_';
  return out;
}

std::string json_string(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"':
        out += "\\\"";
        break;
      case '\\':
        out += "\\\\";
        break;
      case '\n':
        out += "\\n";
        break;
      default:
        if (static_cast<unsigned char>(c) < 0x20) {
          char buf[8];
          std::snprintf(buf, sizeof buf, "\\u%04x", c);
          out += buf;
        } else {
          out += c;
        }
    }
  }
  return out + "\"";
}

bool write_file(const std::string& path, const std::string& bytes) {
  std::ofstream f(path, std::ios::binary);
  f.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  return static_cast<bool>(f);
}

// One write of the whole line with O_APPEND: lines of concurrent processes never interleave.
void append_line(const std::string& path, const std::string& line) {
  int fd = ::open(path.c_str(), O_WRONLY | O_APPEND | O_CREAT, 0644);
  if (fd < 0) return;
  ssize_t ignored = ::write(fd, line.data(), line.size());
  (void)ignored;
  ::close(fd);
}

}  // namespace

bool dump_enabled() { return !dump_dir().empty(); }

void dump_program(const DumpedProgram& p) {
  static std::atomic<int> sequence{0};
  static std::mutex warn_once;
  const std::string& dir = dump_dir();
  ::mkdir(dir.c_str(), 0755);
  Sha256 h;
  h.update(p.key);
  const std::string key = to_hex(h.finish()).substr(0, 16);
  const int number = sequence++;
  char seq[16];
  std::snprintf(seq, sizeof seq, "%05d", number);
  const std::string stem = std::to_string(::getpid()) + "-" + seq + "-" + file_part(p.name) + "-" + key;
  const std::string mlir_file = stem + ".stablehlo.mlir";
  if (!write_file(dir + "/" + mlir_file, p.stablehlo)) {
    std::lock_guard<std::mutex> lock(warn_once);
    static bool warned = false;
    if (!warned) std::fprintf(stderr, "torch_tpu: cannot write to TORCH_TPU_DUMP_DIR=%s\n", dir.c_str());
    warned = true;
    return;
  }
  std::string format;
  const std::string optimized = p.executable.optimized_program(format);
  const std::string hlo_file = optimized.empty() ? "" : stem + "." + file_part(format) + ".pb";
  if (!hlo_file.empty()) write_file(dir + "/" + hlo_file, optimized);

  std::ostringstream line;
  line << "{\"pid\": " << ::getpid() << ", \"seq\": " << number << ", \"name\": " << json_string(p.name)
       << ", \"key\": " << json_string(key) << ", \"stablehlo\": " << json_string(mlir_file)
       << ", \"optimized_hlo\": " << (hlo_file.empty() ? "null" : json_string(hlo_file))
       << ", \"source\": " << json_string(p.from_disk_cache ? "disk cache" : "compiled")
       << ", \"compile_seconds\": " << p.compile_seconds << ", \"python_lines\": [";
  for (size_t i = 0; i < p.python_lines.size(); ++i)
    line << (i ? ", " : "") << json_string(p.python_lines[i]);
  line << "]}\n";
  append_line(dir + "/index.jsonl", line.str());
}

}  // namespace tpu::exec
