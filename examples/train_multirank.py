"""Data-parallel PyTorch training on the CPU: ranks with torch.distributed (gloo).

    memtap run -- /usr/bin/python3 examples/train_multirank.py            # 2 ranks
    memtap run -- /usr/bin/python3 examples/train_multirank.py --ranks 4

Every rank is a process of its own, preloaded with the agent (the environment carries it),
all streaming into the one monitor; the report lists each under its hostname and rank.
The agent reads RANK and WORLD_SIZE from the environment when the process starts, so
the launcher here starts each rank (multiprocessing's "spawn": a fresh interpreter) with
its own RANK in the environment, as torchrun does. torch.multiprocessing.spawn passes
the rank only as an argument, after the process has started: the agent would not see it.
Started with RANK already set (torchrun, Slurm) the script trains as that one rank.
"""
import argparse
import multiprocessing
from multiprocessing import resource_tracker
import os
import socket
import sys
import time

try:
    import memtap
except ImportError:  # outside `memtap run`: this checkout's package (its calls are no-ops)
    sys.path.insert(0, os.path.join(os.path.dirname(__file__), "..", "agent", "python"))
    import memtap


def train(steps):
    """One rank's training: DDP over gloo, RANK/WORLD_SIZE/MASTER_* from the environment."""
    import torch
    import torch.distributed as dist

    rank = int(os.environ["RANK"])
    world = int(os.environ["WORLD_SIZE"])
    dist.init_process_group("gloo", rank=rank, world_size=world)
    torch.manual_seed(rank)
    torch.set_num_threads(1)
    with memtap.owner("model"):
        model = torch.nn.parallel.DistributedDataParallel(torch.nn.Sequential(
            torch.nn.Linear(256, 512), torch.nn.ReLU(), torch.nn.Linear(512, 10)))
    opt = torch.optim.SGD(model.parameters(), lr=0.01)
    start = time.monotonic()
    for _ in range(steps):
        memtap.step()
        x = torch.randn(64, 256)
        y = torch.randint(0, 10, (64,))
        with memtap.owner("activations"):
            loss = torch.nn.functional.cross_entropy(model(x), y)
        memtap.mark("allreduce")
        opt.zero_grad()
        loss.backward()  # DDP all-reduces the gradients over gloo here
        opt.step()
    dist.barrier()
    train_ms = (time.monotonic() - start) * 1000
    # One write(2) per line: the ranks share the terminal (or pipe), and print() may write
    # the text and its newline separately when stdout is unbuffered, interleaving the ranks.
    line = (f"rank={rank} world={world} pid={os.getpid()} loss={loss.item():.4f} "
            f"train_ms={train_ms:.1f}\n")
    sys.stdout.flush()
    os.write(sys.stdout.fileno(), line.encode())
    dist.destroy_process_group()


def launch(ranks, steps):
    """Starts `ranks` processes, each with its own RANK in the environment; waits for all."""
    with socket.socket() as s:  # a free port for the rendezvous
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    # The spawn method's helper process starts with the first rank: start it before any
    # RANK is set, so that it is not taken for a rank.
    resource_tracker.ensure_running()
    os.environ.update(MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
    spawn = multiprocessing.get_context("spawn")
    procs = []
    for rank in range(ranks):
        # Read by the new process's agent when it starts, and by train().
        os.environ.update(RANK=str(rank), LOCAL_RANK=str(rank), WORLD_SIZE=str(ranks))
        p = spawn.Process(target=train, args=(steps,))
        p.start()
        procs.append(p)
    for k in ("RANK", "LOCAL_RANK", "WORLD_SIZE"):
        del os.environ[k]
    failed = 0
    for p in procs:
        p.join()
        failed += p.exitcode != 0
    return 1 if failed else 0


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--steps", type=int, default=10)
    args = parser.parse_args()
    if "RANK" in os.environ:  # started by torchrun (or by hand): be that rank
        train(args.steps)
        return 0
    return launch(args.ranks, args.steps)


if __name__ == "__main__":
    sys.exit(main())
