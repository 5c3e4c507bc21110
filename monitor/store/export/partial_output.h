// Where an export writes: `<path>.partial`, renamed to `path` once the file is complete, so
// that no reader ever finds half a file under the name asked for, and a failed export leaves
// nothing behind (memtap's recordings and `memtap export` of a database work the same way).
#pragma once

#include <string>

namespace memtap {

class PartialOutput {
 public:
  // Removes a `<path>.partial` an earlier, interrupted export left.
  explicit PartialOutput(std::string path);
  // Removes `<path>.partial` unless commit() succeeded.
  ~PartialOutput();
  PartialOutput(const PartialOutput&) = delete;
  PartialOutput& operator=(const PartialOutput&) = delete;

  const std::string& partial_path() const { return partial_; }
  // Renames the finished file to `path`, replacing a file of that name. False with *error.
  bool commit(std::string* error);

 private:
  std::string path_, partial_;
  bool committed_ = false;
};

}  // namespace memtap
