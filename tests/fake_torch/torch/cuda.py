"""torch.cuda of the stand-in torch (tests/fake_torch/): lazy initialisation with queued
calls, streams, the caching allocator's raw interface, its statistics and snapshot, as in
PyTorch, plus record_stream() on a raw pointer (PyTorch has it on tensors).
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


class Stream:
    def __init__(self, device=None):
        init()
        self.device = current_device() if device is None else int(device)
        self.cuda_stream = _lib.standin_stream_create(self.device)


def _stream_handle(stream):
    if stream is None:
        return 0
    return stream.cuda_stream if isinstance(stream, Stream) else int(stream)


def caching_allocator_alloc(size, device=None, stream=None):
    init()
    device = current_device() if device is None else int(device)
    ptr = _lib.standin_malloc(device, int(size), _stream_handle(stream))
    if ptr == 0:
        raise OutOfMemoryError("CUDA out of memory. Tried to allocate %d bytes" % size)
    return ptr


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
    device = current_device() if device is None else int(device)
    v = (ctypes.c_uint64 * 6)()
    _lib.standin_stats(device, v)
    return {
        "requested_bytes.all.current": v[0], "requested_bytes.all.peak": v[1],
        "allocated_bytes.all.current": v[2], "allocated_bytes.all.peak": v[3],
        "reserved_bytes.all.current": v[4], "reserved_bytes.all.peak": v[5],
    }


def memory_snapshot():
    size = _lib.standin_snapshot(None, 0)
    buf = ctypes.create_string_buffer(size + 1)
    _lib.standin_snapshot(buf, size + 1)
    return json.loads(buf.value.decode())
