#!/usr/bin/env python3
"""Where a process's resident memory is, from /proc/PID/smaps, sampled every PERIOD seconds.

Usage: bench/server/rss_breakdown.py PID [--period 5] [--once]
Prints CSV to stdout: t_s, unix_s (to line samples up with attacker.py's start_unix_s), rss_mib (the sum below), main_heap_mib (the brk heap: glibc's main
arena), arenas (glibc's other arenas: threads' malloc heaps, each reserved as a 64 MiB-aligned
64 MiB mapping), arena_heap_mib (their resident part), other_anon_mib (mmapped allocations above
the mmap threshold, thread stacks, oneDNN's and other libraries' own mappings), file_mib
(the binary, shared libraries, mapped engine files).

The arena heuristic is glibc's layout (malloc/arena.c): a non-main arena's heap is one mapping of
HEAP_MAX_SIZE (64 MiB on 64-bit) aligned to its size, of which the used front is read-write and
the rest PROT_NONE; an arena that outgrows it adds another such heap.
"""
import argparse
import sys
import time

HEAP_MAX_BYTES = 64 << 20


def mappings(pid):
    """(start, end, perms, path, rss_kib) for every mapping of PID."""
    out, current = [], None
    with open(f"/proc/{pid}/smaps") as f:
        for line in f:
            head = line.split()
            if "-" in head[0] and not head[0].endswith(":"):
                start, end = (int(x, 16) for x in head[0].split("-"))
                current = [start, end, head[1], head[5] if len(head) > 5 else "", 0]
                out.append(current)
            elif head[0] == "Rss:":
                current[4] = int(head[1])
    return out


def breakdown(pid):
    maps = mappings(pid)
    main_kib = arena_kib = other_kib = file_kib = 0
    arena_blocks = set()
    # A 64 MiB-aligned block whose mappings are all anonymous and cover it exactly is an arena heap.
    blocks = {}
    for start, end, perms, path, rss in maps:
        if not path and start % HEAP_MAX_BYTES == 0 or (start // HEAP_MAX_BYTES) in blocks:
            blocks.setdefault(start // HEAP_MAX_BYTES, []).append((start, end, path))
    for block, parts in blocks.items():
        begin, finish = block * HEAP_MAX_BYTES, (block + 1) * HEAP_MAX_BYTES
        contiguous = all(a[1] == b[0] for a, b in zip(parts, parts[1:]))
        if (parts[0][0] == begin and parts[-1][1] == finish and contiguous and
                all(not p[2] for p in parts)):
            arena_blocks.add(block)
    for start, end, perms, path, rss in maps:
        if path == "[heap]":
            main_kib += rss
        elif not path and start // HEAP_MAX_BYTES in arena_blocks:
            arena_kib += rss
        elif not path or path.startswith("["):
            other_kib += rss
        else:
            file_kib += rss
    mib = lambda kib: round(kib / 1024, 1)
    return [mib(main_kib + arena_kib + other_kib + file_kib), mib(main_kib), len(arena_blocks),
            mib(arena_kib), mib(other_kib), mib(file_kib)]


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("pid", type=int)
    parser.add_argument("--period", type=float, default=5.0)
    parser.add_argument("--once", action="store_true")
    args = parser.parse_args()
    print("t_s,unix_s,rss_mib,main_heap_mib,arenas,arena_heap_mib,other_anon_mib,file_mib", flush=True)
    start = time.time()
    while True:
        try:
            row = breakdown(args.pid)
        except (FileNotFoundError, ProcessLookupError):
            return 0
        print(",".join(str(x) for x in [round(time.time() - start), round(time.time(), 1)] + row), flush=True)
        if args.once:
            return 0
        time.sleep(args.period)


if __name__ == "__main__":
    sys.exit(main())
