"""Checks a PyTorch memory snapshot the way PyTorch's memory viewer reads it.

    memory_viz_check.py SNAPSHOT...

The viewer (pytorch.org/memory_viz, torch/utils/viz/MemoryViz.js) takes the segments live
at the dump, each tiled by its blocks from its address on, and plays each device's trace
backwards from there to draw any earlier moment; every live block must then lie in a live
segment, or the page fails. This is an independent reading of that contract, for the tests
of `memtap export --format torch-snapshot`:

  - the file is a plain-data pickle (Python's own unpickler, no class looked up);
  - every segment's blocks tile it: consecutive addresses from the segment's, sizes adding
    up to total_size (torch.cuda._memory_viz.stats asserts the same, and is run too when
    torch is importable);
  - undoing the trace from the end (as the viewer does) never meets an entry it cannot undo:
    a free_requested of a block not live then, a segment_alloc of a segment not there, a
    segment_map of a range not mapped;
  - replaying it forwards from the state so reached, every block allocated, and every block
    live when a segment goes, lies inside live segments (mapped ranges that touch count as
    one, as the viewer merges them).

Prints a JSON summary (entries per action, segments, blocks by state, devices) of each file on
a line of its own on stdout and exits 0, or prints the first problem, after the file's name,
on stderr and exits 1. Several files in one run import torch once (seconds).
"""

import io
import json
import pickle
import sys


class PlainUnpickler(pickle.Unpickler):
    def find_class(self, module, name):
        raise pickle.UnpicklingError(f"the snapshot names a class: {module}.{name}")


class Problem(Exception):
    pass


def fail(message):
    raise Problem(message)


class Pool:
    """One device's segments ({addr: [size, mapped, stream]}) and blocks ({addr: [size, pending]})."""

    def __init__(self):
        self.segments = {}
        self.blocks = {}

    def covering(self, addr, size):
        """Whether [addr, addr + size) lies in segments; touching mapped ranges are one."""
        end = addr + size
        starts = sorted(self.segments)
        cursor = addr
        for start in starts:
            seg_size, mapped, _ = self.segments[start]
            if start <= cursor < start + seg_size:
                if end <= start + seg_size:
                    return True
                if not mapped:
                    return False
                nxt = start + seg_size
                if nxt not in self.segments or not self.segments[nxt][1]:
                    return False
                cursor = nxt
        return False

    def blocks_in(self, addr, size):
        return [b for b, (s, _) in self.blocks.items() if b < addr + size and addr < b + s]


def map_range(pool, addr, size, stream):
    pool.segments[addr] = [size, True, stream]


def unmap_range(pool, addr, size, where):
    """Takes [addr, addr + size) out of the mapped segments, splitting one if need be."""
    for start in sorted(pool.segments):
        seg_size, mapped, stream = pool.segments[start]
        if start <= addr and addr + size <= start + seg_size:
            del pool.segments[start]
            if start < addr:
                pool.segments[start] = [addr - start, mapped, stream]
            if addr + size < start + seg_size:
                pool.segments[addr + size] = [start + seg_size - addr - size, mapped, stream]
            return
    # A range mapped by several calls and unmapped by one: take it piece by piece.
    cursor, end = addr, addr + size
    while cursor < end:
        if cursor not in pool.segments or not pool.segments[cursor][1]:
            fail(f"{where}: segment_map of {cursor:#x} is not a mapped range to undo")
        seg_size = pool.segments.pop(cursor)[0]
        cursor += seg_size
    if cursor != end:
        fail(f"{where}: segment_map of {addr:#x}+{size} ends inside a mapped range")


def read_with_torch(snapshot):
    """Runs the installed torch's own readers of a snapshot over this one; their names, or []
    without torch. They changed between releases: 1.13 has stats(segments), 2.x segsum(snapshot),
    which checks that every segment's blocks add up, and trace(snapshot), which walks the device
    traces. Each raises on what it cannot read."""
    try:
        from torch.cuda import _memory_viz
    except ImportError:
        return []
    readers = []
    if hasattr(_memory_viz, "stats"):
        _memory_viz.stats(snapshot["segments"])
        readers.append("stats")
    for name in ("segsum", "trace"):
        if hasattr(_memory_viz, name):
            getattr(_memory_viz, name)(snapshot)
            readers.append(name)
    if not readers:
        fail("this torch's _memory_viz has none of stats, segsum and trace to read it with")
    return readers


def check(path):
    with open(path, "rb") as f:
        data = f.read()
    try:
        snapshot = PlainUnpickler(io.BytesIO(data)).load()
    except (pickle.UnpicklingError, EOFError, ValueError) as error:
        fail(f"not a plain-data pickle: {error}")
    if not isinstance(snapshot, dict) or "segments" not in snapshot or "device_traces" not in snapshot:
        fail("not a snapshot dict with segments and device_traces")
    traces = snapshot["device_traces"]
    summary = {"actions": {}, "segments": 0, "blocks": {}, "devices": []}

    pools = {}
    for seg in snapshot["segments"]:
        device = seg["device"]
        pool = pools.setdefault(device, Pool())
        addr = seg["address"]
        for b in seg["blocks"]:
            if "address" in b and b["address"] != addr:
                fail(f"segment {seg['address']:#x}: block at {b['address']:#x}, expected {addr:#x}")
            if b["state"] in ("active_allocated", "active_pending_free"):
                pool.blocks[addr] = [b["size"], b["state"] == "active_pending_free"]
            summary["blocks"][b["state"]] = summary["blocks"].get(b["state"], 0) + 1
            addr += b["size"]
        if addr != seg["address"] + seg["total_size"]:
            fail(f"segment {seg['address']:#x}: blocks add up to {addr - seg['address']}, "
                 f"total_size {seg['total_size']}")
        expandable = bool(seg.get("is_expandable", False))
        pool.segments[seg["address"]] = [seg["total_size"], expandable, seg["stream"]]
        summary["segments"] += 1

    summary["torch_readers"] = read_with_torch(snapshot)

    for device, trace in enumerate(traces):
        if trace:
            summary["devices"].append(device)
        pool = pools.setdefault(device, Pool())
        for e in trace:
            summary["actions"][e["action"]] = summary["actions"].get(e["action"], 0) + 1
        # Backwards, as the viewer draws an earlier moment.
        for i in range(len(trace) - 1, -1, -1):
            e = trace[i]
            where = f"device {device}, entry {i} ({e['action']})"
            action = e["action"]
            if action == "alloc":
                pool.blocks.pop(e["addr"], None)
            elif action == "free_requested":
                if e["addr"] not in pool.blocks:
                    fail(f"{where}: no block at {e['addr']:#x} to undo the request of")
                pool.blocks[e["addr"]][1] = False
            elif action == "free_completed":
                pool.blocks[e["addr"]] = [e["size"], True]
            elif action == "segment_alloc":
                if e["addr"] not in pool.segments:
                    fail(f"{where}: no segment at {e['addr']:#x} to undo")
                del pool.segments[e["addr"]]
            elif action == "segment_free":
                pool.segments[e["addr"]] = [e["size"], False, e["stream"]]
            elif action == "segment_map":
                unmap_range(pool, e["addr"], e["size"], where)
            elif action == "segment_unmap":
                map_range(pool, e["addr"], e["size"], e["stream"])
        # Forwards again, checking where every block lies.
        for i, e in enumerate(trace):
            where = f"device {device}, entry {i} ({e['action']})"
            action = e["action"]
            if action == "alloc":
                if not pool.covering(e["addr"], e["size"]):
                    fail(f"{where}: block {e['addr']:#x}+{e['size']} lies in no segment")
                pool.blocks[e["addr"]] = [e["size"], False]
            elif action == "free_requested":
                pool.blocks.setdefault(e["addr"], [e["size"], True])[1] = True
            elif action == "free_completed":
                pool.blocks.pop(e["addr"], None)
            elif action == "segment_alloc":
                pool.segments[e["addr"]] = [e["size"], False, e["stream"]]
            elif action == "segment_map":
                map_range(pool, e["addr"], e["size"], e["stream"])
            elif action in ("segment_free", "segment_unmap"):
                inside = pool.blocks_in(e["addr"], e["size"])
                if inside:
                    fail(f"{where}: the segment goes with block {inside[0]:#x} live in it")
                if action == "segment_free":
                    pool.segments.pop(e["addr"], None)
                else:
                    unmap_range(pool, e["addr"], e["size"], where)
            if action in ("alloc", "free_requested", "free_completed", "segment_alloc",
                          "segment_free", "segment_map", "segment_unmap"):
                for key in ("addr", "size", "stream", "frames"):
                    if key not in e:
                        fail(f"{where}: no {key}")
            elif action == "oom" and "device_free" not in e:
                fail(f"{where}: no device_free")
    return summary


def main():
    for path in sys.argv[1:]:
        try:
            summary = check(path)
        except Problem as problem:
            print(f"{path}: {problem}", file=sys.stderr)
            sys.exit(1)
        print(json.dumps(summary, sort_keys=True))


if __name__ == "__main__":
    main()
