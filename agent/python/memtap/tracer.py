"""memtap.tracer: Python function call/return slices, as msMemScope's tracer records them.

    memtap.tracer.start()
    train_one_epoch()
    memtap.tracer.stop()

Between start() and stop() every Python function call becomes a slice (FuncInfo
"file(line): function", start and end in time.monotonic_ns()) in the recording's
python_trace_{pid} table, on the thread that ran it. Uses sys.setprofile and
threading.setprofile, so it replaces any other profiler for that time and slows
Python-heavy code noticeably; C functions are not traced. A thread has one profile hook:
while traced, its allocations carry no Python stack (--stacks python); stop() gives the
hook back to the agent's stacks. A no-op without the agent.
"""
import sys
import threading
import time

from memtap import _agent

__all__ = ["start", "stop", "running"]

_now = time.monotonic_ns
_running = False
_stop_ns = 0
_func_ids = {}  # code object -> interned "file(line): function"
_local = threading.local()


def _func_id(code):
    i = _func_ids.get(code)
    if i is None:
        i = _agent.intern("%s(%d): %s" % (code.co_filename, code.co_firstlineno, code.co_name))
        _func_ids[code] = i
    return i


def _profile(frame, event, arg):
    # Called by the interpreter for every event of a profiled thread; kept short.
    if event == "call":
        try:
            stack = _local.stack
        except AttributeError:
            stack = _local.stack = []
        stack.append((frame.f_code, _now()))
    elif event == "return":
        stack = getattr(_local, "stack", None)
        if stack:  # empty: the frame was already running at start()
            code, start_ns = stack.pop()
            _agent.lib.memtap_trace_slice(_func_id(code), start_ns, _now())
    if not _running:
        _finish_thread(_stop_ns)


def _finish_thread(end_ns):
    # Closes this thread's open slices at `end_ns` and stops profiling it.
    sys.setprofile(None)
    stack = getattr(_local, "stack", None)
    while stack:
        code, start_ns = stack.pop()
        if code is not _stop_code:
            _agent.lib.memtap_trace_slice(_func_id(code), start_ns, max(start_ns, end_ns))
    stacks = sys.modules.get("memtap._stacks")
    if stacks is not None:  # Python stacks were on: their profile hook comes back
        stacks.enable()


def running():
    """True between start() and stop()."""
    return _running


def start():
    """Starts tracing this thread and every thread started afterwards."""
    global _running
    if _running or _agent.lib is None:
        return
    _running = True
    threading.setprofile(_profile)
    sys.setprofile(_profile)


def stop():
    """Stops tracing and sends the slices still open (they end now).

    Other threads already traced stop at their next call or return.
    """
    global _running, _stop_ns
    if not _running:
        return
    sys.setprofile(None)
    _stop_ns = _now()
    _running = False
    threading.setprofile(None)
    _finish_thread(_stop_ns)


_stop_code = stop.__code__  # the tracer's own frame is not a slice
