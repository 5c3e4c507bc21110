"""A few CUDA training steps for tests/gpu/smoke.sh: an MLP on random data, memtap.step()
each step, one deliberate out-of-memory request, and PyTorch's own peak figures written
as JSON for the smoke test to compare with the recording."""
import argparse
import json
import os
import sys

import torch

try:
    import memtap
except ImportError:  # outside `memtap run`: this checkout's package (its calls are no-ops)
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "..", "agent", "python"))
    import memtap


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=5)
    parser.add_argument("--out", required=True, help="where to write torch's figures (JSON)")
    args = parser.parse_args()

    device = torch.device("cuda", 0)
    model = torch.nn.Sequential(
        torch.nn.Linear(4096, 8192), torch.nn.ReLU(), torch.nn.Linear(8192, 4096)
    ).to(device)
    opt = torch.optim.Adam(model.parameters(), lr=1e-4)
    for step in range(args.steps):
        memtap.step()
        with memtap.owner("batch"):
            x = torch.randn(2048, 4096, device=device)
            y = torch.randn(2048, 4096, device=device)
        loss = torch.nn.functional.mse_loss(model(x), y)
        opt.zero_grad()
        loss.backward()
        opt.step()
    # A block used on a second stream: its free waits for that stream (PTA FREE pending,
    # then FREE_COMPLETED), as a tensor handed between streams does.
    side = torch.cuda.Stream(device)
    shared = torch.empty(1 << 20, device=device)
    with torch.cuda.stream(side):
        torch.cuda._sleep(1_000_000)  # keeps the side stream busy past the free
        shared.add_(1)
    shared.record_stream(side)
    del shared
    torch.cuda.synchronize()
    torch.empty(1, device=device)  # the allocator completes pending frees on its next call

    free, total = torch.cuda.mem_get_info(device)
    oom_bytes = total * 2  # more than the device has: refused by the driver
    oom = False
    try:
        torch.empty(oom_bytes, dtype=torch.uint8, device=device)
    except torch.cuda.OutOfMemoryError:
        oom = True
    stats = torch.cuda.memory_stats(device)
    figures = {
        "max_memory_allocated": torch.cuda.max_memory_allocated(device),
        "max_requested": stats.get("requested_bytes.all.peak", 0),
        "pool_mode": memtap._torch_pool.mode,
        "pool_reason": memtap._torch_pool.reason,
        "max_memory_reserved": torch.cuda.max_memory_reserved(device),
        "memory_reserved": torch.cuda.memory_reserved(device),
        "total": total,
        "oom_bytes": oom_bytes,
        "oom": oom,
        "torch": torch.__version__,
        "alloc_conf": os.environ.get("PYTORCH_CUDA_ALLOC_CONF", ""),
    }
    with open(args.out, "w") as f:
        json.dump(figures, f)
    print("smoke_train:", json.dumps(figures))


if __name__ == "__main__":
    main()
