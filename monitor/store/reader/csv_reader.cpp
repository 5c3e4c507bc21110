// Records of a CSV file (see csv_reader.h).
#include "monitor/store/reader/csv_reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace memtap::reader {
namespace {

constexpr size_t kChunkBytes = 1 << 20;
constexpr size_t kMinChunkBytes = 4096;

}  // namespace

std::unique_ptr<CsvReader> CsvReader::open(const std::string& path, std::string* error) {
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) {
    *error = std::string("cannot open: ") + std::strerror(errno);
    return nullptr;
  }
  // A small file gets a buffer of its size (a profiler CSV is often a few KiB; zeroing a
  // whole chunk for it cost more than reading it); the buffer still grows as a record needs.
  struct stat st {};
  size_t chunk = kChunkBytes;
  if (::fstat(fd, &st) == 0 && S_ISREG(st.st_mode)) {
    chunk = std::clamp(size_t(st.st_size) + 1, kMinChunkBytes, kChunkBytes);
  }
  return std::unique_ptr<CsvReader>(new CsvReader(fd, chunk));
}

CsvReader::~CsvReader() {
  ::close(fd_);
}

bool CsvReader::fill(std::string* error, bool* failed) {
  if (begin_ > 0) {
    std::memmove(buffer_.data(), buffer_.data() + begin_, end_ - begin_);
    end_ -= begin_;
    begin_ = 0;
  }
  // A record longer than the buffer (a huge call stack) grows it; the buffer holds one
  // record at least, never the whole file.
  if (buffer_.size() - end_ < chunk_bytes_ / 2)
    buffer_.resize(std::max(chunk_bytes_, 2 * buffer_.size()));
  while (true) {
    const ssize_t n = ::read(fd_, buffer_.data() + end_, buffer_.size() - end_);
    if (n > 0) {
      end_ += size_t(n);
      return true;
    }
    if (n == 0) {
      eof_ = true;
      return false;
    }
    if (errno == EINTR) continue;
    *error = std::string("cannot read: ") + std::strerror(errno);
    *failed = true;
    return false;
  }
}

CsvReader::Next CsvReader::next(std::vector<std::string_view>* fields, std::string* error) {
  while (true) {
    fields->clear();
    malformed_.clear();
    // Find the record's end: the first LF outside quotes. A doubled quote inside a quoted
    // field toggles twice, so counting quotes is enough to know whether we are inside one.
    size_t scan = begin_;
    bool in_quotes = false;
    while (true) {
      const char* data = buffer_.data();
      while (scan < end_) {
        const char c = data[scan];
        if (c == '"') {
          in_quotes = !in_quotes;
        } else if (c == '\n' && !in_quotes) {
          break;
        }
        ++scan;
      }
      if (scan < end_ || eof_) break;
      const size_t offset = scan - begin_;
      bool failed = false;
      if (!fill(error, &failed) && failed) return Next::kError;
      scan = begin_ + offset;
    }
    if (begin_ == end_) return Next::kEnd;

    const size_t record_begin = begin_;
    const size_t next_begin = scan < end_ ? scan + 1 : end_;
    record_line_ = line_;
    line_ += size_t(std::count(buffer_.data() + record_begin, buffer_.data() + next_begin, '\n'));
    begin_ = next_begin;
    unterminated_ = scan >= end_;
    if (in_quotes) {
      // Every line after the opening quote went into this record: say how many were lost.
      const bool newline_last = buffer_[next_begin - 1] == '\n';
      const uint64_t lines = line_ - record_line_ + (newline_last ? 0 : 1);
      malformed_ = "a quoted field opened here is still open at the end of the file (" +
                   std::to_string(lines) + (lines == 1 ? " line" : " lines") +
                   " read as this one row)";
    }

    size_t content_begin = record_begin;
    size_t content_end = scan;
    if (content_end > content_begin && buffer_[content_end - 1] == '\r') --content_end;
    if (at_start_) {
      at_start_ = false;
      if (content_end - content_begin >= 3 &&
          std::memcmp(&buffer_[content_begin], "\xEF\xBB\xBF", 3) == 0) {
        content_begin += 3;
      }
    }
    if (content_begin == content_end) continue;  // a blank line
    split(content_begin, content_end, fields);
    return Next::kRecord;
  }
}

void CsvReader::split(size_t begin, size_t end, std::vector<std::string_view>* fields) {
  char* buf = buffer_.data();
  size_t i = begin;
  while (true) {
    const size_t start = i;
    if (i < end && buf[i] == '"') {
      // Unquote in place: the text only shrinks, so the write position trails the read.
      size_t w = start;
      for (++i; i < end; ++i) {
        if (buf[i] == '"') {
          if (i + 1 < end && buf[i + 1] == '"') {
            buf[w++] = '"';
            ++i;
            continue;
          }
          ++i;
          break;
        }
        buf[w++] = buf[i];
      }
      // Text after the closing quote (`"a"b`) is not RFC 4180; keep it rather than lose it.
      for (; i < end && buf[i] != ','; ++i) buf[w++] = buf[i];
      fields->emplace_back(buf + start, w - start);
    } else {
      while (i < end && buf[i] != ',') ++i;
      fields->emplace_back(buf + start, i - start);
    }
    if (i >= end) return;
    ++i;  // the comma
    if (i == end) {
      fields->emplace_back();  // a trailing comma ends with an empty field
      return;
    }
  }
}

}  // namespace memtap::reader
