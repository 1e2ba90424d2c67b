#!/usr/bin/python3
"""How long a command takes to print its first byte, and to end.

    /usr/bin/python3 tools/bench/first_byte.py RUNS COMMAND ARGS...

runs COMMAND RUNS times, one after another (OPENBLAS_NUM_THREADS=1, stdin
/dev/null, stderr dropped), and prints the median time from the start to
the first byte on standard output and to the exit, the bytes printed, and
the machine's 1-minute load average. It measures `tinyformer run`'s
streaming (docs/PERFORMANCE.md): before it, the first byte came when the
whole generation was done; now it comes after the prompt's pass and the
first step. A measurement, never a test: nothing here asserts a time.
"""
import os
import subprocess
import sys
import time


def measure(command):
    env = dict(os.environ, OPENBLAS_NUM_THREADS="1")
    start = time.monotonic()
    child = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             stdin=subprocess.DEVNULL, env=env)
    first = os.read(child.stdout.fileno(), 1)
    first_time = time.monotonic() - start
    rest = child.stdout.read()
    child.wait()
    return first_time, time.monotonic() - start, len(first) + len(rest)


def main():
    if len(sys.argv) < 3 or not sys.argv[1].isdigit() or int(sys.argv[1]) < 1:
        sys.exit("usage: first_byte.py RUNS COMMAND ARGS...")
    runs = [measure(sys.argv[2:]) for _ in range(int(sys.argv[1]))]
    first = sorted(run[0] for run in runs)[len(runs) // 2]
    end = sorted(run[1] for run in runs)[len(runs) // 2]
    print(f"first byte {first * 1000:.0f} ms, exit {end * 1000:.0f} ms (medians of {len(runs)} runs), "
          f"{runs[0][2]} bytes, load {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
