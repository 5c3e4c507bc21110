// See text_file.h.
#include "monitor/store/export/text_file.h"

#include <cerrno>
#include <cstring>

namespace memtap {

std::unique_ptr<TextFile> TextFile::create(const std::string& path, std::string* error) {
  FILE* file = std::fopen(path.c_str(), "wb");
  if (file == nullptr) {
    *error = path + ": cannot create: " + std::strerror(errno);
    return nullptr;
  }
  std::setvbuf(file, nullptr, _IOFBF, 1 << 20);
  return std::unique_ptr<TextFile>(new TextFile(path, file));
}

TextFile::~TextFile() {
  if (file_ != nullptr) std::fclose(file_);
}

void TextFile::write(std::string_view text) {
  if (error_ != 0 || text.empty()) return;
  if (std::fwrite(text.data(), 1, text.size(), file_) != text.size()) error_ = errno ? errno : EIO;
}

bool TextFile::close(std::string* error) {
  if (std::fflush(file_) != 0 && error_ == 0) error_ = errno ? errno : EIO;
  if (std::fclose(file_) != 0 && error_ == 0) error_ = errno ? errno : EIO;
  file_ = nullptr;
  if (error_ == 0) return true;
  *error = path_ + ": " + std::strerror(error_);
  return false;
}

}  // namespace memtap
