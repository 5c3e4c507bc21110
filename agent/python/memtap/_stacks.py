"""Python call stacks on large allocations: switching them on from Python.

The agent follows a thread's frames with a C profile function that it installs itself
(agent/python_stacks.h); it must be installed by the thread, with the GIL held, hence
ctypes.PyDLL (which keeps the GIL across the call). `enable()` does it for the calling
thread and, through threading.setprofile, for every thread started afterwards: such a
thread's first Python call runs `_start_in_new_thread`, which replaces that Python-level
hook by the agent's C profile function.

memtap run's sitecustomize calls enable() when MEMTAP_STACKS contains "python". Without
the agent, or with Python stacks off in the agent, it does nothing.

A profiler installed later on a thread (sys.setprofile, cProfile, memtap.tracer) replaces
the agent's: that thread has no Python stacks until enable() runs on it again.
"""
import ctypes
import os
import threading

_start = None  # the agent's memtap_python_stacks_thread_start, once enable() found it


def _resolve():
    global _start
    if _start is None:
        if os.environ.get("MEMTAP_DISABLE") == "1":
            return None
        try:
            fn = ctypes.PyDLL(None).memtap_python_stacks_thread_start
        except (OSError, AttributeError):
            return None  # no agent in this process
        fn.argtypes = [ctypes.c_int]
        fn.restype = ctypes.c_int
        _start = fn
    return _start


def _start_in_new_thread(frame, event, arg):
    # Called as this new thread's profile function, from its first event on: the frame
    # running this function never reports its return, so the agent leaves it out (1).
    _start(1)


def enable():
    """Python stacks for this thread and every thread started from now on.

    Returns True when the agent follows this thread's frames."""
    start = _resolve()
    if start is None or not start(0):
        return False
    threading.setprofile(_start_in_new_thread)
    return True


def hide(code, kind):
    """Leaves frames of `code` out of the recorded Python stacks (agent/memtap.h,
    memtap_python_stacks_hide): kind 1 with every frame they call, kind 2 only where they
    directly call a frame of kind 1, kind 3 alone. Returns True when the agent noted it."""
    if os.environ.get("MEMTAP_DISABLE") == "1":
        return False
    try:
        fn = ctypes.PyDLL(None).memtap_python_stacks_hide
    except (OSError, AttributeError):
        return False  # no agent, or one without it
    fn.argtypes = [ctypes.py_object, ctypes.c_int]
    fn.restype = ctypes.c_int
    return bool(fn(code, kind))
