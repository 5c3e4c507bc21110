// Python call stacks: a C profile function follows each thread's frames (shadow stack);
// the allocator hook reads them without the GIL. See python_stacks.h for the approach.
#include "agent/python_stacks.h"

#include <dlfcn.h>
#include <pthread.h>

#include <atomic>
#include <cstring>

#include "agent/agent_state.h"
#include "agent/memtap.h"
#include "agent/raw_syscalls.h"
#include "agent/stacks.h"
#include "agent/string_log.h"

namespace memtap {
namespace {

// The C API, as opaque pointers: only what is declared here is used.
struct PyObject;
struct PyFrameObject;
using Py_ssize_t = ssize_t;
using ProfileFn = int (*)(PyObject*, PyFrameObject*, int, PyObject*);
using CapsuleDestructor = void (*)(PyObject*);

// PyTrace_* event numbers (stable since Python 2).
constexpr int kPyTraceCall = 0;
constexpr int kPyTraceReturn = 3;

struct PythonApi {
  void (*set_profile)(ProfileFn, PyObject*);      // PyEval_SetProfile
  PyFrameObject* (*get_frame)();                  // PyEval_GetFrame: borrowed
  PyFrameObject* (*frame_back)(PyFrameObject*);   // PyFrame_GetBack: new ref (3.9)
  PyObject* (*frame_code)(PyFrameObject*);        // PyFrame_GetCode: new ref (3.9)
  int (*frame_line)(PyFrameObject*);              // PyFrame_GetLineNumber
  PyObject* (*get_attr)(PyObject*, const char*);  // PyObject_GetAttrString
  const char* (*utf8)(PyObject*, Py_ssize_t*);    // PyUnicode_AsUTF8AndSize
  void (*incref)(PyObject*);                      // Py_IncRef
  void (*decref)(PyObject*);                      // Py_DecRef
  PyObject* (*capsule_new)(void*, const char*, CapsuleDestructor);  // PyCapsule_New
  void* (*capsule_pointer)(PyObject*, const char*);                 // PyCapsule_GetPointer
  void (*err_fetch)(PyObject**, PyObject**, PyObject**);            // PyErr_Fetch
  void (*err_restore)(PyObject*, PyObject*, PyObject*);             // PyErr_Restore
};
PythonApi g_api;
std::atomic<bool> g_api_ready{false};

template <typename F>
bool resolve(F* fn, const char* name) {
  *fn = reinterpret_cast<F>(dlsym(RTLD_DEFAULT, name));
  return *fn != nullptr;
}

bool resolve_api() {
  if (g_api_ready.load(std::memory_order_acquire)) return true;
  PythonApi a;
  bool ok = resolve(&a.set_profile, "PyEval_SetProfile") &&
            resolve(&a.get_frame, "PyEval_GetFrame") && resolve(&a.frame_back, "PyFrame_GetBack") &&
            resolve(&a.frame_code, "PyFrame_GetCode") &&
            resolve(&a.frame_line, "PyFrame_GetLineNumber") &&
            resolve(&a.get_attr, "PyObject_GetAttrString") &&
            resolve(&a.utf8, "PyUnicode_AsUTF8AndSize") && resolve(&a.incref, "Py_IncRef") &&
            resolve(&a.decref, "Py_DecRef") && resolve(&a.capsule_new, "PyCapsule_New") &&
            resolve(&a.capsule_pointer, "PyCapsule_GetPointer") &&
            resolve(&a.err_fetch, "PyErr_Fetch") && resolve(&a.err_restore, "PyErr_Restore");
  if (!ok) return false;
  g_api = a;
  g_api_ready.store(true, std::memory_order_release);
  return true;
}

struct BusyScope {
  BusyScope() { ++tl_agent_busy; }
  ~BusyScope() { --tl_agent_busy; }
};

// A spin lock for the process-wide code table: the GIL already serialises its writers,
// except in a free-threaded interpreter.
class SpinLock {
 public:
  void lock() {
    while (flag_.exchange(true, std::memory_order_acquire)) raw_yield();
  }
  void unlock() { flag_.store(false, std::memory_order_release); }

 private:
  std::atomic<bool> flag_{false};
};

// ---- Code objects -> "file", "function" (process-wide) ----------------------------------

// What a code object's frames are to the recorded stacks (memtap_python_stacks_hide).
enum HideKind : uint8_t {
  kShown = 0,
  kHiddenWithCallees = 1,  // memtap's own: left out, with every frame it calls
  kHiddenAround = 2,       // plumbing: left out when it directly calls a hidden frame
  kHiddenSelf = 3,         // a wrapper of memtap's: left out, the frames it calls kept
};

struct CodeInfo {
  const char* file;
  const char* function;
  uint32_t file_len;
  uint32_t function_len;
  uint8_t hide;  // a HideKind; read and written with __atomic builtins
};

constexpr uint32_t kCodeSlots = 1u << 16;  // a power of two; at most 3/4 used
constexpr uint32_t kMaxCodes = kCodeSlots / 4 * 3;
constexpr size_t kArenaChunk = 256 << 10;
constexpr size_t kMaxName = 1024;  // longer file names and function names are cut

struct CodeSlot {
  std::atomic<PyObject*> code;  // published (release) after info
  const CodeInfo* info;
};

// Code objects resolved so far keep a reference: their address cannot be reused by
// another code object while the table names it.
CodeSlot* g_code_slots = nullptr;  // kCodeSlots, mapped by init_once
uint32_t g_code_count = 0;
char* g_arena = nullptr;
size_t g_arena_left = 0;
SpinLock g_code_lock;
const CodeInfo kUnknownCode = {"?", "?", 1, 1, kShown};

// Code objects memtap_python_stacks_hide named, under g_code_lock (they keep a reference);
// g_hidden_count lets a capture skip the search when there are none.
constexpr int kMaxHidden = 8;
struct HiddenCode {
  PyObject* code;
  uint8_t kind;
};
HiddenCode g_hidden[kMaxHidden];
std::atomic<int> g_hidden_count{0};

uint8_t hidden_kind(PyObject* code) {
  const int n = g_hidden_count.load(std::memory_order_relaxed);
  for (int i = 0; i < n; ++i)
    if (g_hidden[i].code == code) return g_hidden[i].kind;
  return kShown;
}

uint32_t pointer_slot(const void* p) {
  uint64_t h = reinterpret_cast<uintptr_t>(p) * 0x9e3779b97f4a7c15ull;
  return uint32_t(h >> 40) & (kCodeSlots - 1);
}

void* arena_take(size_t n) {
  n = (n + 7) & ~size_t{7};
  if (n > g_arena_left) {
    g_arena = static_cast<char*>(raw_mmap_anon(kArenaChunk));
    g_arena_left = g_arena ? kArenaChunk : 0;
    if (n > g_arena_left) return nullptr;
  }
  void* p = g_arena;
  g_arena += n;
  g_arena_left -= n;
  return p;
}

// The UTF-8 text of attribute `name` of `code`, copied into the arena ("?" if none).
const char* code_text(PyObject* code, const char* name, uint32_t* len) {
  PyObject* value = g_api.get_attr(code, name);
  const char* copy = nullptr;
  if (value) {
    Py_ssize_t n = 0;
    const char* text = g_api.utf8(value, &n);
    if (text && n >= 0) {
      size_t keep = size_t(n) < kMaxName ? size_t(n) : kMaxName;
      if (char* p = static_cast<char*>(arena_take(keep + 1))) {
        memcpy(p, text, keep);
        p[keep] = '\0';
        copy = p;
        *len = uint32_t(keep);
      }
    }
    g_api.decref(value);
  }
  if (!copy) {
    copy = "?";
    *len = 1;
  }
  return copy;
}

const CodeInfo* find_code(PyObject* code) {
  for (uint32_t i = pointer_slot(code);; i = (i + 1) & (kCodeSlots - 1)) {
    PyObject* c = g_code_slots[i].code.load(std::memory_order_acquire);
    if (c == code) return g_code_slots[i].info;
    if (c == nullptr) return nullptr;
  }
}

// With the GIL (inside the profile function or the thread start).
const CodeInfo* code_info(PyObject* code) {
  if (const CodeInfo* info = find_code(code)) return info;
  BusyScope busy;  // the interpreter allocates here: not the application's doing
  g_code_lock.lock();
  const CodeInfo* info = find_code(code);
  if (!info && g_code_count < kMaxCodes) {
    // Keep any exception being raised (a generator's throw() reports a call) intact.
    PyObject *type = nullptr, *value = nullptr, *tb = nullptr;
    g_api.err_fetch(&type, &value, &tb);
    auto* made = static_cast<CodeInfo*>(arena_take(sizeof(CodeInfo)));
    if (made) {
      made->file = code_text(code, "co_filename", &made->file_len);
      made->function = code_text(code, "co_name", &made->function_len);
      made->hide = hidden_kind(code);
      g_api.err_restore(nullptr, nullptr, nullptr);  // a failed lookup's error, if any
      g_api.incref(code);
      uint32_t i = pointer_slot(code);
      while (g_code_slots[i].code.load(std::memory_order_relaxed) != nullptr)
        i = (i + 1) & (kCodeSlots - 1);
      g_code_slots[i].info = made;
      g_code_slots[i].code.store(code, std::memory_order_release);
      ++g_code_count;
      info = made;
    }
    g_api.err_restore(type, value, tb);
  }
  g_code_lock.unlock();
  return info ? info : &kUnknownCode;
}

const CodeInfo* frame_code_info(PyFrameObject* frame) {
  PyObject* code = g_api.frame_code(frame);
  if (!code) return &kUnknownCode;
  const CodeInfo* info = code_info(code);
  g_api.decref(code);  // the table holds its own reference
  return info;
}

// ---- Per-thread shadow stacks ------------------------------------------------------------

constexpr uint32_t kMaxDepth = 1024;  // frames followed; deeper ones are counted only
constexpr uint32_t kCacheSlots = 1024;
constexpr size_t kTextBytes = 64 << 10;

struct ShadowFrame {
  PyFrameObject* frame;
  const CodeInfo* code;
};

struct CacheSlot {
  uint64_t hash;  // of the (code, line) pairs; 0: empty
  uint32_t id;
};

struct PyThreadStacks {
  uint32_t live_index;  // this thread's flag in g_live
  uint32_t depth;       // frames on the thread's stack that we follow (may pass kMaxDepth)
  CacheSlot cache[kCacheSlots];
  ShadowFrame frames[kMaxDepth];  // [0]: outermost
  int lines[kMaxDepth];           // at a capture: each frame's current line
  char text[kTextBytes];
};

// One flag per profile function installed, set while it is installed: the capsule given to
// PyEval_SetProfile clears it when the interpreter drops the profile function (replaced,
// thread state cleared), possibly on another thread and after this thread has exited, so
// the flags live here, never in memory that is freed. Not reused; past the last one,
// threads get no Python stacks.
constexpr uint32_t kMaxProfiledThreads = 1u << 16;
std::atomic<uint8_t> g_live[kMaxProfiledThreads];
std::atomic<uint32_t> g_next_live{1};  // 0: never live
const char kCapsuleName[] = "memtap.python_stacks";

__thread PyThreadStacks* tl_stacks __attribute__((tls_model("initial-exec"))) = nullptr;
pthread_key_t g_thread_key;
pthread_once_t g_init_once = PTHREAD_ONCE_INIT;
bool g_key_ok = false;  // and g_code_slots mapped

void thread_exited(void* state) {
  tl_stacks = nullptr;
  raw_munmap(state, sizeof(PyThreadStacks));
}

// Once per process (a free-threaded interpreter may start two threads at once).
void init_once() {
  g_code_slots = static_cast<CodeSlot*>(raw_mmap_anon(sizeof(CodeSlot) * kCodeSlots));
  g_key_ok = g_code_slots && pthread_key_create(&g_thread_key, thread_exited) == 0;
}

void on_profile_dropped(PyObject* capsule) {
  void* flag = g_api.capsule_pointer(capsule, kCapsuleName);
  if (flag) static_cast<std::atomic<uint8_t>*>(flag)->store(0, std::memory_order_release);
}

int profile_function(PyObject*, PyFrameObject* frame, int what, PyObject*) {
  PyThreadStacks* s = tl_stacks;
  if (!s) return 0;
  if (what == kPyTraceCall) {
    if (s->depth < kMaxDepth) s->frames[s->depth] = ShadowFrame{frame, frame_code_info(frame)};
    ++s->depth;
  } else if (what == kPyTraceReturn) {
    uint32_t d = s->depth;
    if (d == 0) return 0;  // a frame that began before we followed this thread
    if (d > kMaxDepth || s->frames[d - 1].frame == frame) {
      s->depth = d - 1;
      return 0;
    }
    // Returns we did not see (none expected): unwind to the returning frame if we follow it.
    for (uint32_t i = d - 1; i-- > 0;) {
      if (s->frames[i].frame == frame) {
        s->depth = i;
        return 0;
      }
    }
  }
  return 0;
}

// The thread's current frames, outermost first, minus the `skip` innermost ones (which
// will not report their return to us).
void seed_frames(PyThreadStacks* s, int skip) {
  uint32_t total = 0;
  PyFrameObject* f = g_api.get_frame();
  if (f) g_api.incref(reinterpret_cast<PyObject*>(f));
  // Pass 1: count. Pass 2: store. The frames are alive: they are executing.
  for (PyFrameObject* g = f; g;) {
    ++total;
    PyFrameObject* back = g_api.frame_back(g);
    g_api.decref(reinterpret_cast<PyObject*>(g));
    g = back;
  }
  uint32_t keep = total > uint32_t(skip) ? total - uint32_t(skip) : 0;
  s->depth = keep;
  f = g_api.get_frame();
  if (f) g_api.incref(reinterpret_cast<PyObject*>(f));
  uint32_t pos = total;  // position + 1 of frame g, counted from the outermost
  for (PyFrameObject* g = f; g; --pos) {
    uint32_t index = pos - 1;
    if (index < keep && index < kMaxDepth) s->frames[index] = ShadowFrame{g, frame_code_info(g)};
    PyFrameObject* back = g_api.frame_back(g);
    g_api.decref(reinterpret_cast<PyObject*>(g));
    g = back;
  }
}

// How many of the outermost frames are the program's: those outside the outermost frame
// memtap hides with its callees, less the plumbing that directly called it. (memtap's
// TorchDispatchMode runs every operator, so under --torch-ops each allocation's innermost
// frames were torch/_ops.py's __call__, memtap's __torch_dispatch__ and torch's mode
// helper, and the report's "from" line named torch, not the program's line.)
uint32_t program_frames(const ShadowFrame* frames, uint32_t n) {
  if (g_hidden_count.load(std::memory_order_relaxed) == 0) return n;
  auto kind = [frames](uint32_t i) {
    return __atomic_load_n(&frames[i].code->hide, __ATOMIC_RELAXED);
  };
  for (uint32_t i = 0; i < n; ++i) {
    if (kind(i) != kHiddenWithCallees) continue;
    while (i > 0 && kind(i - 1) == kHiddenAround) --i;
    return i;
  }
  return n;
}

uint64_t mix(uint64_t h, uint64_t v) {
  h ^= v;
  h *= 0x9e3779b97f4a7c15ull;
  return h ^ (h >> 29);
}

char* put_text(char* out, char* end, const char* text, size_t n) {
  if (n > size_t(end - out)) n = size_t(end - out);
  memcpy(out, text, n);
  return out + n;
}

char* put_int(char* out, char* end, int value) {
  char digits[12];
  int n = 0;
  unsigned v = value < 0 ? 0u - unsigned(value) : unsigned(value);
  do {
    digits[n++] = char('0' + v % 10);
    v /= 10;
  } while (v);
  if (value < 0) digits[n++] = '-';
  while (n > 0 && out < end) *out++ = digits[--n];
  return out;
}

}  // namespace

uint32_t python_stack_capture() {
  PyThreadStacks* s = tl_stacks;
  if (!s || s->depth == 0 || s->live_index == 0 ||
      g_live[s->live_index].load(std::memory_order_acquire) == 0) {
    return 0;
  }
  uint32_t n = program_frames(s->frames, s->depth < kMaxDepth ? s->depth : kMaxDepth);
  if (n == 0) return 0;
  // Lines are read once, into the hash and (for a new stack) the text.
  int* lines = s->lines;
  uint64_t h = 0xcbf29ce484222325ull ^ n;
  for (uint32_t i = n; i-- > 0;) {
    lines[i] = g_api.frame_line(s->frames[i].frame);
    h = mix(h, reinterpret_cast<uintptr_t>(s->frames[i].code));
    h = mix(h, uint64_t(uint32_t(lines[i])));
  }
  h |= 1;  // 0 is the empty slot
  CacheSlot& slot = s->cache[h & (kCacheSlots - 1)];
  if (slot.hash == h) return slot.id;

  char* out = s->text;
  char* end = s->text + kTextBytes;
  const bool any_hidden = g_hidden_count.load(std::memory_order_relaxed) != 0;
  for (uint32_t i = n; i-- > 0;) {
    const CodeInfo* c = s->frames[i].code;
    if (any_hidden && __atomic_load_n(&c->hide, __ATOMIC_RELAXED) == kHiddenSelf) continue;
    size_t line_bytes = c->file_len + c->function_len + 16;
    if (size_t(end - out) < line_bytes) break;  // the outermost frames that do not fit
    if (out != s->text) *out++ = '\n';
    out = put_text(out, end, c->file, c->file_len);
    out = put_text(out, end, "(", 1);
    out = put_int(out, end, lines[i]);
    out = put_text(out, end, "): ", 3);
    out = put_text(out, end, c->function, c->function_len);
  }
  if (out == s->text) return 0;  // every frame was one memtap leaves out
  uint32_t id = string_log_intern(s->text, size_t(out - s->text));
  if (id != 0) {
    slot.hash = h;
    slot.id = id;
  }
  return id;
}

}  // namespace memtap

using namespace memtap;

extern "C" __attribute__((visibility("default"))) int memtap_python_stacks_hide(void* code,
                                                                                int kind) {
  if (!g_stack_settings.python || !hooks_record() || !code) return 0;
  if (kind != kHiddenWithCallees && kind != kHiddenAround && kind != kHiddenSelf) return 0;
  BusyScope busy;
  if (!resolve_api()) return 0;
  pthread_once(&g_init_once, init_once);
  if (!g_key_ok) return 0;
  auto* object = static_cast<PyObject*>(code);
  g_code_lock.lock();
  const int n = g_hidden_count.load(std::memory_order_relaxed);
  bool noted = hidden_kind(object) != kShown;
  if (!noted && n < kMaxHidden) {
    g_api.incref(object);
    g_hidden[n] = {object, uint8_t(kind)};
    g_hidden_count.store(n + 1, std::memory_order_release);
    noted = true;
  }
  g_code_lock.unlock();
  if (!noted) return 0;
  // Its frames may have run already: their CodeInfo is marked now.
  const CodeInfo* info = code_info(object);
  if (info == &kUnknownCode) return 0;
  __atomic_store_n(&const_cast<CodeInfo*>(info)->hide, uint8_t(kind), __ATOMIC_RELAXED);
  return 1;
}

extern "C" __attribute__((visibility("default"))) int memtap_python_stacks_thread_start(
    int skip_frames) {
  if (!g_stack_settings.python || !hooks_record()) return 0;
  BusyScope busy;
  if (!resolve_api()) return 0;
  pthread_once(&g_init_once, init_once);
  if (!g_key_ok) return 0;
  PyThreadStacks* s = tl_stacks;
  if (!s) {
    s = static_cast<PyThreadStacks*>(raw_mmap_anon(sizeof(PyThreadStacks)));
    if (!s) return 0;
    pthread_setspecific(g_thread_key, s);
    tl_stacks = s;
  }
  uint32_t index = g_next_live.fetch_add(1, std::memory_order_relaxed);
  if (index >= kMaxProfiledThreads) {
    s->live_index = 0;
    return 0;
  }
  PyObject* capsule = g_api.capsule_new(&g_live[index], kCapsuleName, on_profile_dropped);
  if (!capsule) return 0;
  seed_frames(s, skip_frames < 0 ? 0 : skip_frames);
  s->live_index = index;
  g_live[index].store(1, std::memory_order_release);
  // Replaces (and so drops) any profile function the thread had, ours included.
  g_api.set_profile(profile_function, capsule);
  g_api.decref(capsule);  // the thread state holds it now
  return 1;
}
