// Records of a CSV file (RFC 4180), read in chunks so a file of any size streams.
//
// msMemScope's CSV export quotes Attr (`"{addr:1,size:2}"`) and its call stacks, which hold
// commas and newlines, so a line is not a record: fields may be quoted, a quoted field may
// hold `,`, CR, LF and `""` (a quote). Lines may end in LF or CRLF; a UTF-8 byte order mark
// at the start is skipped; blank lines are no records.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace memtap::reader {

class CsvReader {
 public:
  // Opens `path`. nullptr with *error ("cannot open: No such file or directory").
  static std::unique_ptr<CsvReader> open(const std::string& path, std::string* error);
  ~CsvReader();
  CsvReader(const CsvReader&) = delete;
  CsvReader& operator=(const CsvReader&) = delete;

  enum class Next { kRecord, kEnd, kError };
  // Reads the next record into *fields (views valid until the next call). kError with
  // *error on a read failure. A quoted field still open at the end of the file gives its
  // record with malformed() set.
  Next next(std::vector<std::string_view>* fields, std::string* error);

  // The line the last record began on (1-based, counting the newlines inside quotes).
  uint64_t record_line() const { return record_line_; }
  // What was wrong with the last record's quoting, or "".
  const std::string& malformed() const { return malformed_; }
  // Whether the last record ended with the file rather than a newline: the last line of a
  // file that was cut short (a copy interrupted, a disk filled) has no newline.
  bool unterminated() const { return unterminated_; }

 private:
  CsvReader(int fd, size_t chunk_bytes) : fd_(fd), chunk_bytes_(chunk_bytes) {}
  // Reads more of the file behind the unread part; false at the end of the file.
  bool fill(std::string* error, bool* failed);
  void split(size_t begin, size_t end, std::vector<std::string_view>* fields);

  int fd_;
  size_t chunk_bytes_;  // the buffer's first size: 1 MiB, or a smaller file's own size
  std::vector<char> buffer_;
  size_t begin_ = 0;  // first unread byte
  size_t end_ = 0;    // end of the bytes read
  bool eof_ = false;
  bool at_start_ = true;
  uint64_t line_ = 1;  // line of buffer_[begin_]
  uint64_t record_line_ = 0;
  bool unterminated_ = false;
  std::string malformed_;
};

}  // namespace memtap::reader
