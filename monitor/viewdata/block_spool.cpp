// See block_spool.h.
#include "monitor/viewdata/block_spool.h"

#include <fcntl.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <type_traits>

#include "monitor/report/units.h"
#include "monitor/store/positioned_io.h"
#include "monitor/viewdata/temp_dir.h"

namespace memtap::viewdata {

namespace {

static_assert(std::is_trivially_copyable_v<IndexEvent>, "events are spooled as they are in memory");

constexpr uint32_t kTag = 0x6b6c4253;  // "SBlk": the start of a batch
struct Header {
  uint32_t tag = kTag;
  uint32_t strings = 0;
  uint32_t events = 0;
  uint32_t string_bytes = 0;  // the strings' part: (id, length, text) each
};
// append() refuses a batch larger than this (the header counts its strings' bytes in 32 bits).
constexpr uint64_t kMaxBatchBytes = uint64_t{1} << 31;

template <typename T>
void put(std::vector<char>* out, const T& value) {
  const char* p = reinterpret_cast<const char*>(&value);
  out->insert(out->end(), p, p + sizeof value);
}

}  // namespace

std::unique_ptr<BlockSpool> BlockSpool::create(uint64_t max_bytes, std::string* error) {
  std::string path = temp_dir() + "/memtap-blocks-spool-XXXXXX";
  const int fd = ::mkostemp(path.data(), O_CLOEXEC);
  if (fd < 0) {
    *error = "cannot create the block views' spool " + path + ": " + std::strerror(errno);
    return nullptr;
  }
  ::unlink(path.c_str());
  return std::unique_ptr<BlockSpool>(new BlockSpool(path, fd, max_bytes));
}

BlockSpool::~BlockSpool() {
  ::close(fd_);
}

bool BlockSpool::append(const std::vector<std::pair<uint32_t, std::string>>& strings,
                        const std::vector<IndexEvent>& events, std::string* error) {
  Header h;
  h.strings = uint32_t(strings.size());
  h.events = uint32_t(events.size());
  buffer_.clear();
  put(&buffer_, h);
  for (const auto& [id, text] : strings) {
    put(&buffer_, id);
    put(&buffer_, uint32_t(text.size()));
    buffer_.insert(buffer_.end(), text.begin(), text.end());
  }
  const uint64_t string_bytes = buffer_.size() - sizeof h;
  h.string_bytes = uint32_t(string_bytes);
  std::memcpy(buffer_.data(), &h, sizeof h);
  const char* raw = reinterpret_cast<const char*>(events.data());
  buffer_.insert(buffer_.end(), raw, raw + events.size() * sizeof(IndexEvent));
  if (buffer_.size() > kMaxBatchBytes) {
    *error = "a batch of " + bytes_text(double(buffer_.size())) + " is too large for " + path_;
    return false;
  }

  std::lock_guard lock(mutex_);
  if (end_ - read_ + buffer_.size() > max_bytes_) {
    *error = "the block views' spool " + path_ + " is full (" + bytes_text(double(max_bytes_)) +
             " waiting)";
    return false;
  }
  if (!write_all(fd_, buffer_.data(), buffer_.size(), off_t(end_))) {
    *error = "cannot write the block views' spool " + path_ + ": " + std::strerror(errno);
    return false;
  }
  end_ += buffer_.size();
  batches_.emplace_back(end_, h.events);
  return true;
}

BlockSpool::Read BlockSpool::read(SpooledBatch* out, uint64_t* lost_events, std::string* error) {
  uint64_t at = 0, batch_end = 0;
  uint32_t batch_events = 0;
  {
    std::lock_guard lock(mutex_);
    if (read_ == end_) return Read::kNone;
    at = read_;
    batch_end = batches_.front().first;
    batch_events = batches_.front().second;
  }
  // Bytes before end_ are never written again until the file is emptied, which only this
  // thread does: read without the lock.
  Header h;
  std::string problem;
  if (!read_all(fd_, reinterpret_cast<char*>(&h), sizeof h, off_t(at))) {
    problem = std::string("cannot read a batch's header: ") + std::strerror(errno);
  } else if (h.tag != kTag) {
    problem = "expected a batch's header";
  }
  const uint64_t size = problem.empty() ? sizeof h + uint64_t(h.string_bytes) +
                                              uint64_t(h.events) * sizeof(IndexEvent)
                                        : 0;
  if (problem.empty() && (at + size != batch_end || h.events != batch_events)) {
    problem = "expected a batch of " + std::to_string(batch_events) + " events in " +
              std::to_string(batch_end - at) + " bytes, its header says " +
              std::to_string(h.events) + " in " + std::to_string(size);
  }
  if (problem.empty()) {
    input_.resize(size - sizeof h);
    if (!read_all(fd_, input_.data(), input_.size(), off_t(at + sizeof h))) {
      problem = std::string("cannot read a batch: ") + std::strerror(errno);
    }
  }
  out->strings.clear();
  out->events.clear();
  for (size_t i = 0, pos = 0; problem.empty() && i < h.strings; ++i) {
    uint32_t id = 0, length = 0;
    if (pos + 8 > h.string_bytes) {
      problem = "string " + std::to_string(i) + " of a batch runs past its strings";
      break;
    }
    std::memcpy(&id, input_.data() + pos, 4);
    std::memcpy(&length, input_.data() + pos + 4, 4);
    pos += 8;
    if (pos + length > h.string_bytes) {
      problem = "string " + std::to_string(i) + " of a batch runs past its strings";
      break;
    }
    out->strings.emplace_back(id, std::string(input_.data() + pos, length));
    pos += length;
  }
  if (problem.empty()) {
    out->events.resize(h.events);
    std::memcpy(static_cast<void*>(out->events.data()), input_.data() + h.string_bytes,
                size_t(h.events) * sizeof(IndexEvent));
  }

  std::lock_guard lock(mutex_);
  if (!problem.empty()) {
    *error = path_ + " at byte " + std::to_string(at) + ": " + problem;
    out->strings.clear();
    out->events.clear();
    *lost_events = batch_events;
  }
  batches_.pop_front();
  read_ = batch_end;
  // Drained: the file's space comes back, and the next batch is written at its start.
  if (read_ == end_) {
    read_ = end_ = 0;
    if (::ftruncate(fd_, 0) != 0) {
      // The space stays taken until the next truncate; the spool itself still works.
    }
  }
  return problem.empty() ? Read::kBatch : Read::kFailed;
}

uint64_t BlockSpool::unread_bytes() const {
  std::lock_guard lock(mutex_);
  return end_ - read_;
}

}  // namespace memtap::viewdata
