// See row_spool.h.
#include "monitor/store/row_spool.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstring>
#include <utility>

#include "monitor/store/positioned_io.h"

namespace memtap {
namespace {

// A block: its header, then `rows` packed rows in `bytes` bytes.
constexpr uint32_t kBlockMagic = 0x5053544d;  // "MTSP"
constexpr size_t kHeaderBytes = 12;           // magic, rows, bytes: three little-endian u32

// The numeric fields in the order they are packed. A row is stored as its event byte (bit 7:
// is_mmap), its event type byte (bit 7: has_stream), a 16-bit mask of the fields that differ from
// the previous row of the block (all zero before the first), one 4-bit length (bytes - 1) per such
// field, two to a byte, then each difference, zigzag-encoded, in that many little-endian bytes:
// times, ids and addresses of neighbouring rows are close, so most take 1-3 bytes. Fixed lengths
// rather than varints: a value is one 8-byte store and an advance, with no loop per byte,
// since the receiving thread packs every row of a flood.
//
// A framework pool's rows (PTA MALLOC/FREE, a device pool's SNAPSHOT) say more: pool_used,
// pool_total, free_pending and has_pool_peaks. Bit 6 of the event byte says such a row has a
// pool extension after its fields: a byte (bit 0: used changed, bit 1: total changed, bit 2:
// free_pending, bit 3: has_pool_peaks), then when either changed a byte of two 4-bit lengths (used
// low, total high), then the changed values' zigzag differences from the previous extended row of
// the block (-1 before the first). Rows without pool figures, the many, pay nothing for them.
constexpr int kFields = 16;
constexpr uint8_t kEventIsMmap = 0x80;
constexpr uint8_t kEventHasPool = 0x40;
constexpr uint8_t kEventCode = 0x3f;
constexpr size_t kMaxPoolBytes = 2 + 2 * 8;
constexpr size_t kMaxRowBytes = 4 + (kFields + 1) / 2 + kFields * 8 + kMaxPoolBytes;
static_assert(uint8_t(DumpEvent::kFreeCompleted) <= kEventCode, "event codes fit beside the flags");
// Packing stores 8 bytes for every value and unpacking loads 8: the slack past the end.
constexpr size_t kSlackBytes = 8;

void fields_of(const DumpRow& r, uint64_t (&v)[kFields]) {
  v[0] = uint64_t(r.timestamp_ns);
  v[1] = r.process_id;
  v[2] = r.thread_id;
  v[3] = r.ptr;
  v[4] = r.size_bytes;
  v[5] = r.total_bytes;
  v[6] = r.allocation_id;
  v[7] = r.inherited_from_pid;
  v[8] = r.name;
  v[9] = r.owner;
  v[10] = r.stack_python;
  v[11] = r.stack_c;
  v[12] = r.step;
  v[13] = uint64_t(r.end_ns);
  v[14] = uint64_t(int64_t{r.device} + 1);  // kDumpNoDevice, most rows: 0
  v[15] = r.stream;
}

// False when a 32-bit field holds more: the bytes are not what push() wrote.
bool fits(const uint64_t (&v)[kFields]) {
  for (int i : {1, 2, 7, 8, 9, 10, 11}) {
    if (v[i] > UINT32_MAX) return false;
  }
  return v[14] <= uint64_t{INT32_MAX} + 1;
}

bool has_pool(const DumpRow& r) {
  return r.pool_used != -1 || r.pool_total != -1 || r.free_pending || r.has_pool_peaks;
}

// Every field at once (see make_row in heap_pairing.cpp: no zeroing first); the pool's
// fields are their defaults, set after.
DumpRow row_of(uint8_t event, uint8_t type, const uint64_t (&v)[kFields]) {
  return DumpRow{DumpEvent(event & kEventCode),
                 DumpEventType(type & 0x7f),
                 (event & kEventIsMmap) != 0,
                 (type & 0x80) != 0,
                 int32_t(int64_t(v[14]) - 1),
                 int64_t(v[0]),
                 uint32_t(v[1]),
                 uint32_t(v[2]),
                 v[3],
                 v[4],
                 v[5],
                 v[6],
                 uint32_t(v[7]),
                 uint32_t(v[8]),
                 uint32_t(v[9]),
                 uint32_t(v[10]),
                 uint32_t(v[11]),
                 /*free_pending=*/false,
                 /*has_pool_peaks=*/false,
                 v[12],
                 int64_t(v[13]),
                 v[15]};
}

void put_u32(char* at, uint32_t v) {
  for (int i = 0; i < 4; ++i) at[i] = char(v >> (8 * i));
}

uint32_t get_u32(const char* at) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= uint32_t(uint8_t(at[i])) << (8 * i);
  return v;
}

static_assert(__BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__, "values are stored as their low bytes");

uint64_t zigzag(uint64_t d) {
  return (d << 1) ^ uint64_t(int64_t(d) >> 63);
}

// Bytes needed for v (at least 1).
unsigned byte_length(uint64_t v) {
  return unsigned(71 - __builtin_clzll(v | 1)) / 8;
}

// Packs the rows at `out` (with kSlackBytes to spare past what it returns); returns the
// bytes written.
size_t pack_rows(const DumpRow* rows, size_t count, char* out) {
  char* p = out;
  uint64_t prev[kFields] = {};
  uint64_t prev_pool[2] = {~uint64_t{0}, ~uint64_t{0}};  // used, total: -1
  uint64_t cur[kFields];
  uint64_t z[kFields];
  for (size_t r = 0; r < count; ++r) {
    const DumpRow& row = rows[r];
    fields_of(row, cur);
    unsigned mask = 0;
    unsigned changed = 0;
    // Unrolled: as a loop this was most of the packing, which the receiving thread does for
    // every row of a flood.
#pragma GCC unroll 16
    for (int i = 0; i < kFields; ++i) {
      z[i] = zigzag(cur[i] - prev[i]);
      const unsigned differs = cur[i] != prev[i];
      mask |= differs << i;
      changed += differs;
      prev[i] = cur[i];
    }
    const bool pool = has_pool(row);
    p[0] = char(uint8_t(row.event) | (row.is_mmap ? kEventIsMmap : 0) | (pool ? kEventHasPool : 0));
    p[1] = char(uint8_t(row.event_type) | (row.has_stream ? 0x80 : 0));
    p[2] = char(mask);
    p[3] = char(mask >> 8);
    unsigned char* lengths = reinterpret_cast<unsigned char*>(p + 4);
    p += 4 + (changed + 1) / 2;
    unsigned n = 0;
    for (unsigned m = mask; m != 0; m &= m - 1, ++n) {
      const uint64_t v = z[__builtin_ctz(m)];
      const unsigned len = byte_length(v);
      if (n % 2 == 0) {
        lengths[n / 2] = (unsigned char)(len - 1);
      } else {
        lengths[n / 2] |= (unsigned char)((len - 1) << 4);
      }
      std::memcpy(p, &v, 8);  // little-endian x86/ARM: the low `len` bytes come first
      p += len;
    }
    if (pool) {
      const uint64_t cur_pool[2] = {uint64_t(row.pool_used), uint64_t(row.pool_total)};
      unsigned char* flags = reinterpret_cast<unsigned char*>(p++);
      *flags = (row.free_pending ? 4 : 0) | (row.has_pool_peaks ? 8 : 0);
      unsigned char* lengths = nullptr;
      for (int i = 0; i < 2; ++i) {
        if (cur_pool[i] == prev_pool[i]) continue;
        if (lengths == nullptr) {
          lengths = reinterpret_cast<unsigned char*>(p++);
          *lengths = 0;
        }
        const uint64_t v = zigzag(cur_pool[i] - prev_pool[i]);
        const unsigned len = byte_length(v);
        *flags |= (unsigned char)(1u << i);
        *lengths |= (unsigned char)((len - 1) << (4 * i));
        std::memcpy(p, &v, 8);
        p += len;
        prev_pool[i] = cur_pool[i];
      }
    }
  }
  return size_t(p - out);
}

// Unpacks exactly `count` rows from exactly [data, data+size); false if they are not
// there. Reads up to kSlackBytes past the end.
bool unpack_rows(const char* data, size_t size, size_t count, std::vector<DumpRow>* out) {
  const char* p = data;
  const char* end = data + size;
  uint64_t v[kFields] = {};
  uint64_t pool[2] = {~uint64_t{0}, ~uint64_t{0}};
  for (size_t r = 0; r < count; ++r) {
    if (end - p < 4) return false;
    const uint8_t event = uint8_t(p[0]);
    const uint8_t type = uint8_t(p[1]);
    if ((event & kEventCode) > uint8_t(DumpEvent::kFreeCompleted) ||
        (type & 0x7f) > uint8_t(DumpEventType::kPta)) {
      return false;
    }
    const unsigned mask = unsigned(uint8_t(p[2])) | unsigned(uint8_t(p[3])) << 8;
    if (mask >> kFields) return false;
    unsigned changed = 0;  // a loop: __builtin_popcount is a libgcc call without -mpopcnt
    for (unsigned m = mask; m != 0; m &= m - 1) ++changed;
    const unsigned char* lengths = reinterpret_cast<const unsigned char*>(p + 4);
    if (size_t(end - p) < 4 + (changed + 1) / 2) return false;
    p += 4 + (changed + 1) / 2;
    unsigned n = 0;
    for (unsigned m = mask; m != 0; m &= m - 1, ++n) {
      const unsigned len = ((lengths[n / 2] >> (4 * (n % 2))) & 0xf) + 1;
      if (len > 8 || size_t(end - p) < len) return false;
      uint64_t z;
      std::memcpy(&z, p, 8);
      if (len < 8) z &= (uint64_t{1} << (8 * len)) - 1;
      p += len;
      v[__builtin_ctz(m)] += (z >> 1) ^ (0 - (z & 1));
    }
    if (!fits(v)) return false;
    DumpRow& row = out->emplace_back(row_of(event, type, v));
    if ((event & kEventHasPool) == 0) continue;
    if (end - p < 1) return false;
    const unsigned flags = uint8_t(*p++);
    if (flags > 15) return false;
    if ((flags & 3) != 0) {
      if (end - p < 1) return false;
      const unsigned lengths = uint8_t(*p++);
      for (int i = 0; i < 2; ++i) {
        if ((flags & (1u << i)) == 0) continue;
        const unsigned len = ((lengths >> (4 * i)) & 0xf) + 1;
        if (len > 8 || size_t(end - p) < len) return false;
        uint64_t z;
        std::memcpy(&z, p, 8);
        if (len < 8) z &= (uint64_t{1} << (8 * len)) - 1;
        p += len;
        pool[i] += (z >> 1) ^ (0 - (z & 1));
      }
    }
    row.pool_used = int64_t(pool[0]);
    row.pool_total = int64_t(pool[1]);
    row.free_pending = (flags & 4) != 0;
    row.has_pool_peaks = (flags & 8) != 0;
  }
  return p == end;
}

}  // namespace

std::unique_ptr<RowSpool> RowSpool::create(const std::string& path, std::string* error) {
  const int fd = open(path.c_str(), O_RDWR | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) {
    const int err = errno;
    if (error != nullptr) *error = "cannot create " + path + ": " + std::strerror(err);
    errno = err;
    return nullptr;
  }
  return std::unique_ptr<RowSpool>(new RowSpool(path, fd));
}

RowSpool::~RowSpool() {
  close(fd_);
  unlink(path_.c_str());
}

bool RowSpool::push(const DumpRow* rows, size_t count, std::string* error) {
  if (count == 0) return true;
  if (count > UINT32_MAX / kMaxRowBytes) {
    // One block's size must fit its header: split what no append ever gives at once.
    const size_t half = count / 2;
    return push(rows, half, error) && push(rows + half, count - half, error);
  }
  const size_t most = kHeaderBytes + count * kMaxRowBytes + kSlackBytes;
  if (packed_capacity_ < most) {
    packed_capacity_ = std::max(most, 2 * packed_capacity_);
    packed_.reset(new char[packed_capacity_]);
  }
  char* packed = packed_.get();
  const size_t bytes = pack_rows(rows, count, packed + kHeaderBytes);
  put_u32(packed, kBlockMagic);
  put_u32(packed + 4, uint32_t(count));
  put_u32(packed + 8, uint32_t(bytes));
  const uint64_t at = end_offset_;
  if (!write_all(fd_, packed, kHeaderBytes + bytes, off_t(at))) {
    last_errno_ = errno;
    if (error != nullptr) {
      *error = path_ + ": writing rows at byte " + std::to_string(at) + ": " +
               std::strerror(last_errno_);
    }
    // A partial write leaves bytes past end_offset_, which the next push overwrites.
    return false;
  }
  end_offset_ += kHeaderBytes + bytes;
  written_ += count;
  unclaimed_.push_back(Block{kHeaderBytes + bytes, count});
  return true;
}

RowSpool::Claim RowSpool::claim(size_t max) {
  Claim c{claimed_, 0, claimed_offset_, 0};
  while (!unclaimed_.empty() && (c.count == 0 || c.count + unclaimed_.front().rows <= max)) {
    c.count += unclaimed_.front().rows;
    c.bytes += unclaimed_.front().bytes;
    unclaimed_.pop_front();
  }
  claimed_ += c.count;
  claimed_offset_ += c.bytes;
  return c;
}

bool RowSpool::read(const Claim& claim, std::vector<DumpRow>* out, std::string* error) const {
  const size_t before = out->size();
  std::vector<char> bytes(claim.bytes + kSlackBytes);
  uint64_t at = claim.offset;
  std::string reason;
  if (!read_all(fd_, bytes.data(), claim.bytes, off_t(at))) {
    reason = std::strerror(errno);
  } else {
    // Block by block: each must be where push() put it, holding what its header says.
    size_t rows = 0;
    for (size_t pos = 0; pos < claim.bytes && reason.empty();) {
      at = claim.offset + pos;
      const size_t left = claim.bytes - pos;
      const char* block = bytes.data() + pos;
      if (left < kHeaderBytes || get_u32(block) != kBlockMagic ||
          get_u32(block + 8) > left - kHeaderBytes) {
        reason = "expected a block of rows there";
        break;
      }
      const uint32_t count = get_u32(block + 4);
      const uint32_t size = get_u32(block + 8);
      if (!unpack_rows(block + kHeaderBytes, size, count, out)) {
        reason = "the block there does not hold the " + std::to_string(count) + " rows written";
        break;
      }
      rows += count;
      pos += kHeaderBytes + size;
    }
    if (reason.empty() && rows != claim.count) reason = "fewer rows than were written";
  }
  if (reason.empty()) return true;
  out->resize(before);
  if (error != nullptr) {
    *error = path_ + ": reading rows back at byte " + std::to_string(at) + ": " + reason;
  }
  return false;
}

void RowSpool::truncate_if_drained() {
  if (written_ == 0 || unread() != 0) return;
  if (ftruncate(fd_, 0) == 0) written_ = claimed_ = end_offset_ = claimed_offset_ = 0;
}

}  // namespace memtap
