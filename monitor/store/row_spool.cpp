// See row_spool.h.
#include "monitor/store/row_spool.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <type_traits>
#include <utility>

namespace memtap {
namespace {

static_assert(std::is_trivially_copyable_v<DumpRow>, "rows are written to the spool raw");

// pwrite/pread may move fewer bytes than asked (a signal, a full disk): loop until done.
bool write_all(int fd, const char* data, size_t size, off_t at) {
  while (size > 0) {
    const ssize_t n = pwrite(fd, data, size, at);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = ENOSPC;
      return false;
    }
    data += n;
    size -= size_t(n);
    at += n;
  }
  return true;
}

bool read_all(int fd, char* data, size_t size, off_t at) {
  while (size > 0) {
    const ssize_t n = pread(fd, data, size, at);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      if (n == 0) errno = EIO;  // shorter than what was written: someone truncated it
      return false;
    }
    data += n;
    size -= size_t(n);
    at += n;
  }
  return true;
}

}  // namespace

std::unique_ptr<RowSpool> RowSpool::create(const std::string& path, std::string* error) {
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) {
    if (error != nullptr) *error = "cannot create " + path + ": " + std::strerror(errno);
    return nullptr;
  }
  return std::unique_ptr<RowSpool>(new RowSpool(path, fd));
}

RowSpool::~RowSpool() {
  close(fd_);
  unlink(path_.c_str());
}

bool RowSpool::push(const DumpRow* rows, size_t count, std::string* error) {
  const off_t at = off_t(written_ * sizeof(DumpRow));
  if (!write_all(fd_, reinterpret_cast<const char*>(rows), count * sizeof(DumpRow), at)) {
    if (error != nullptr) {
      *error = path_ + ": writing rows at byte " + std::to_string(at) + ": " + std::strerror(errno);
    }
    // A partial write leaves bytes past `written_`, which the next push overwrites.
    return false;
  }
  written_ += count;
  return true;
}

RowSpool::Claim RowSpool::claim(size_t max) {
  Claim c{claimed_, size_t(std::min<uint64_t>(max, unread()))};
  claimed_ += c.count;
  return c;
}

bool RowSpool::read(const Claim& claim, std::vector<DumpRow>* out, std::string* error) const {
  const size_t before = out->size();
  out->resize(before + claim.count);
  const off_t at = off_t(claim.first * sizeof(DumpRow));
  if (!read_all(fd_, reinterpret_cast<char*>(out->data() + before), claim.count * sizeof(DumpRow),
                at)) {
    out->resize(before);
    if (error != nullptr) {
      *error =
          path_ + ": reading rows back at byte " + std::to_string(at) + ": " + std::strerror(errno);
    }
    return false;
  }
  return true;
}

void RowSpool::truncate_if_drained() {
  if (written_ == 0 || unread() != 0) return;
  if (ftruncate(fd_, 0) == 0) written_ = claimed_ = 0;
}

}  // namespace memtap
