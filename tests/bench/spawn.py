"""Spawns `true` N times with Python's subprocess, as KIND says, and prints the milliseconds
per spawn (tests/bench/run_spawn.sh).

  vfork    subprocess.run(['true'])                         (vfork + exec: the usual way)
  preexec  subprocess.run(['true'], preexec_fn=...)         (fork, Python in the child,
                                                              close_range, exec per PATH dir)
  closeloop  os.fork(); the child closes every descriptor from 3 up with os.close, one at a
           time, then os.execv('/bin/true')                  (a daemon's way)
"""
import os
import subprocess
import sys
import time

n, kind = int(sys.argv[1]), sys.argv[2]


def close_loop_spawn():
    pid = os.fork()
    if pid == 0:
        top = min(os.sysconf("SC_OPEN_MAX"), 65536)
        for fd in range(3, top):
            try:
                os.close(fd)
            except OSError:
                pass
        os.execv("/bin/true", ["true"])
    os.waitpid(pid, 0)


start = time.perf_counter()
for _ in range(n):
    if kind == "vfork":
        subprocess.run(["true"], check=True)
    elif kind == "preexec":
        subprocess.run(["true"], preexec_fn=lambda: None, check=True)
    elif kind == "closeloop":
        close_loop_spawn()
    else:
        sys.exit("spawn.py: KIND is vfork, preexec or closeloop")
print("%.2f" % ((time.perf_counter() - start) / n * 1000))
