"""memtap.torch: PyTorch operators as OP_LAUNCH events (needs torch >= 1.13), and
PyTorch's CUDA caching allocator as the PTA layer.

    with memtap.torch.watch_ops():     # only inside the block
        loss = model(x)
    memtap.torch.watch_ops().enable()  # from now on, on this thread (memtap run --torch-ops)

Each aten operator that runs becomes an ATEN_START/ATEN_END pair named after it
("aten::mm"), and the memory it allocates is named after it. This is a
torch.utils._python_dispatch.TorchDispatchMode: it costs some microseconds per operator,
and it applies to the thread that entered it (and the autograd work that thread runs).
torch is imported when watch_ops() is first called, not with memtap.

    memtap.torch.watch_pool()          # memtap run does this when torch is imported

records the CUDA caching allocator's blocks (PTA MALLOC/FREE) from the moment CUDA
initialises, with the pool's reserved bytes (see memtap/_torch_pool.py for how, and what
happens on a PyTorch where that cannot be done).
"""
from memtap import _agent

__all__ = ["watch_ops", "enable", "disable", "watch_pool"]

_mode_class = None
_global = None  # the mode enable() pushed, while it is pushed


def _make_mode_class():
    from torch.utils._python_dispatch import TorchDispatchMode

    lib = _agent.lib
    intern = _agent.intern
    names = {}  # OpOverload -> interned "aten::mm"

    class WatchOps(TorchDispatchMode):
        """Emits op_start/op_end around every aten operator."""

        def __torch_dispatch__(self, func, types, args=(), kwargs=None):
            name = names.get(func)
            if name is None:
                try:
                    text = func._schema.name
                except AttributeError:
                    text = str(func)
                name = names[func] = intern(text)
            if lib is None:
                return func(*args, **(kwargs or {}))
            lib.memtap_op_start(name)
            try:
                return func(*args, **(kwargs or {}))
            finally:
                lib.memtap_op_end(name)

        def enable(self):
            """Pushes this mode for the rest of the program (on this thread)."""
            self.__enter__()
            return self

        def disable(self):
            """Pops this mode if it is the innermost one."""
            from torch.utils._python_dispatch import _get_current_dispatch_mode_stack

            stack = _get_current_dispatch_mode_stack()
            if stack and stack[-1] is self:
                self.__exit__(None, None, None)

    _hide_dispatch_frames(WatchOps)
    return WatchOps


def _hide_dispatch_frames(mode_class):
    # The operator runs under the mode: its frames (and torch/_ops.py's __call__ inside
    # them) are memtap's doing, and would be every stack's innermost lines. Torch 1.13 calls
    # a mode through a helper mode of its own; later versions call it from C++.
    from memtap import _stacks

    _stacks.hide(mode_class.__torch_dispatch__.__code__, 1)
    try:
        from torch.utils._python_dispatch import _TorchDispatchStackMode

        _stacks.hide(_TorchDispatchStackMode.__torch_dispatch__.__code__, 2)
    except (ImportError, AttributeError):
        pass


def watch_ops():
    """A dispatch mode that records every aten operator: `with` it, or .enable() it."""
    global _mode_class
    if _mode_class is None:
        _mode_class = _make_mode_class()
    return _mode_class()


def enable():
    """Records every aten operator from now on, on this thread; once."""
    global _global
    if _global is None:
        _global = watch_ops().enable()
    return _global


def disable():
    """Undoes enable()."""
    global _global
    if _global is not None:
        _global.disable()
        _global = None


def watch_pool():
    """Records PyTorch's CUDA caching allocator (layer PTA) from when CUDA initialises.

    Returns how: "tracker" (every block), "samples" (the pool's figures at each
    memtap.step()), "pending" (CUDA not initialised yet), or "off" (no CUDA in this torch,
    or no agent).
    """
    from memtap import _torch_pool

    return _torch_pool.watch()
