// A file written through a large buffer, for the CSV exports and the snapshot's pickle
// (bytes as given): writes never fail on their own, the first error is kept and close()
// reports it with the file's name (a full disk is found at the latest when the last bytes go
// out).
#pragma once

#include <cstdio>
#include <memory>
#include <string>
#include <string_view>

namespace memtap {

class TextFile {
 public:
  // Creates (or truncates) `path`. nullptr with *error naming it.
  static std::unique_ptr<TextFile> create(const std::string& path, std::string* error);
  ~TextFile();
  TextFile(const TextFile&) = delete;
  TextFile& operator=(const TextFile&) = delete;

  void write(std::string_view text);
  // Flushes and closes. False with *error ("<path>: No space left on device").
  bool close(std::string* error);

 private:
  TextFile(std::string path, FILE* file) : path_(std::move(path)), file_(file) {}
  std::string path_;
  FILE* file_;
  int error_ = 0;  // errno of the first failed write
};

}  // namespace memtap
