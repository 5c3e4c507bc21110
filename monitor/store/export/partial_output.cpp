// See partial_output.h.
#include "monitor/store/export/partial_output.h"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <utility>

namespace memtap {

PartialOutput::PartialOutput(std::string path)
    : path_(std::move(path)), partial_(path_ + ".partial") {
  std::remove(partial_.c_str());
}

PartialOutput::~PartialOutput() {
  if (!committed_) std::remove(partial_.c_str());
}

bool PartialOutput::commit(std::string* error) {
  if (std::rename(partial_.c_str(), path_.c_str()) != 0) {
    *error = "renaming " + partial_ + " to " + path_ + ": " + std::strerror(errno);
    return false;
  }
  committed_ = true;
  return true;
}

}  // namespace memtap
