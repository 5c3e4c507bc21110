"""PyTorch's CUDA caching allocator as memtap's framework pool (layer PTA).

memtap.torch.watch_pool() arranges for this to run when CUDA initialises. Two ways, best
first (the README's "GPU memory" says which PyTorch gets which):

  tracker   PyTorch >= 2.1 with a C++ compiler and the CUDA headers torch was built with:
            _torch_pool_tracker.cpp is compiled once per torch version against torch's own
            headers (cached in ~/.cache/memtap, or $MEMTAP_CACHE_DIR; a failed compile is
            remembered there too, beside the compiler's output) and attached as the
            allocator's trace tracker: every block, with its owner, operator and stacks,
            and the pool's reserved bytes after every segment change.
  samples   otherwise: memtap.step() records torch.cuda.memory_stats() per device (pool
            state: allocated and reserved bytes, and their peaks), so the curves follow the
            pool step by step; blocks are then only the driver's (HAL).

Nothing here may break the program: every failure is one line on stderr and a fallback.
"""
import os
import sys

from memtap import _agent

# `import memtap` imports this module; what only compiling or attaching needs is imported
# there, so a program without CUDA pays nothing for it.

_SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "_torch_pool_tracker.cpp")
_COMPILE_TIMEOUT_S = 300

mode = None  # None until watch(); then "pending", "tracker", "samples" or "off"
reason = None  # why not "tracker", for the one line on stderr
_sampled = {}  # device -> whether its last sample held memory (sample())


def _say(text):
    sys.stderr.write("memtap: %s\n" % text)


def _cache_dir():
    base = os.environ.get("MEMTAP_CACHE_DIR")
    if not base:
        base = os.path.join(
            os.environ.get("XDG_CACHE_HOME") or os.path.expanduser("~/.cache"), "memtap")
    return base


def _cuda_include_dirs(torch):
    """Where the CUDA headers are, in the order to search them: the toolkit the environment
    names (CUDA_HOME, CUDA_PATH); the include directories of the nvidia-* wheels torch was
    installed with (its own CUDA version; cuda_runtime_api.h is in one, other headers in
    others); /usr/local/cuda; last, memtap's own crt/host_defines.h, which the runtime wheel
    lacks (it comes with the CUDA compiler). Empty when none has cuda_runtime_api.h."""
    import glob

    def has_runtime(d):
        return os.path.isfile(os.path.join(d, "cuda_runtime_api.h"))

    found = []
    for root in (os.environ.get("CUDA_HOME"), os.environ.get("CUDA_PATH")):
        if root and has_runtime(os.path.join(root, "include")):
            found.append(os.path.join(root, "include"))
    wheels = []
    for entry in sys.path:
        wheels += sorted(d for d in glob.glob(os.path.join(entry or ".", "nvidia", "*", "include"))
                         if os.path.isdir(d))
    if any(has_runtime(d) for d in wheels):
        found += wheels
    if has_runtime("/usr/local/cuda/include"):
        found.append("/usr/local/cuda/include")
    if not found:
        return []
    found.append(os.path.join(os.path.dirname(os.path.abspath(__file__)), "_cuda_shim"))
    seen = []
    for d in found:
        d = os.path.abspath(d)
        if d not in seen:
            seen.append(d)
    return seen


def _compiler(sysconfig):
    """$CXX, else the first C++ compiler on PATH, else the one Python was built with (a conda
    Python names its own, which may not be installed)."""
    import shutil

    names = [os.environ.get("CXX"), "c++", "g++", "clang++", sysconfig.get_config_var("CXX")]
    for name in names:
        if name and shutil.which(name.split()[0]):
            return shutil.which(name.split()[0])
    return None


def _cxx_standard(include):
    """The C++ standard torch's headers need: the newest their own check asks for (torch/all.h:
    "#if __cplusplus < 202002L / #error C++20 or later ... is required", as recent releases
    have), else C++17, which every torch with trace trackers accepts."""
    import re

    names = {201703: "c++17", 202002: "c++20", 202302: "c++23"}
    needed = 201703
    try:
        with open(os.path.join(include, "torch", "csrc", "api", "include", "torch", "all.h"),
                  "rb") as f:
            for number in re.findall(rb"__cplusplus\s*<\s*(\d+)L?", f.read()):
                if int(number) in names:
                    needed = max(needed, int(number))
    except OSError:
        pass
    return names[needed]


def _compile(torch):
    """The tracker library's path, compiled if not cached; raises RuntimeError with why."""
    import fcntl
    import hashlib
    import subprocess
    import sysconfig
    import tempfile

    torch_dir = os.path.dirname(os.path.abspath(torch.__file__))
    include = os.path.join(torch_dir, "include")
    header = os.path.join(include, "c10", "cuda", "CUDACachingAllocator.h")
    if not os.path.isfile(header):
        raise RuntimeError("this torch has no C++ headers (c10/cuda/CUDACachingAllocator.h)")
    with open(header, "rb") as f:
        if b"attachAllocatorTraceTracker(" not in f.read():
            raise RuntimeError("this torch's caching allocator has no trace trackers "
                               "(PyTorch 2.1 and later have them)")
    cuda_includes = _cuda_include_dirs(torch)
    if not cuda_includes:
        raise RuntimeError("no CUDA headers found (cuda_runtime_api.h; set CUDA_HOME)")
    compiler = _compiler(sysconfig)
    if compiler is None:
        raise RuntimeError("no C++ compiler found (c++, g++, clang++; or set CXX)")
    abi = int(getattr(torch._C, "_GLIBCXX_USE_CXX11_ABI", True))
    with open(_SOURCE, "rb") as f:
        source = f.read()
    standard = _cxx_standard(include)
    key = hashlib.sha256(source + repr((torch.__version__, torch_dir, cuda_includes, abi,
                                        compiler, standard)).encode()).hexdigest()[:16]
    cache = _cache_dir()
    target = os.path.join(cache, "torch_pool_tracker-%s-%s.so" % (torch.__version__.replace(
        "+", "_"), key))
    log = target + ".log"
    failed = target + ".failed"

    def failed_before():
        # A compiler that failed once fails again for the same source, torch and compiler:
        # say so at once rather than pay for it at every start.
        return RuntimeError("compiling it failed before; the compiler's output is in %s "
                            "(remove %s to try again)" % (log, failed))

    if os.path.isfile(target):
        return target
    if os.path.isfile(failed):
        raise failed_before()
    os.makedirs(cache, mode=0o700, exist_ok=True)
    # Every rank of a job starts at once: one compiles, the others wait for its file.
    with open(target + ".lock", "w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        if os.path.isfile(target):
            return target
        if os.path.isfile(failed):
            raise failed_before()
        _say("compiling the PyTorch pool tracker for torch %s (once; cached in %s)"
             % (torch.__version__, cache))
        fd, partial = tempfile.mkstemp(prefix=os.path.basename(target), suffix=".part",
                                       dir=cache)
        os.close(fd)
        command = [compiler, "-O2", "-std=" + standard, "-shared", "-fPIC", "-w",
                   "-D_GLIBCXX_USE_CXX11_ABI=%d" % abi, "-I", include,
                   "-I", os.path.join(include, "torch", "csrc", "api", "include")]
        for d in cuda_includes:
            command += ["-I", d]
        lib = os.path.join(torch_dir, "lib")
        command += [_SOURCE, "-o", partial, "-L", lib, "-lc10_cuda", "-lc10",
                    "-Wl,-rpath," + lib]
        try:
            with open(log, "wb") as out:
                out.write((" ".join(command) + "\n").encode())
                out.flush()
                done = subprocess.run(command, stdout=out, stderr=subprocess.STDOUT,
                                      timeout=_COMPILE_TIMEOUT_S, env=_untraced_env())
        except (OSError, subprocess.TimeoutExpired) as err:
            os.unlink(partial)
            raise RuntimeError("could not run %s: %s" % (compiler, err))
        if done.returncode != 0:
            os.unlink(partial)
            open(failed, "w").close()
            raise RuntimeError("%s failed (exit %d); its output is in %s"
                               % (compiler, done.returncode, log))
        os.replace(partial, target)
    return target


def _untraced_env():
    # The compiler is not the program: no agent in it, no events from it.
    env = dict(os.environ)
    env.pop("LD_PRELOAD", None)
    env["MEMTAP_DISABLE"] = "1"
    return env


def _seed(torch, tracker):
    """Reports what the pool held before the tracker was attached (usually nothing: it is
    attached when CUDA initialises, before the first allocation)."""
    lib = _agent.lib
    for segment in torch.cuda.memory_snapshot():
        device = int(segment.get("device", 0))
        addr = int(segment["address"])
        stream = int(segment.get("stream", 0))
        for block in segment.get("blocks", []):
            state = block.get("state", "")
            addr = int(block.get("address", addr))
            size = int(block.get("requested_size") or block["size"])
            if state in ("active_allocated", "active_pending_free"):
                lib.memtap_pool_alloc(device, addr, size, stream)
                if state == "active_pending_free":
                    lib.memtap_pool_free_requested(device, addr, stream)
            addr += int(block["size"])
    for device in range(torch.cuda.device_count()):
        stats = torch.cuda.memory_stats(device)
        allocated = int(stats.get("requested_bytes.all.current",
                                  stats.get("allocated_bytes.all.current", 0)))
        reserved = int(stats.get("reserved_bytes.all.current", 0))
        tracker.memtap_torch_pool_seed(device, allocated, reserved)
        if reserved:  # a rank of an 8-GPU node uses one: the others stay out of its recording
            lib.memtap_pool_state(device, allocated, reserved)


def _attach():
    """Runs when CUDA has initialised (torch.cuda._lazy_call)."""
    global mode, reason
    import ctypes

    import torch

    try:
        path = _compile(torch)
        tracker = ctypes.CDLL(path)
        tracker.memtap_torch_pool_attach.restype = ctypes.c_char_p
        tracker.memtap_torch_pool_seed.argtypes = [ctypes.c_int, ctypes.c_int64,
                                                   ctypes.c_int64]
        why = tracker.memtap_torch_pool_attach()
        if why is not None:
            raise RuntimeError(why.decode("utf-8", "replace"))
        _seed(torch, tracker)
        mode = "tracker"
    except Exception as err:  # noqa: BLE001 - never break the traced program
        mode, reason = "samples", str(err)
        _say("PyTorch's pool blocks are not recorded (%s); the pool is sampled at each "
             "memtap.step() instead" % reason)


def watch():
    """Records PyTorch's CUDA pool from the moment CUDA initialises (now, if it has)."""
    global mode, reason
    if mode is not None:
        return mode
    import torch

    if getattr(torch.version, "cuda", None) is None:
        mode, reason = "off", "this torch has no CUDA"
        return mode
    if _agent.lib is None or not hasattr(_agent.lib, "memtap_pool_alloc"):
        mode, reason = "off", "no memtap agent with the pool functions is loaded"
        return mode
    mode = "pending"
    lazy_call = getattr(torch.cuda, "_lazy_call", None)
    if lazy_call is None or torch.cuda.is_initialized():
        _attach()
    else:
        lazy_call(_attach)
    return mode


def sample():
    """memtap.step(): each device's pool state from torch.cuda.memory_stats(), when the
    tracker is not attached (a tracker reports every change itself)."""
    if mode != "samples":
        return
    torch = sys.modules.get("torch")
    if torch is None or not torch.cuda.is_initialized():
        return
    lib = _agent.lib
    for device in range(torch.cuda.device_count()):
        stats = torch.cuda.memory_stats(device)
        reserved = int(stats.get("reserved_bytes.all.current", 0))
        if reserved or _sampled.get(device):  # devices this process uses (and their last 0)
            _sampled[device] = reserved != 0
            # The pool's own peaks catch what it held inside the step, between two samples;
            # they go right before the state they belong to.
            peaks = (stats.get("allocated_bytes.all.peak"), stats.get("reserved_bytes.all.peak"))
            if None not in peaks:
                lib.memtap_pool_peaks(device, int(peaks[0]), int(peaks[1]))
            lib.memtap_pool_state(device, int(stats.get("allocated_bytes.all.current", 0)),
                                  reserved)
