"""memtap: the training run's context for memtap's memory recording.

Inside `memtap run` (or with libmemtap_agent.so preloaded) these calls attach steps,
owners, marks, ranges, tracer slices and operators to the recorded allocations. Without
the agent every call is a silent no-op, so scripts may call them unconditionally. Pure
Python over the agent's C ABI (agent/memtap.h); torch is imported only by memtap.torch.

    import memtap
    for batch in loader:
        with memtap.owner("activations"):    # nested owners join with '@'
            loss = model(batch)
        memtap.mark("backward")
        loss.backward(); opt.step()
        memtap.step()
"""
import contextlib as _contextlib

from memtap import _agent
from memtap import _torch_pool

__all__ = ["active", "agent_version", "step", "mark", "owner", "range", "range_start",
           "range_end", "tracer", "torch"]
__version__ = "0.1.0"

_lib = _agent.lib
_intern = _agent.intern


def active():
    """True while the agent is loaded and recording."""
    return _lib is not None and bool(_lib.memtap_agent_active())


def agent_version():
    """The loaded agent's version, or None without the agent."""
    return _lib.memtap_agent_version().decode() if _lib is not None else None


def step():
    """A training step begins (a SYSTEM STEP row; steps are numbered per process).

    Where PyTorch's CUDA pool is watched without its tracker, also samples the pool."""
    if _lib is not None:
        _lib.memtap_step()
        if _torch_pool.mode == "samples":
            _torch_pool.sample()


def mark(text):
    """An instant marker (an MSTX Mark row named `text`)."""
    if _lib is not None:
        _lib.memtap_mark(_intern(text))


def range_start(name):
    """Opens the range `name` (MSTX Range_start); ranges may overlap."""
    if _lib is not None:
        _lib.memtap_range_start(_intern(name))


def range_end(name):
    """Closes the latest open range `name` (MSTX Range_end)."""
    if _lib is not None:
        _lib.memtap_range_end(_intern(name))


class owner(_contextlib.ContextDecorator):
    """`with memtap.owner("name"):` labels this thread's allocations inside (Attr owner).

    Nested owners join outermost first with '@' ("model@activations"). Also a decorator.
    """

    def __init__(self, name):
        self._id = _intern(name)

    def __enter__(self):
        if _lib is not None:
            _lib.memtap_owner_push(self._id)
        return self

    def __exit__(self, *exc):
        if _lib is not None:
            _lib.memtap_owner_pop()
        return False


class range(_contextlib.ContextDecorator):  # noqa: A001 - the API's name, memtap.range
    """`with memtap.range("name"):` brackets the block with MSTX Range_start/Range_end."""

    def __init__(self, name):
        self._id = _intern(name)

    def __enter__(self):
        if _lib is not None:
            _lib.memtap_range_start(self._id)
        return self

    def __exit__(self, *exc):
        if _lib is not None:
            _lib.memtap_range_end(self._id)
        return False


from memtap import tracer  # noqa: E402  (pure Python)
from memtap import torch  # noqa: E402  (imports torch only when its functions run)
