"""Benchmark workload for Python call stacks: a 3-layer MLP trained on the CPU.

200 steps of batch 64 through 256 -> 512 -> 512 -> 10. Gradients are set to None at each
step (torch 2's default), so the 1 MiB gradient of the middle weight is allocated again every
step: with --stack-min-size 1MiB each step has a stacked allocation (and every Python call
goes through the agent's profile function); with 4KiB nearly every tensor is stacked.
Small on purpose: Debian's torch uses a generic BLAS, and a loop dominated by matrix
products would hide the Python side. Prints train_ms: the training loop's own wall time.
Run by run_stacks_train.sh.
"""
import time

import torch
from torch import nn


def make_model():
    return nn.Sequential(nn.Linear(256, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(),
                         nn.Linear(512, 10))


def train_step(model, opt, x, y):
    opt.zero_grad(set_to_none=True)
    loss = nn.functional.cross_entropy(model(x), y)
    loss.backward()
    opt.step()
    return loss


def main():
    torch.manual_seed(0)
    model = make_model()
    opt = torch.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
    x = torch.randn(64, 256)
    y = torch.randint(0, 10, (64,))
    train_step(model, opt, x, y)  # warm-up: first-call costs are not the loop's
    start = time.perf_counter()
    for _ in range(200):
        loss = train_step(model, opt, x, y)
    train_ms = (time.perf_counter() - start) * 1000
    print("train_ms=%d loss=%.4f" % (train_ms, loss.item()), flush=True)


if __name__ == "__main__":
    main()
