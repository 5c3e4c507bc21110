"""A PyTorch CPU workload whose reserved memory stays far above what it uses.

    memtap run -- /usr/bin/python3 examples/train_fragmentation.py
    memtap report memscope_dump_*.db

The training step's activations come from a caching pool, as the CUDA caching allocator
hands out GPU memory: the pool reserves 32 MiB slabs (anonymous mmap, which memtap
records as reserved host memory), carves tensors of varying sizes out of them, and gives
a slab back only when every tensor in it has been freed. Each step also keeps one small
tensor (a per-step statistic) that happens to land in a fresh slab, so no slab ever
empties: the pool's reserved memory grows step after step while what is actually in use
stays small. memtap's report shows Reserved far above Allocated (the Fragmentation line:
reserved minus allocated). Prints pool_reserved / pool_in_use as the pool sees them.
"""
import mmap
import os
import sys
import time

import torch

try:
    import memtap
except ImportError:  # outside `memtap run`: this checkout's package (its calls are no-ops)
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "agent", "python"))
    import memtap

MiB = 1024 * 1024
SLAB_BYTES = 32 * MiB
ALIGN = 512


class SlabPool:
    """Bump allocation in mmap'd slabs; a slab is unmapped once nothing in it is live."""

    def __init__(self):
        self.slabs = []  # [mmap, used_bytes, live_tensors]
        self.in_use = 0

    def tensor(self, shape):
        count = 1
        for n in shape:
            count *= n
        nbytes = (count * 4 + ALIGN - 1) // ALIGN * ALIGN
        slab = self.slabs[-1] if self.slabs else None
        if slab is None or slab[1] + nbytes > SLAB_BYTES:
            mapping = mmap.mmap(-1, SLAB_BYTES, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
            slab = [mapping, 0, 0]
            self.slabs.append(slab)
        t = torch.frombuffer(slab[0], dtype=torch.float32, count=count, offset=slab[1])
        slab[1] += nbytes
        slab[2] += 1
        self.in_use += nbytes
        return t.view(shape), (slab, nbytes)

    def release(self, handle):
        slab, nbytes = handle
        slab[2] -= 1
        self.in_use -= nbytes
        if slab[2] == 0 and slab is not self.slabs[-1]:
            self.slabs.remove(slab)
            slab[0].close()  # munmap: only possible once the slab is empty

    def reserved(self):
        return len(self.slabs) * SLAB_BYTES


def main():
    steps = int(sys.argv[1]) if len(sys.argv) > 1 else 12
    torch.manual_seed(0)
    torch.set_num_threads(1)
    pool = SlabPool()
    w = torch.randn(1024, 16) * 0.03
    kept = []  # (tensor, handle): one small statistic per step, kept for the whole run
    start = time.monotonic()
    for step in range(steps):
        memtap.step()
        handles = []
        with memtap.owner("activations"):
            for i in range(3):  # a forward pass: activations of varying batch sizes
                rows = 1024 + 256 * ((step + i) % 4)
                x, h = pool.tensor((rows, 1024))
                x.uniform_(-1, 1)
                a, h2 = pool.tensor((rows, 1024))
                torch.mul(x, 0.5, out=a).relu_()
                handles += [h, h2]
            out, h3 = pool.tensor((rows, 16))
            torch.mm(a, w, out=out)
            handles.append(h3)
        stat, sh = pool.tensor((64, 16))
        stat.copy_(out[:64])
        kept.append((stat, sh))
        for h in handles:  # the step ends: its activations go back to the pool
            pool.release(h)
    train_ms = (time.monotonic() - start) * 1000
    print(f"steps={steps} pool_reserved={pool.reserved() // MiB} MiB "
          f"pool_in_use={pool.in_use / MiB:.1f} MiB slabs={len(pool.slabs)} "
          f"train_ms={train_ms:.1f}", flush=True)


if __name__ == "__main__":
    main()
