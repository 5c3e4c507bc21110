// The event table's pages, read from real recordings (memtap's text table and its compact
// tables under the memscope_dump view, and a CSV file's database): filters by time, text,
// size, kind and device, the count, sorted pages and pages reached by scrolling or by a jump.
#include "monitor/viewdata/event_pages.h"

#include <gtest/gtest.h>
#include <sqlite3.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <optional>

#include "monitor/store/reader/recording_reader.h"
#include "monitor/viewdata/csv_database.h"
#include "tests/unit/store/store_test_support.h"
#include "tests/unit/viewdata/recording_builder.h"

namespace memtap {
namespace {

using viewdata::EventColumn;
using viewdata::EventFilter;
using viewdata::EventPage;
using viewdata::EventPages;
using viewdata::EventQuery;

constexpr int kBlocks = 1000;

// START_TRACE, then block i: MALLOC at i ms of 16 * (i + 1) bytes (owner "weights" for
// every third, else "activations"), FREE at i + 0.5 ms for even i; then STOP_TRACE.
// 1,502 rows in time order.
class EventPagesTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    for (int i = 0; i < kBlocks; ++i) {
      const uint64_t addr = 0x100000 + uint64_t(i) * 0x1000;
      b_.malloc(i, addr, 16 * uint64_t(i + 1), i % 3 == 0 ? "weights" : "activations",
                i % 10 == 0 ? "train.py(12): step" : "");
      if (i % 2 == 0) b_.free(i + 0.5, addr);
    }
    path_ = dir_.file("events.db");
    b_.write(path_, /*compact=*/GetParam());
  }

  EventQuery query(EventFilter filter = {}, EventColumn column = EventColumn::kId,
                   bool descending = false) const {
    return {path_, "memscope_dump", std::move(filter), column, descending};
  }

  test::TempDir dir_;
  test::RecordingBuilder b_;
  std::string path_;
};

TEST_P(EventPagesTest, CountsEveryRowAndPagesInIdOrder) {
  EventPages pages;
  EventPage first = pages.page(query(), 0, 100);
  ASSERT_EQ(first.error, "");
  EXPECT_EQ(first.total_rows, 1502u);
  ASSERT_EQ(first.rows.size(), 100u);
  EXPECT_EQ(first.rows[0].event, "SYSTEM");
  EXPECT_EQ(first.rows[0].event_type, "START_TRACE");
  EXPECT_EQ(first.rows[1].event, "MALLOC");
  EXPECT_EQ(first.rows[1].owner, "weights");
  EXPECT_EQ(first.rows[1].stack_python, "train.py(12): step");
  EXPECT_EQ(first.rows[2].event, "FREE");
  EXPECT_EQ(first.rows[2].size_bytes, 16u);
  EXPECT_EQ(first.rows[2].timestamp_ns, b_.at(0.5));
}

TEST_P(EventPagesTest, PageThreeIsTheSameScrolledToOrJumpedTo) {
  // Row 300 (from 0) is block 199's MALLOC: three rows per two blocks after START_TRACE.
  EventPages scrolled;
  for (size_t offset = 0; offset < 300; offset += 100) scrolled.page(query(), offset, 100);
  const EventPage page3 = scrolled.page(query(), 300, 100);
  EventPages jumped;
  const EventPage direct = jumped.page(query(), 300, 100);
  ASSERT_EQ(page3.rows.size(), 100u);
  ASSERT_EQ(direct.rows.size(), 100u);
  EXPECT_EQ(page3.rows[0].event, "MALLOC");
  EXPECT_EQ(page3.rows[0].size_bytes, 3200u);
  EXPECT_EQ(page3.rows[0].timestamp_ns, b_.at(199));
  for (size_t i = 0; i < 100; ++i) {
    EXPECT_EQ(page3.rows[i].id, direct.rows[i].id);
    if (i > 0) {
      EXPECT_EQ(page3.rows[i].id, page3.rows[i - 1].id + 1);
    }
  }
  // Back to an earlier page, then the last one (2 rows).
  EXPECT_EQ(scrolled.page(query(), 100, 100).rows[0].id, page3.rows[0].id - 200);
  const EventPage last = scrolled.page(query(), 1500, 100);
  ASSERT_EQ(last.rows.size(), 2u);
  EXPECT_EQ(last.rows[1].event_type, "STOP_TRACE");
}

TEST_P(EventPagesTest, DescendingIdOrderStartsAtTheEnd) {
  EventPages pages;
  const EventPage first = pages.page(query({}, EventColumn::kId, true), 0, 100);
  ASSERT_EQ(first.rows.size(), 100u);
  EXPECT_EQ(first.rows[0].event_type, "STOP_TRACE");
  const EventPage second = pages.page(query({}, EventColumn::kId, true), 100, 100);
  ASSERT_EQ(second.rows.size(), 100u);
  EXPECT_EQ(second.rows[0].id, first.rows[99].id - 1);
}

TEST_P(EventPagesTest, TimeRangeFilters) {
  EventFilter f;
  f.t0_ns = b_.at(100);
  f.t1_ns = b_.at(199.9);
  EventPages pages;
  const EventPage page = pages.page(query(f), 0, 200);
  EXPECT_EQ(page.total_rows, 150u);  // 100 MALLOCs and 50 FREEs
  ASSERT_EQ(page.rows.size(), 150u);
  EXPECT_EQ(page.rows.front().timestamp_ns, b_.at(100));
  EXPECT_EQ(page.rows.back().timestamp_ns, b_.at(199));
}

TEST_P(EventPagesTest, TextFiltersOwnerNameAndStacksIgnoringCase) {
  EventFilter f;
  f.text = "WEIGHTS";
  EventPages pages;
  EXPECT_EQ(pages.page(query(f), 0, 10).total_rows, 334u + 167u);
  f.text = "train.py(12)";
  EXPECT_EQ(pages.page(query(f), 0, 10).total_rows, 100u);  // MALLOCs only carry the stack
  f.text = "no such owner";
  EXPECT_EQ(pages.page(query(f), 0, 10).total_rows, 0u);
}

TEST_P(EventPagesTest, SizeAndKindFilter) {
  EventFilter f;
  f.min_size = 1000;
  f.max_size = 2000;
  EventPages pages;
  EXPECT_EQ(pages.page(query(f), 0, 10).total_rows, 63u + 32u);
  f.kinds = {"FREE"};
  EXPECT_EQ(pages.page(query(f), 0, 10).total_rows, 32u);
}

TEST_P(EventPagesTest, SortsBySizeDescendingAcrossPages) {
  EventFilter f;
  f.kinds = {"MALLOC", "FREE"};
  EventPages pages;
  const EventQuery q = query(f, EventColumn::kSize, true);
  const EventPage first = pages.page(q, 0, 100);
  EXPECT_EQ(first.total_rows, 1500u);
  ASSERT_EQ(first.rows.size(), 100u);
  EXPECT_EQ(first.rows[0].size_bytes, 16000u);
  // Ties (a block's MALLOC and FREE) by ID, descending too: the FREE first.
  EXPECT_EQ(first.rows[1].event, "FREE");
  EXPECT_EQ(first.rows[2].event, "MALLOC");
  EXPECT_EQ(first.rows[1].size_bytes, 15984u);
  const EventPage third = pages.page(q, 200, 100);
  ASSERT_EQ(third.rows.size(), 100u);
  EXPECT_LE(third.rows[0].size_bytes, first.rows[99].size_bytes);
  for (size_t i = 1; i < third.rows.size(); ++i) {
    EXPECT_LE(third.rows[i].size_bytes, third.rows[i - 1].size_bytes);
  }
  // Sorted by owner, the filter still holds and the count is the same.
  const EventPage by_owner = pages.page(query(f, EventColumn::kOwner), 0, 10);
  EXPECT_EQ(by_owner.total_rows, 1500u);
  EXPECT_EQ(by_owner.rows[0].owner, "activations");
}

// Host rows (heap and pinned), GPU 0's blocks, GPU 1's kernels and steps, interleaved in
// time from `start_ms` (530 rows with START_TRACE and STOP_TRACE):
//   host  300 heap MALLOCs at i ms, 12 HOST_PINNED MALLOCs        (Device Id `cpu`)
//   GPU 0 100 HAL MALLOCs of 4 KiB * (i + 1), 50 of them freed    (`0`)
//   GPU 1 60 KERNEL_LAUNCH rows                                   (`1`)
//   none  6 STEP rows, START_TRACE, STOP_TRACE                    (`N/A`)
void add_device_rows(test::RecordingBuilder& b, double start_ms = 0) {
  for (int i = 0; i < 300; ++i) {
    const double ms = start_ms + i;
    b.malloc(ms, 0x100000 + uint64_t(i) * 0x1000, 64, "heap");
    if (i % 3 == 0) {
      b.device_malloc(ms + 0.1, 0x7f0000000000 + uint64_t(i) * 0x100000, 4096 * uint64_t(i + 1), 0);
    }
    if (i % 6 == 0) b.device_free(ms + 0.2, 0x7f0000000000 + uint64_t(i) * 0x100000, 0);
    if (i % 5 == 0) b.kernel_launch(ms + 0.3, "gemm_kernel", 1);
    if (i % 50 == 0) b.step(ms + 0.4, uint64_t(i / 50 + 1));
    if (i % 25 == 0) b.pinned_malloc(ms + 0.5, 0x500000 + uint64_t(i) * 0x1000, 1024);
  }
}

class EventPagesDeviceTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    add_device_rows(b_);
    path_ = dir_.file("devices.db");
    b_.write(path_, /*compact=*/GetParam());
  }

  EventQuery query(std::optional<int32_t> device, EventColumn column = EventColumn::kId,
                   bool descending = false) const {
    EventFilter f;
    f.pid = b_.pid();
    f.device = device;
    return {path_, "memscope_dump", f, column, descending};
  }

  test::TempDir dir_;
  test::RecordingBuilder b_;
  std::string path_;
};

TEST_P(EventPagesDeviceTest, ADeviceShowsItsRowsAndThoseOfNoDevice) {
  EventPages pages;
  EXPECT_EQ(pages.page(query(std::nullopt), 0, 10).total_rows, 530u);
  const std::map<int32_t, std::pair<uint64_t, std::string>> expected = {
      {kHostDevice, {300u + 12u + 8u, "cpu"}}, {0, {150u + 8u, "0"}}, {1, {60u + 8u, "1"}}};
  for (const auto& [device, want] : expected) {
    const EventPage page = pages.page(query(device), 0, 1000);
    ASSERT_EQ(page.error, "");
    EXPECT_EQ(page.total_rows, want.first) << "device " << device;
    ASSERT_EQ(page.rows.size(), want.first) << "device " << device;
    size_t steps = 0;
    for (const auto& row : page.rows) {
      EXPECT_TRUE(row.device_id == want.second || row.device_id == "N/A")
          << "device " << device << ": row " << row.id << " of " << row.device_id;
      steps += row.event_type == "STEP" ? 1 : 0;
    }
    EXPECT_EQ(steps, 6u) << "device " << device;  // the steps place a device's rows in time
  }
  // No such device: its process's rows of no device only.
  EXPECT_EQ(pages.page(query(7), 0, 10).total_rows, 8u);
}

TEST_P(EventPagesDeviceTest, PagesOfADeviceAreTheSameScrolledJumpedOrSorted) {
  EventPages whole, scrolled, jumped;
  const EventPage all = whole.page(query(0), 0, 1000);
  ASSERT_EQ(all.rows.size(), 158u);
  std::vector<int64_t> by_pages;
  for (size_t offset = 0; offset < 158; offset += 40) {
    for (const auto& row : scrolled.page(query(0), offset, 40).rows) by_pages.push_back(row.id);
  }
  std::vector<int64_t> ids;
  for (const auto& row : all.rows) ids.push_back(row.id);
  EXPECT_EQ(by_pages, ids);
  const EventPage third = jumped.page(query(0), 80, 40);
  ASSERT_EQ(third.rows.size(), 40u);
  EXPECT_EQ(third.rows[0].id, all.rows[80].id);
  // Sorted by size, largest first: GPU 0's last block, its FREE after its MALLOC (ties by
  // ID, descending), and the host's heap blocks nowhere.
  const EventPage by_size = jumped.page(query(0, EventColumn::kSize, true), 0, 200);
  EXPECT_EQ(by_size.total_rows, 158u);
  ASSERT_FALSE(by_size.rows.empty());
  EXPECT_EQ(by_size.rows[0].size_bytes, 4096u * 298);
  EXPECT_EQ(by_size.rows[0].device_id, "0");
  for (const auto& row : by_size.rows) EXPECT_NE(row.size_bytes, 64u) << row.id;
}

INSTANTIATE_TEST_SUITE_P(TextAndCompact, EventPagesDeviceTest, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "Compact" : "Text"; });

// Older files spell the host `host` (msMemScope's before 2025): the host's rows all the same.
TEST(EventPages, TheHostIsCpuOrHost) {
  test::RecordingBuilder b;
  add_device_rows(b);
  test::TempDir dir;
  const std::string path = dir.file("old.db");
  b.write(path, false);
  sqlite3* db = nullptr;
  ASSERT_EQ(sqlite3_open(path.c_str(), &db), SQLITE_OK);
  ASSERT_EQ(sqlite3_exec(db,
                         "UPDATE memscope_dump SET \"Device Id\" = 'host' WHERE \"Device Id\" = "
                         "'cpu' AND \"Event Type\" = 'HOST'",
                         nullptr, nullptr, nullptr),
            SQLITE_OK);
  sqlite3_close(db);
  EventFilter f;
  f.device = kHostDevice;
  EventPages pages;
  EXPECT_EQ(pages.page({path, "memscope_dump", f, EventColumn::kId, false}, 0, 10).total_rows,
            320u);
}

// A CSV recording opened in the window pages from a database of its events
// (write_csv_database); msMemScope's CSV spells the host `host` and rows of no device `N/A`.
TEST(EventPages, ACsvRecordingFiltersByDevice) {
  test::TempDir dir;
  const std::string csv = dir.file("memscope_dump_20250428113810.csv");
  {
    std::ofstream out(csv);
    out << "ID,Event,Event Type,Name,Timestamp(ns),Process Id,Thread Id,Device Id,Ptr,Attr,"
           "Call Stack(Python),Call Stack(C)\n";
    int id = 0;
    const auto row = [&](const char* event, const char* type, const char* device,
                         const std::string& ptr, const std::string& attr) {
      ++id;
      out << id << "," << event << "," << type << ",N/A," << 1746006014162153 + id * 1000 << ",7,7,"
          << device << "," << ptr << "," << attr << ",,\n";
    };
    row("SYSTEM", "START_TRACE", "N/A", "N/A", "");
    for (int i = 0; i < 20; ++i) {
      const std::string addr = std::to_string(20615843020800 + i * 65536);
      const char* device = i % 4 == 0 ? "host" : i % 4 == 1 ? "1" : "0";
      row("MALLOC", "HAL", device, addr, "\"{addr:" + addr + ",size:16384,owner:,MID:7}\"");
    }
  }
  Recording rec;
  std::string error;
  ASSERT_TRUE(read_recording(csv, &rec, &error)) << error;
  const std::string db = viewdata::write_csv_database(rec.events, rec.strings, csv, &error);
  ASSERT_NE(db, "") << error;
  EventPages pages;
  const auto count = [&](int32_t device) {
    EventFilter f;
    f.device = device;
    const EventPage page = pages.page({db, "memscope_dump", f, EventColumn::kId, false}, 0, 100);
    EXPECT_EQ(page.error, "");
    return page.total_rows;
  };
  EXPECT_EQ(count(kHostDevice), 5u + 1u);
  EXPECT_EQ(count(0), 10u + 1u);
  EXPECT_EQ(count(1), 5u + 1u);
  std::remove(db.c_str());
}

// A compact recording is filtered and sorted on its integer columns, not through the
// memscope_dump view: every filter and every column's order must give the rows the text
// table gives for the same recording (names of steps, rows without a name or owner, an
// owner JSON escapes, snapshots without a size, a second process).
TEST(EventPages, CompactAndTextAgreeOnEveryFilterAndOrder) {
  test::RecordingBuilder b;
  b.step(0.5, 12);
  for (int i = 0; i < 60; ++i) {
    const uint64_t addr = 0x200000 + uint64_t(i % 7) * 0x100 + uint64_t(i) * 0x10000;
    const std::string owner = i % 4 == 0 ? "" : i % 4 == 1 ? "we\"ird\\owner" : "Model.layer12";
    b.malloc(1 + i, addr, uint64_t(1 + (i * 37) % 50) * 64, owner,
             i % 5 == 0 ? "train.py(12): step\nloop.py(3): run" : "", i % 9 == 0);
    if (i % 3 == 0) b.free(1.5 + i, addr, i % 9 == 0);
    if (i % 10 == 0) b.rss(1.7 + i, 1000 + uint64_t(i), i % 20 == 0 ? 5000 : 0);
    if (i == 30) b.use_pid(200);
    if (i % 15 == 0) b.step(1.8 + i, uint64_t(i));
  }
  add_device_rows(b, 100);  // GPUs' blocks and kernels, pinned blocks: the second process's
  test::TempDir dir;
  const std::string text_path = dir.file("text.db"), compact_path = dir.file("compact.db");
  b.write(text_path, false);
  b.write(compact_path, true);

  std::vector<EventFilter> filters(1);
  for (const char* text : {"12", "N/A", "IRD\\", "layer", "run", "zzz"}) {
    filters.emplace_back().text = text;
  }
  filters.emplace_back().pid = 200;
  filters.emplace_back().kinds = {"SYSTEM", "SNAPSHOT"};
  const std::vector<std::string> kUnknown = {"N/A"};  // no such rows: matches nothing
  filters.emplace_back().kinds = kUnknown;
  filters.emplace_back().min_size = 1000;
  filters.emplace_back().max_size = 1000;
  for (const int32_t device : {kHostDevice, 0, 1}) filters.emplace_back().device = device;
  EventFilter on_gpu;
  on_gpu.device = 0;
  on_gpu.pid = 200;
  on_gpu.min_size = 100000;
  filters.push_back(on_gpu);
  on_gpu = {};
  on_gpu.device = 1;
  on_gpu.text = "GEMM";
  filters.push_back(on_gpu);
  EventFilter ranged;
  ranged.t0_ns = b.at(10.5);
  ranged.t1_ns = b.at(40);
  ranged.text = "a";
  ranged.pid = 200;
  filters.push_back(ranged);

  const auto ids = [](EventPages& pages, const EventQuery& q) {
    const EventPage page = pages.page(q, 0, 1000);
    EXPECT_EQ(page.error, "");
    std::vector<int64_t> out;
    for (const auto& row : page.rows) out.push_back(row.id);
    EXPECT_EQ(page.total_rows, out.size());
    return out;
  };
  EventPages text_pages, compact_pages;
  for (size_t f = 0; f < filters.size(); ++f) {
    for (int c = 0; c < viewdata::kEventColumns; ++c) {
      for (bool descending : {false, true}) {
        const auto column = EventColumn(c);
        const std::vector<int64_t> text_ids =
            ids(text_pages, {text_path, "memscope_dump", filters[f], column, descending});
        const std::vector<int64_t> compact_ids =
            ids(compact_pages, {compact_path, "memscope_dump", filters[f], column, descending});
        EXPECT_EQ(compact_ids, text_ids)
            << "filter " << f << ", column " << viewdata::event_column_name(column)
            << (descending ? " descending" : "");
        // Each filter but "zzz" and the unknown kind matches rows: else it tests nothing.
        if (c == 0 && !descending && filters[f].text != "zzz" && filters[f].kinds != kUnknown) {
          EXPECT_FALSE(text_ids.empty()) << "filter " << f;
        }
      }
    }
  }
}

TEST(EventPages, AMissingFileIsAnErrorNamingIt) {
  EventPages pages;
  const EventPage page = pages.page({"/nonexistent/rec.db", "memscope_dump", {}, {}, false}, 0, 10);
  EXPECT_TRUE(page.rows.empty());
  EXPECT_NE(page.error.find("/nonexistent/rec.db"), std::string::npos) << page.error;
}

INSTANTIATE_TEST_SUITE_P(TextAndCompact, EventPagesTest, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "Compact" : "Text"; });

// What a page costs on a real recording (skipped unless MEMTAP_EVENT_PAGES_FILE names one):
//   MEMTAP_EVENT_PAGES_FILE=/tmp/leak.db build/tests/viewdata_test --gtest_filter='*PageCost'
TEST(EventPages, PageCost) {
  const char* path = std::getenv("MEMTAP_EVENT_PAGES_FILE");
  if (path == nullptr) GTEST_SKIP() << "set MEMTAP_EVENT_PAGES_FILE to a recording";
  const auto timed = [](const char* what, auto f) {
    const auto start = std::chrono::steady_clock::now();
    const EventPage page = f();
    const double s =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    std::printf("%-44s %8.3f s  %zu rows of %llu %s\n", what, s, page.rows.size(),
                (unsigned long long)page.total_rows, page.error.c_str());
  };
  EventPages pages;
  EventQuery q{path, "memscope_dump", {}, EventColumn::kId, false};
  timed("first page (count all)", [&] { return pages.page(q, 0, 200); });
  timed("next page", [&] { return pages.page(q, 200, 200); });
  timed("jump to the middle", [&] { return pages.page(q, 1'000'000, 200); });
  timed("the page after it", [&] { return pages.page(q, 1'000'200, 200); });
  EventQuery desc = q;
  desc.descending = true;
  timed("ID descending, first page", [&] { return pages.page(desc, 0, 200); });
  EventQuery ranged = q;
  // From the middle row: inside the recording whatever its length.
  const EventPage middle = pages.page(q, 1'000'000, 1);
  ranged.filter.t0_ns = middle.rows.empty() ? 0 : middle.rows[0].timestamp_ns;
  ranged.filter.t1_ns = ranged.filter.t0_ns + 1'000'000'000;
  timed("a 1 s range, first page (count)", [&] { return pages.page(ranged, 0, 200); });
  EventQuery text = q;
  text.filter.text = "leaks_mem";
  timed("text filter, first page (count)", [&] { return pages.page(text, 0, 200); });
  // The device filter must keep keyset paging: the host's many rows, a GPU's few.
  EventQuery host = q;
  host.filter.device = kHostDevice;
  timed("host, first page (count)", [&] { return pages.page(host, 0, 200); });
  timed("host, jump to the middle", [&] { return pages.page(host, 1'000'000, 200); });
  timed("host, the page after it", [&] { return pages.page(host, 1'000'200, 200); });
  EventQuery gpu = q;
  gpu.filter.device = 0;
  timed("GPU 0, first page (count)", [&] { return pages.page(gpu, 0, 200); });
  timed("GPU 0, next page", [&] { return pages.page(gpu, 200, 200); });
  timed("GPU 0, page 5", [&] { return pages.page(gpu, 1000, 200); });
  // The kind filter likewise: a few snapshots, half the table's MALLOCs.
  EventQuery snapshots = q;
  snapshots.filter.kinds = {"SNAPSHOT"};
  timed("SNAPSHOT rows, first page (count)", [&] { return pages.page(snapshots, 0, 200); });
  EventQuery mallocs = q;
  mallocs.filter.kinds = {"MALLOC"};
  timed("MALLOC rows, first page (count)", [&] { return pages.page(mallocs, 0, 200); });
  timed("MALLOC rows, jump to the middle", [&] { return pages.page(mallocs, 500'000, 200); });
  EventQuery by_size = q;
  by_size.column = EventColumn::kSize;
  by_size.descending = true;
  timed("sort by size desc (sort all)", [&] { return pages.page(by_size, 0, 200); });
  timed("sort by size desc, page 5000", [&] { return pages.page(by_size, 1'000'000, 200); });
}

}  // namespace
}  // namespace memtap
