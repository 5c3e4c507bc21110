// Reading an executable's ELF program headers and mode bits (see preload_obstacle.h).
#include "monitor/live/preload_obstacle.h"

#include <elf.h>
#include <fcntl.h>
#include <pwd.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstring>
#include <vector>

namespace memtap {
namespace {

enum class Linking { kDynamic, kStatic, kNotElf };

// Reads n bytes at offset; false if the file is shorter.
bool read_at(int fd, void* out, size_t n, off_t offset) {
  return pread(fd, out, n, offset) == ssize_t(n);
}

// Whether the ELF file names a program interpreter (PT_INTERP): the dynamic loader, which
// is what reads LD_PRELOAD. A static-pie has none either.
template <typename Ehdr, typename Phdr>
Linking elf_linking(int fd) {
  Ehdr eh;
  if (!read_at(fd, &eh, sizeof eh, 0) || eh.e_phentsize != sizeof(Phdr)) return Linking::kNotElf;
  for (unsigned i = 0; i < eh.e_phnum; ++i) {
    Phdr ph;
    if (!read_at(fd, &ph, sizeof ph, off_t(eh.e_phoff + i * sizeof(Phdr)))) return Linking::kNotElf;
    if (ph.p_type == PT_INTERP) return Linking::kDynamic;
  }
  return Linking::kStatic;
}

Linking linking_of(int fd) {
  unsigned char ident[EI_NIDENT];
  if (!read_at(fd, ident, sizeof ident, 0) || memcmp(ident, ELFMAG, SELFMAG) != 0) {
    return Linking::kNotElf;
  }
  if (ident[EI_CLASS] == ELFCLASS64) return elf_linking<Elf64_Ehdr, Elf64_Phdr>(fd);
  if (ident[EI_CLASS] == ELFCLASS32) return elf_linking<Elf32_Ehdr, Elf32_Phdr>(fd);
  return Linking::kNotElf;
}

// The interpreter a "#!" line names (its first word), or "".
std::string script_interpreter(int fd) {
  char line[256] = {};
  ssize_t n = pread(fd, line, sizeof line - 1, 0);
  if (n < 3 || line[0] != '#' || line[1] != '!') return "";
  std::string text(line + 2, size_t(n - 2));
  size_t start = text.find_first_not_of(" \t");
  if (start == std::string::npos) return "";
  size_t end = text.find_first_of(" \t\n", start);
  return text.substr(start, end == std::string::npos ? std::string::npos : end - start);
}

std::string user_name(uid_t uid) {
  // getpwuid_r with a buffer on the stack: the monitor is multithreaded.
  struct passwd pw, *found = nullptr;
  char buf[1024];
  if (getpwuid_r(uid, &pw, buf, sizeof buf, &found) == 0 && found) return found->pw_name;
  return "uid " + std::to_string(uid);
}

std::string obstacle(const std::string& path, int depth) {
  const int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  struct stat st;
  std::string reason;
  if (fstat(fd, &st) == 0) {
    // The loader runs such a program in secure mode only when it changes the user or group
    // (AT_SECURE), and then ignores LD_PRELOAD (but for setuid libraries in system paths).
    if ((st.st_mode & S_ISUID) && st.st_uid != geteuid()) {
      reason = "it is setuid (owned by " + user_name(st.st_uid) +
               "), and the loader ignores LD_PRELOAD for such programs; run a copy without "
               "the setuid bit to record it";
    } else if ((st.st_mode & S_ISGID) && st.st_gid != getegid()) {
      reason =
          "it is setgid, and the loader ignores LD_PRELOAD for such programs; run a copy "
          "without the setgid bit to record it";
    }
  }
  if (reason.empty()) {
    const Linking linking = linking_of(fd);
    if (linking == Linking::kStatic) {
      reason =
          "it is statically linked, and the agent is loaded with LD_PRELOAD, which only the "
          "dynamic loader reads; memtap cannot record it";
    } else if (linking == Linking::kNotElf && depth == 0) {
      const std::string interpreter = script_interpreter(fd);
      if (!interpreter.empty()) {
        std::string inner = obstacle(interpreter, depth + 1);
        if (!inner.empty()) reason = "its interpreter " + interpreter + ": " + inner;
      }
    }
  }
  close(fd);
  return reason;
}

}  // namespace

std::string preload_obstacle(const std::string& path) {
  return obstacle(path, 0);
}

}  // namespace memtap
