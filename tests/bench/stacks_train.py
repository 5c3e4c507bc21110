"""Benchmark workload for Python call stacks: a 3-layer MLP trained on the CPU.

200 steps of batch 64 through 256 -> 512 -> 512 -> 10. Gradients are set to None at each
step (torch 2's default), so the 1 MiB gradient of the middle weight is allocated again every
step: with --stack-min-size 1MiB each step has a stacked allocation (and every Python call
goes through the agent's profile function); with 4KiB nearly every tensor is stacked.
Small on purpose: Debian's torch uses a generic BLAS, and a loop dominated by matrix
products would hide the Python side. Prints train_ms, the training loop's own wall time, and train_cpu_ms, its thread's CPU time
(torch runs its operators on this thread here: one intra-op thread on a 2-core machine or
not, see torch.get_num_threads(); CPU time is steadier than wall time on a busy machine).
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
    start_cpu = time.thread_time()
    for _ in range(200):
        loss = train_step(model, opt, x, y)
    train_cpu_ms = (time.thread_time() - start_cpu) * 1000
    train_ms = (time.perf_counter() - start) * 1000
    print("train_ms=%d train_cpu_ms=%d threads=%d loss=%.4f"
          % (train_ms, train_cpu_ms, torch.get_num_threads(), loss.item()), flush=True)


if __name__ == "__main__":
    main()
