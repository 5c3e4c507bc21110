"""torch.cuda of the stand-in torch (tests/fake_torch/): lazy initialisation with queued
calls, streams and the current stream, the caching allocator's raw interface, its statistics
and snapshot, mem_get_info, as in PyTorch, plus record_stream() on a raw pointer (PyTorch has
it on tensors).
"""
import ctypes
import json

import torch

_lib = torch._lib
_lib.standin_malloc.restype = ctypes.c_uint64
_lib.standin_malloc.argtypes = [ctypes.c_int, ctypes.c_uint64, ctypes.c_uint64]
_lib.standin_free.argtypes = [ctypes.c_uint64]
_lib.standin_record_stream.argtypes = [ctypes.c_uint64, ctypes.c_uint64]
_lib.standin_stream_create.restype = ctypes.c_uint64
_lib.standin_stats.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_uint64)]
_lib.standin_snapshot.restype = ctypes.c_size_t
_lib.standin_snapshot.argtypes = [ctypes.c_char_p, ctypes.c_size_t]
_lib.standin_launch.argtypes = [ctypes.c_char_p, ctypes.c_uint64, ctypes.c_uint64]
_lib.standin_mem_get_info.argtypes = [ctypes.c_int, ctypes.POINTER(ctypes.c_uint64),
                                      ctypes.POINTER(ctypes.c_uint64)]

_initialized = False
_queued_calls = []


class OutOfMemoryError(RuntimeError):
    pass


def is_available():
    return True


def is_initialized():
    return _initialized


def _lazy_call(callable):
    if _initialized:
        callable()
    else:
        _queued_calls.append(callable)


def init():
    """CUDA initialises (PyTorch's _lazy_init): then the queued calls run."""
    global _initialized
    if _initialized:
        return
    _lib.standin_cuda_init()
    _initialized = True
    for call in _queued_calls:
        call()
    del _queued_calls[:]


def device_count():
    return _lib.standin_cuda_init()


def current_device():
    return _lib.standin_current_device()


def set_device(device):
    init()
    if _lib.standin_set_device(int(device)) != 0:
        raise RuntimeError("invalid device %r" % (device,))


def _device_index(device):
    """A device argument as PyTorch takes it (None, an index, "cuda:1", a torch.device)."""
    if device is None:
        return current_device()
    if isinstance(device, int):
        return device
    device = torch.device(device)
    return current_device() if device.index is None else device.index


class Stream:
    def __init__(self, device=None):
        init()
        self.device = _device_index(device)
        self.cuda_stream = _lib.standin_stream_create(self.device)

    @classmethod
    def _default(cls, device):
        s = cls.__new__(cls)
        s.device, s.cuda_stream = device, 0
        return s


_current_streams = {}  # device index -> the Stream set by `with stream(...)`


def default_stream(device=None):
    return Stream._default(_device_index(device))


def current_stream(device=None):
    index = _device_index(device)
    return _current_streams.get(index) or Stream._default(index)


class stream:
    """`with torch.cuda.stream(s):` makes s its device's current stream."""

    def __init__(self, s):
        self.stream = s

    def __enter__(self):
        if self.stream is not None:
            self.previous = _current_streams.get(self.stream.device)
            _current_streams[self.stream.device] = self.stream
        return self.stream

    def __exit__(self, *exc):
        if self.stream is not None:
            if self.previous is None:
                _current_streams.pop(self.stream.device, None)
            else:
                _current_streams[self.stream.device] = self.previous


def _sleep(cycles):
    """A kernel that keeps the current stream busy (it only launches here)."""
    torch._tensor._launch("spin", None)


def mem_get_info(device=None):
    init()
    free, total = ctypes.c_uint64(), ctypes.c_uint64()
    if _lib.standin_mem_get_info(_device_index(device), free, total) != 0:
        raise RuntimeError("CUDA error: invalid device ordinal")
    return free.value, total.value


def _stream_handle(stream):
    if stream is None:
        return 0
    return stream.cuda_stream if isinstance(stream, Stream) else int(stream)


def caching_allocator_alloc(size, device=None, stream=None):
    init()
    device = _device_index(device)
    ptr = _lib.standin_malloc(device, int(size), _stream_handle(stream))
    if ptr == 0:
        raise OutOfMemoryError("CUDA out of memory. Tried to allocate %d bytes" % size)
    return ptr


def _alloc(size, device):
    """A tensor's block: on the device's current stream, as PyTorch allocates it."""
    return caching_allocator_alloc(size, device, current_stream(device))


def caching_allocator_delete(mem_ptr):
    if _lib.standin_free(int(mem_ptr)) != 0:
        raise RuntimeError("invalid device pointer: %#x" % mem_ptr)


def record_stream(mem_ptr, stream):
    if _lib.standin_record_stream(int(mem_ptr), _stream_handle(stream)) != 0:
        raise RuntimeError("invalid device pointer: %#x" % mem_ptr)


def synchronize(device=None):
    _lib.standin_synchronize()


def empty_cache():
    if _initialized:
        _lib.standin_empty_cache()


def memory_stats(device=None):
    device = _device_index(device)
    v = (ctypes.c_uint64 * 6)()
    _lib.standin_stats(device, v)
    return {
        "requested_bytes.all.current": v[0], "requested_bytes.all.peak": v[1],
        "allocated_bytes.all.current": v[2], "allocated_bytes.all.peak": v[3],
        "reserved_bytes.all.current": v[4], "reserved_bytes.all.peak": v[5],
    }


def memory_allocated(device=None):
    return memory_stats(device)["allocated_bytes.all.current"]


def max_memory_allocated(device=None):
    return memory_stats(device)["allocated_bytes.all.peak"]


def memory_reserved(device=None):
    return memory_stats(device)["reserved_bytes.all.current"]


def max_memory_reserved(device=None):
    return memory_stats(device)["reserved_bytes.all.peak"]


def memory_snapshot():
    size = _lib.standin_snapshot(None, 0)
    buf = ctypes.create_string_buffer(size + 1)
    _lib.standin_snapshot(buf, size + 1)
    return json.loads(buf.value.decode())
