"""memtap's sitecustomize: `memtap run` puts this directory first on PYTHONPATH.

It makes `import memtap` work in the traced program, and turns on what the command line
asked for, through the environment memtap run sets:
  MEMTAP_STACKS containing "python": Python call stacks on large allocations
      (memtap._stacks.enable());
  MEMTAP_TORCH_OPS=1: memtap.torch.enable() as soon as the program has imported torch;
  MEMTAP_TORCH_POOL not 0: memtap.torch.watch_pool() then too (PyTorch's CUDA caching
      allocator as the PTA layer; nothing happens in a torch without CUDA).
Then it runs the sitecustomize it shadows (Debian's /usr/lib/python3.X/sitecustomize.py,
or one later on the path), as Python would have without us. Nothing here may break the
program: a failure is one line on stderr.
"""
import os
import sys


def _warn(what, err):
    sys.stderr.write("memtap: %s: %s: %s\n" % (what, type(err).__name__, err))


def _enable_stacks():
    try:
        from memtap import _stacks
    except ImportError:
        return  # an agent without Python stacks
    try:
        _stacks.enable()
    except Exception as err:  # noqa: BLE001 - never break the traced program
        _warn("Python stacks are off", err)


def _torch_ops():
    try:
        import memtap.torch

        memtap.torch.enable()
    except Exception as err:  # noqa: BLE001
        _warn("--torch-ops is off", err)


def _torch_pool():
    try:
        import memtap.torch

        memtap.torch.watch_pool()
    except Exception as err:  # noqa: BLE001
        _warn("PyTorch's pool is not recorded", err)


class _OnTorchImport:
    """A meta path finder that runs `then` (each a function) once `torch` is imported."""

    def __init__(self, then):
        self._then = then

    def find_spec(self, fullname, path=None, target=None):
        if fullname != "torch":
            return None
        sys.meta_path.remove(self)
        import importlib.util

        spec = importlib.util.find_spec(fullname)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        loader = spec.loader
        exec_module = loader.exec_module
        then = self._then

        def exec_then_watch(module):
            exec_module(module)
            for fn in then:
                fn()

        # The loader is torch's own instance (one per module): shadow its method there.
        loader.exec_module = exec_then_watch
        # Every allocation of the import would show this frame of memtap's in its stack.
        try:
            from memtap import _stacks

            _stacks.hide(exec_then_watch.__code__, 3)
        except Exception:  # noqa: BLE001 - never break the traced program
            pass
        return spec


def _chain_next_sitecustomize():
    # Python imports only the first sitecustomize on sys.path: ours. Run the next one.
    here = os.path.dirname(os.path.abspath(__file__))
    entries = [p for p in sys.path if p]
    dirs = [os.path.abspath(p) for p in entries]
    after = dirs.index(here) + 1 if here in dirs else 0
    rest = [entries[i] for i in range(after, len(entries)) if dirs[i] != here]
    import importlib.machinery
    import importlib.util

    spec = importlib.machinery.PathFinder.find_spec("sitecustomize", rest)
    if spec is None or spec.loader is None:
        return
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)


def _main():
    stacks = os.environ.get("MEMTAP_STACKS", "")
    if "python" in [s.strip() for s in stacks.split(",")]:
        _enable_stacks()
    on_torch = []
    if os.environ.get("MEMTAP_TORCH_OPS") == "1":
        on_torch.append(_torch_ops)
    if os.environ.get("MEMTAP_TORCH_POOL", "1") != "0":
        on_torch.append(_torch_pool)
    if not on_torch:
        return
    if "torch" in sys.modules:
        for fn in on_torch:
            fn()
    else:
        sys.meta_path.insert(0, _OnTorchImport(on_torch))


try:
    _main()
except Exception as _err:  # noqa: BLE001
    _warn("sitecustomize", _err)

_chain_next_sitecustomize()
