"""memtap's sitecustomize: `memtap run` puts this directory first on PYTHONPATH.

It makes `import memtap` work in the traced program, and turns on what the command line
asked for, through the environment memtap run sets:
  MEMTAP_STACKS containing "python": Python call stacks on large allocations
      (memtap._stacks.enable());
  MEMTAP_TORCH_OPS=1: memtap.torch.enable() as soon as the program has imported torch.
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


class _TorchOpsOnImport:
    """A meta path finder that enables memtap.torch once `torch` has been imported."""

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

        def exec_then_watch(module):
            exec_module(module)
            try:
                import memtap.torch

                memtap.torch.enable()
            except Exception as err:  # noqa: BLE001
                _warn("--torch-ops is off", err)

        # The loader is torch's own instance (one per module): shadow its method there.
        loader.exec_module = exec_then_watch
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
    if os.environ.get("MEMTAP_TORCH_OPS") == "1":
        if "torch" in sys.modules:
            import memtap.torch

            memtap.torch.enable()
        else:
            sys.meta_path.insert(0, _TorchOpsOnImport())


try:
    _main()
except Exception as _err:  # noqa: BLE001
    _warn("sitecustomize", _err)

_chain_next_sitecustomize()
