// memtap_bench_attr_parse [ROWS]: memtap's Attr splitter (monitor/store/reader/attr_parser.h)
// against simdjson's On-Demand parser on the JSON form msMemScope writes today, the form of
// every Attr in a memtap recording. Prints ns per Attr for each and their ratio, and a
// checksum of the sizes both read, so that neither can skip work.
//
// simdjson reads only the JSON form (the older `{key:value}` ones need memtap's splitter
// anyway); this says whether it would be worth a second path for the newest form.
#include <simdjson.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "monitor/store/reader/attr_parser.h"

namespace {

// Attr texts as memtap and msMemScope write them for MALLOC rows.
std::vector<std::string> attrs(size_t n) {
  std::vector<std::string> out;
  out.reserve(n);
  char buf[160];
  for (size_t i = 0; i < n; ++i) {
    snprintf(buf, sizeof buf,
             "{\"allocation_id\":\"%zu\",\"addr\":\"0x%016zx\",\"size\":\"%zu\"%s}", i + 1,
             0x7f0000000000 + i * 4096, 32 + (i * 7919) % 1000000,
             i % 4 == 0 ? ",\"owner\":\"model@cache\"" : "");
    out.emplace_back(buf);
  }
  return out;
}

double seconds_since(std::chrono::steady_clock::time_point t0) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
}

}  // namespace

int main(int argc, char** argv) {
  const size_t n = argc > 1 ? strtoull(argv[1], nullptr, 10) : 2'000'000;
  const std::vector<std::string> texts = attrs(n);

  // memtap's splitter, as the reader calls it: pairs into a reused vector.
  uint64_t memtap_sum = 0;
  std::vector<memtap::reader::AttrPair> pairs;
  std::string scratch, error;
  auto t0 = std::chrono::steady_clock::now();
  for (const std::string& t : texts) {
    if (!memtap::reader::split_attr(t, &pairs, &scratch, &error)) return 1;
    for (const auto& p : pairs) {
      if (p.key == "size") memtap_sum += strtoull(std::string(p.value).c_str(), nullptr, 10);
    }
  }
  const double memtap_s = seconds_since(t0);

  // simdjson On-Demand: the text copied into a padded buffer (a SQLite column is not padded),
  // then the object's fields walked, as a reader would.
  simdjson::ondemand::parser parser;
  simdjson::padded_string padded;
  uint64_t simd_sum = 0;
  t0 = std::chrono::steady_clock::now();
  for (const std::string& t : texts) {
    // A SQLite column is not padded: copy, as a reader of one must.
    padded = simdjson::padded_string(t);
    auto doc = parser.iterate(padded);
    simdjson::ondemand::object object;
    if (doc.get_object().get(object)) return 1;
    for (auto field : object) {
      std::string_view key;
      if (field.unescaped_key().get(key)) return 1;
      std::string_view value;
      if (field.value().get_string().get(value)) return 1;
      if (key == "size") simd_sum += strtoull(std::string(value).c_str(), nullptr, 10);
    }
  }
  const double simd_s = seconds_since(t0);

  const double memtap_ns = memtap_s * 1e9 / double(n), simd_ns = simd_s * 1e9 / double(n);
  printf("attr_parse: %zu Attr texts (JSON form); checksums %llu / %llu\n", n,
         (unsigned long long)memtap_sum, (unsigned long long)simd_sum);
  printf("| Attr splitting, ns per Attr | memtap split_attr | simdjson On-Demand |\n");
  printf("| --- | ---: | ---: |\n| JSON form | %.1f | %.1f |\n", memtap_ns, simd_ns);
  printf("RESULT attr_memtap_ns=%.1f attr_simdjson_ns=%.1f attr_simdjson_x_memtap=%.2f\n",
         memtap_ns, simd_ns, simd_ns / memtap_ns);
  return memtap_sum == simd_sum ? 0 : 1;
}
