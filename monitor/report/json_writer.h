// A JSON writer for reports with the call shape of a streaming one (objects, arrays, keys,
// values in order; the writer places the commas), over nlohmann-json: escaping, numbers and
// bytes that are not UTF-8 are the library's business. A double is written as the shortest
// text that reads back as the same double (the hand-written writer's "%.6g" turned
// 41943040.5 bytes a step into 4.1943e+07); a non-finite one as null; invalid UTF-8 in a
// string (a path, a stack from a foreign recording) as U+FFFD instead of an exception.
#pragma once

#include <cmath>
#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace memtap {

class JsonWriter {
 public:
  JsonWriter& begin_object() { return open(Json::object()); }
  JsonWriter& end_object() { return close(); }
  JsonWriter& begin_array() { return open(Json::array()); }
  JsonWriter& end_array() { return close(); }
  JsonWriter& key(std::string_view k) {
    if (!open_.empty()) open_.back().key.assign(k);
    return *this;
  }
  JsonWriter& value(std::string_view s) { return add(Json(std::string(s))); }
  JsonWriter& value(const char* s) { return value(std::string_view(s)); }
  JsonWriter& value(int64_t n) { return add(Json(n)); }
  JsonWriter& value(uint64_t n) { return add(Json(n)); }
  JsonWriter& value(int n) { return value(int64_t(n)); }
  JsonWriter& value(uint32_t n) { return value(uint64_t(n)); }
  JsonWriter& value(double d) { return std::isfinite(d) ? add(Json(d)) : null(); }
  JsonWriter& value(bool b) { return add(Json(b)); }
  JsonWriter& null() { return add(Json(nullptr)); }

  // The document, compact (no spaces), once every object and array is closed.
  const std::string& str() const {
    text_ = root_.dump(-1, ' ', false, Json::error_handler_t::replace);
    return text_;
  }

 private:
  // Keys keep the order they were written in, as a streaming writer's would.
  using Json = nlohmann::ordered_json;
  // An object or array still open, and the key its next member goes under.
  struct Open {
    Json node;
    std::string key;
  };

  JsonWriter& open(Json node) {
    open_.push_back(Open{std::move(node), {}});
    return *this;
  }
  JsonWriter& close() {
    Json done = std::move(open_.back().node);
    open_.pop_back();
    return add(std::move(done));
  }
  JsonWriter& add(Json v) {
    if (open_.empty()) {
      root_ = std::move(v);
    } else if (open_.back().node.is_object()) {
      open_.back().node[open_.back().key] = std::move(v);
    } else {
      open_.back().node.push_back(std::move(v));
    }
    return *this;
  }

  std::vector<Open> open_;
  Json root_;
  mutable std::string text_;
};

}  // namespace memtap
