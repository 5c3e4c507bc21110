"""A synthetic PyTorch CUDA memory snapshot of N trace entries, as torch 2.5+ writes one.

    gen_torch_snapshot.py ENTRIES OUT.pickle [SEED]

Plain dicts and lists pickled with protocol 4 (what torch.cuda.memory._dump_snapshot uses),
no torch needed. One device; a caching allocator's life in miniature: 20 MiB segments
(segment_alloc, segment_free when one empties), blocks bump-allocated inside them, freed in
random order (free_requested and its free_completed together, one in twenty completed a few
entries later as if another stream still used the block), time_us 1-20 us apart. Tracebacks
as PyTorch shares them: 400 distinct stacks of 8 to 24 frames out of 150 frame dicts, each
entry with a list of its own pointing at the shared dicts (the pickle's memo). The segments
at the end agree with the trace. Deterministic for a seed.
"""
import pickle
import random
import sys

SEGMENT = 20 << 20


def main():
    entries, out = int(sys.argv[1]), sys.argv[2]
    rng = random.Random(int(sys.argv[3]) if len(sys.argv) > 3 else 1)
    frames = []
    for i in range(150):
        if i % 3 == 0:
            frames.append({"name": f"c10::fn{i}()", "filename": "??", "line": 0})
        else:
            frames.append({"name": f"forward_{i}", "filename": f"/work/model/layer{i % 17}.py",
                           "line": 10 + i})
    stacks = [[frames[rng.randrange(150)] for _ in range(rng.randrange(8, 25))]
              for _ in range(400)]

    trace = []
    now = 1_750_000_000_000_000
    segments = {}  # address -> [bump offset, live block count]
    live = {}  # block address -> (size, segment)
    pending = []  # (entries left before its completion, address, size)
    next_segment = 0x7F0000000000
    current = None

    def release(segment):
        segments[segment][1] -= 1
        if segments[segment][1] == 0 and segment != current:
            del segments[segment]
            entry("segment_free", segment, SEGMENT)

    def entry(action, addr, size, with_frames=True):
        nonlocal now
        now += rng.randrange(1, 20)
        trace.append({"action": action, "addr": addr, "size": size, "stream": 0,
                      "time_us": now, "compile_context": "N/A", "user_metadata": "",
                      "frames": list(rng.choice(stacks)) if with_frames else []})

    while len(trace) < entries:
        for p in pending:
            p[0] -= 1
        for p in [p for p in pending if p[0] <= 0]:
            pending.remove(p)
            entry("free_completed", p[1], p[2], False)
            release(p[3])
        if live and (rng.random() < 0.5 or len(live) > 2000):
            addr = rng.choice(list(live)) if len(live) < 64 else next(iter(live))
            size, segment = live.pop(addr)
            entry("free_requested", addr, size)
            if rng.random() < 0.05:
                pending.append([rng.randrange(2, 8), addr, size, segment])
            else:
                entry("free_completed", addr, size, False)
                release(segment)
            continue
        size = rng.choice([512, 4096, 65536, 1 << 20, 3 << 20]) + rng.randrange(0, 512)
        rounded = (size + 511) // 512 * 512
        if current is None or segments[current][0] + rounded > SEGMENT:
            if current is not None and segments[current][1] == 0:
                del segments[current]
                entry("segment_free", current, SEGMENT)
            current = next_segment
            next_segment += SEGMENT
            segments[current] = [0, 0]
            entry("segment_alloc", current, SEGMENT)
        addr = current + segments[current][0]
        segments[current][0] += rounded
        segments[current][1] += 1
        live[addr] = (size, current)
        entry("alloc", addr, size)
    # Stop at a whole step: cutting after a segment_free or a request would leave the dump
    # and the trace at odds.
    while len(trace) > entries:
        trace.pop()
    state = {a: (s, seg, "active_allocated") for a, (s, seg) in live.items()}
    for _, addr, size, segment in pending:
        state[addr] = (size, segment, "active_pending_free")

    # The dump: each segment's live blocks, and the rest of it inactive.
    dump = []
    for segment in sorted(segments):
        blocks, at, allocated = [], segment, 0
        for addr in sorted(a for a, v in state.items() if v[1] == segment):
            size, _, block_state = state[addr]
            rounded = (size + 511) // 512 * 512
            if addr > at:
                blocks.append({"address": at, "size": addr - at, "requested_size": 0,
                               "state": "inactive", "frames": []})
            blocks.append({"address": addr, "size": rounded, "requested_size": size,
                           "state": block_state, "frames": list(rng.choice(stacks))})
            if block_state == "active_allocated":
                allocated += rounded
            at = addr + rounded
        if at < segment + SEGMENT:
            blocks.append({"address": at, "size": segment + SEGMENT - at, "requested_size": 0,
                           "state": "inactive", "frames": []})
        dump.append({"device": 0, "address": segment, "total_size": SEGMENT,
                     "allocated_size": allocated, "active_size": allocated,
                     "requested_size": allocated, "stream": 0, "segment_type": "large",
                     "segment_pool_id": (0, 0), "is_expandable": False, "frames": [],
                     "blocks": blocks})
    snapshot = {"segments": dump, "device_traces": [trace],
                "allocator_settings": {"PYTORCH_CUDA_ALLOC_CONF": "", "expandable_segments": False},
                "external_annotations": []}
    with open(out, "wb") as f:
        pickle.dump(snapshot, f, protocol=4)


if __name__ == "__main__":
    main()
