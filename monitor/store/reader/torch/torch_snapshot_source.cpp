// A PyTorch snapshot as a recording (see torch_snapshot_source.h).
#include "monitor/store/reader/torch/torch_snapshot_source.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "monitor/store/reader/torch/pickle_reader.h"
#include "monitor/store/reader/torch/snapshot_events.h"
#include "monitor/store/reader/torch/snapshot_layout.h"

namespace memtap::reader {
namespace {

bool read_file(const std::string& path, std::string* bytes, std::string* error) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    *error = path + ": cannot open: " + std::strerror(errno);
    return false;
  }
  struct stat st {};
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) bytes->reserve(size_t(st.st_size));
  char buffer[1 << 16];
  while (true) {
    const ssize_t n = ::read(fd, buffer, sizeof buffer);
    if (n > 0) {
      bytes->append(buffer, size_t(n));
      continue;
    }
    if (n == 0) break;
    if (errno == EINTR) continue;
    *error = path + ": cannot read: " + std::strerror(errno);
    ::close(fd);
    return false;
  }
  ::close(fd);
  return true;
}

}  // namespace

bool is_pickle_head(const char* head, size_t size) {
  return pickle::announced_protocol(head, size) >= 2;
}

bool read_torch_snapshot(const std::string& path, Recording* out, RowProblems* problems,
                         std::string* error) {
  out->format = kFormatTorchSnapshot;
  std::string bytes;
  if (!read_file(path, &bytes, error)) return false;
  pickle::Document doc;
  std::string why;
  if (!pickle::read_pickle(std::move(bytes), &doc, &why)) {
    *error = path + ": " + why;
    return false;
  }
  torch_snapshot::Snapshot snapshot;
  if (!torch_snapshot::read_snapshot_layout(doc, &snapshot, problems, &why)) {
    *error = path + ": " + why;
    return false;
  }
  torch_snapshot::append_snapshot_events(doc, snapshot, out, problems);
  return true;
}

}  // namespace memtap::reader
