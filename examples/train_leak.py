"""A PyTorch CPU training loop with a memory leak, to find with memtap.

    memtap run --stacks python -- /usr/bin/python3 examples/train_leak.py
    memtap report memscope_dump_*.db

A small MLP learns a synthetic regression. Every step also keeps a 40 MiB tensor in a
global list (a "debug history" that is never trimmed): memtap's report names the owner
`leaks_mem` as the leak, about 40 MiB per step, and with --stacks python the line below
that allocates it. It runs without memtap too (the memtap calls are no-ops then); prints
the training loop's wall time as train_ms=N for tests/bench/run_training.sh.
"""
import argparse
import os
import sys
import time

import torch

try:
    import memtap
except ImportError:  # outside `memtap run`: this checkout's package (its calls are no-ops)
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "agent", "python"))
    import memtap

LEAK_BYTES = 40 * 1024 * 1024
_debug_history = []  # the leak: one tensor per step, never released


def remember(step):
    with memtap.owner("leaks_mem"):
        _debug_history.append(torch.full((LEAK_BYTES,), step % 256, dtype=torch.uint8))


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--steps", type=int, default=15)
    parser.add_argument("--hidden", type=int, default=512)
    parser.add_argument("--batch", type=int, default=64)
    parser.add_argument("--no-leak", action="store_true", help="train without the leak")
    args = parser.parse_args()

    torch.manual_seed(0)
    torch.set_num_threads(1)
    model = torch.nn.Sequential(
        torch.nn.Linear(512, args.hidden), torch.nn.ReLU(),
        torch.nn.Linear(args.hidden, args.hidden), torch.nn.ReLU(),
        torch.nn.Linear(args.hidden, 10))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    target = torch.nn.Linear(512, 10)  # the function to learn

    start = time.monotonic()
    for step in range(args.steps):
        memtap.step()
        x = torch.randn(args.batch, 512)
        with torch.no_grad():
            y = target(x)
        with memtap.range("forward"), memtap.owner("forward"):
            loss = torch.nn.functional.mse_loss(model(x), y)
        memtap.mark("backward")
        with memtap.range("backward"):
            opt.zero_grad()
            loss.backward()
        with memtap.range("optimizer"):
            opt.step()
        if not args.no_leak:
            remember(step)
    train_ms = (time.monotonic() - start) * 1000
    print(f"steps={args.steps} loss={loss.item():.4f} kept={len(_debug_history)} "
          f"train_ms={train_ms:.1f}", flush=True)


if __name__ == "__main__":
    main()
