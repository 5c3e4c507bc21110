"""An independent reading of a PyTorch memory snapshot, for the reader's tests.

    torch_snapshot_expect.py FILE             figures the events memtap makes must agree with,
                                              one "key value" a line
    torch_snapshot_expect.py --redump P IN OUT  IN written again with pickle protocol P
    torch_snapshot_expect.py --plain P OUT      a plain-data object of every kind the reader
                                              makes, pickled with protocol P; prints its repr

Loads the pickle with Python's own unpickler, refusing every class (the files are plain
data), and counts from the snapshot itself what docs/design-notes.md
(monitor/store/reader/torch, "The events") says its events hold.
Nothing here shares code with memtap's reader.
"""
import pickle
import sys
from collections import defaultdict


class PlainData(pickle.Unpickler):
    def find_class(self, module, name):
        raise pickle.UnpicklingError(f"refused {module}.{name}")


def load(path):
    with open(path, "rb") as f:
        return PlainData(f).load()


def figures(snap):
    out = {}
    if isinstance(snap, list):
        segments, traces, annotations = snap, [], []
    else:
        segments = snap.get("segments", [])
        traces = snap.get("device_traces", [])
        annotations = snap.get("external_annotations", []) or []
    entries = [e for t in traces for e in t]
    synthetic = not entries and not annotations or any("time_us" not in e for e in entries)
    out["trace_entries"] = len(entries)
    out["synthetic_time"] = int(synthetic)
    times = [e["time_us"] for e in entries if "time_us" in e]
    times += [a["time_us"] for a in annotations if "time_us" in a]
    if not synthetic and times:
        out["first_ns"] = min(times) * 1000
        out["last_ns"] = max(times) * 1000

    devices = defaultdict(lambda: defaultdict(int))
    for s in segments:
        d = devices[s["device"]]
        d["segments"] += 1
        d["reserved"] += s["total_size"]
        d["allocated"] += s["allocated_size"]
        for b in s["blocks"]:
            if b["state"] == "active_allocated":
                d["live_blocks"] += 1
                d["live_bytes"] += b["requested_size"]  # the trace's sizes are these
    marks = 0
    for device, trace in enumerate(traces):
        d = devices[device] if trace else None
        live, pending = set(), set()
        for i, e in enumerate(trace):
            action = e["action"]
            d[action] += 1
            if action in ("annotate", "user_defined"):
                marks += 1
            if action == "alloc":
                live.add(e["addr"])
                pending.discard(e["addr"])
            elif action == "free_requested":
                live.discard(e["addr"])
                pending.add(e["addr"])
                nxt = trace[i + 1] if i + 1 < len(trace) else None
                if (nxt and nxt["action"] == "free_completed" and nxt["addr"] == e["addr"] and
                        (synthetic or nxt["time_us"] - e["time_us"] <= 10000)):
                    d["folded"] += 1
            elif action == "free_completed":
                if e["addr"] in pending:
                    pending.discard(e["addr"])
                elif e["addr"] not in live:
                    d["pending_before"] += 1  # its request was before the trace began
        if d is not None:
            for s in segments:
                if s["device"] != device:
                    continue
                for b in s["blocks"]:
                    if (b["state"] == "active_pending_free" and b["address"] not in pending and
                            b["address"] not in live):
                        d["pending_before"] += 1
    if not synthetic:
        marks += len(annotations)
    out["marks"] = marks
    for device, d in devices.items():
        for key, value in d.items():
            out[f"device{device}.{key}"] = value
    return out


def plain_object(protocol):
    shared = ["shared", 7]
    obj = {
        "ints": [0, 1, -1, 255, 256, 65535, 65536, -2**31, 2**31 - 1, 2**31, 2**63 - 1, -2**63,
                 2**63, 2**64 - 1, 140036741822464],
        "consts": [True, False, None],
        "floats": [1.5, -0.25, 0.1, 1e300, 123456.789],
        "text": ["", "plain", "h\u00e9llo \u2713 \U0001d11e", "x" * 300, "tab\there"],
        "tuples": [(), (1,), (1, 2), (1, 2, 3), (1, 2, 3, 4)],
        "nested": {"l": [], "d": {}, "deep": [[[["in"]]]]},
        "shared": shared,
        "again": shared,
        "many": list(range(2500)),  # more than one APPENDS batch
        "wide": {str(i): i for i in range(1500)},  # more than one SETITEMS batch
    }
    if protocol >= 3:  # bytes need REDUCE below protocol 3
        obj["bytes"] = [b"raw", b""]
    return obj


def main():
    if sys.argv[1] == "--plain":
        protocol, dst = int(sys.argv[2]), sys.argv[3]
        obj = plain_object(protocol)
        with open(dst, "wb") as f:
            pickle.dump(obj, f, protocol=protocol)
        print(repr(obj))
        return
    if sys.argv[1] == "--redump":
        protocol, src, dst = int(sys.argv[2]), sys.argv[3], sys.argv[4]
        with open(dst, "wb") as f:
            pickle.dump(load(src), f, protocol=protocol)
        return
    for key, value in sorted(figures(load(sys.argv[1])).items()):
        print(key, value)


if __name__ == "__main__":
    main()
