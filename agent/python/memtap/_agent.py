"""The agent's C ABI (agent/memtap.h), resolved from the running process.

`memtap run` preloads libmemtap_agent.so, so its memtap_* symbols are in the process's
global scope and ctypes.CDLL(None) finds them. Without the agent (plain python, or an
agent without the context calls) `lib` is None and every call in this package is a no-op.
"""
import ctypes
import os

_int = ctypes.c_int
_u32 = ctypes.c_uint32
_u64 = ctypes.c_uint64

# name -> (restype, argtypes)
_SIGNATURES = {
    "memtap_agent_version": (ctypes.c_char_p, []),
    "memtap_agent_active": (ctypes.c_int, []),
    "memtap_intern": (_u32, [ctypes.c_char_p, ctypes.c_size_t]),
    "memtap_step": (None, []),
    "memtap_mark": (None, [_u32]),
    "memtap_range_start": (None, [_u32]),
    "memtap_range_end": (None, [_u32]),
    "memtap_owner_push": (None, [_u32]),
    "memtap_owner_pop": (None, []),
    "memtap_op_start": (None, [_u32]),
    "memtap_op_end": (None, [_u32]),
    "memtap_trace_slice": (None, [_u32, _u64, _u64]),
    # The framework pool (layer PTA): device, then addr/size/stream, allocated/reserved or
    # their peaks.
    "memtap_pool_alloc": (None, [_int, _u64, _u64, _u64]),
    "memtap_pool_free_requested": (None, [_int, _u64, _u64]),
    "memtap_pool_free_completed": (None, [_int, _u64, _u64]),
    "memtap_pool_state": (None, [_int, _u64, _u64]),
    "memtap_pool_peaks": (None, [_int, _u64, _u64]),
}


def _load():
    if os.environ.get("MEMTAP_DISABLE") == "1":
        return None
    try:
        process = ctypes.CDLL(None)
        for name, (restype, argtypes) in _SIGNATURES.items():
            fn = getattr(process, name)
            fn.restype = restype
            fn.argtypes = argtypes
    except (OSError, AttributeError):
        return None  # no agent, or one that predates the context calls
    return process


lib = _load()

# text -> id. Ids are the agent's, stable for the life of the process and kept by fork
# children (their agent sends every text again), so the cache stays valid after fork.
_ids = {}


def intern(text):
    """The agent's id for `text` (0 without the agent)."""
    i = _ids.get(text)
    if i is None:
        if lib is None:
            return 0
        data = str(text).encode("utf-8", "replace")
        i = lib.memtap_intern(data, len(data))
        _ids[text] = i
    return i

