#!/usr/bin/env python3
"""Where a two-thread run leaves one thread idle, from `perf script` samples.

Samples are binned by time; a bin in which one thread was sampled counts as
one thread busy (a bin with no sample is skipped). Prints how many bins had one thread busy, how many of
those sampled a symbol matching --match, and every stretch of one-thread
bins at least --stretch-ms long with its two most sampled symbols.

    perf record -F 2000 -o perf.data build/bench/flow_bench \\
        --benchmark_filter='Moe32k_Full_Hash/8/2/'
    perf script -i perf.data -F tid,time,ip,sym --no-demangle \\
        | python3 bench/one_thread_bins.py --match FootprintOf

(docs/performance.md, "Where one thread waits".)
"""
import argparse
import collections
import shutil
import subprocess
import sys


def demangle(name):
    if shutil.which("c++filt") is None:
        return name
    return subprocess.run(["c++filt", name], capture_output=True, text=True).stdout.strip()


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bin-ms", type=float, default=5.0)
    ap.add_argument("--stretch-ms", type=float, default=80.0)
    ap.add_argument("--match", default=None, help="count one-thread bins sampling a symbol with this substring")
    args = ap.parse_args()

    samples = []  # (tid, time in s, symbol)
    for line in sys.stdin:
        f = line.split()
        if len(f) < 2:
            continue
        try:
            samples.append((int(f[0]), float(f[1].rstrip(":")), f[3] if len(f) > 3 else "?"))
        except ValueError:
            continue
    if not samples:
        sys.exit("no samples on standard input")
    width = args.bin_ms / 1000.0
    t0 = min(s[1] for s in samples)
    bins = collections.defaultdict(list)
    for tid, t, sym in samples:
        bins[int((t - t0) / width)].append((tid, sym))

    one = matched = 0
    stretches = []
    start, syms = None, collections.Counter()

    def close(end):
        if start is not None and (end - start) * width * 1000 >= args.stretch_ms:
            stretches.append((start * width, (end - start) * width, syms.most_common(2)))

    for b in range(max(bins) + 1):
        v = bins.get(b)
        if not v:  # nothing sampled: neither busy nor idle
            continue
        if len({tid for tid, _ in v}) >= 2:
            close(b)
            start = None
            continue
        one += 1
        if args.match and any(args.match in sym for _, sym in v):
            matched += 1
        if start is None:
            start, syms = b, collections.Counter()
        syms.update(sym for _, sym in v)
    close(max(bins) + 1)

    print(f"bins of {args.bin_ms:g} ms: {len(bins)} sampled, {one} with one thread busy "
          f"({one * width:.2f} s)")
    if args.match:
        print(f"one-thread bins sampling '{args.match}': {matched} ({matched * width:.2f} s)")
    for at, length, top in stretches:
        names = ", ".join(f"{demangle(s)[:60]} ({n})" for s, n in top)
        print(f"{at:8.2f} s  +{length:.2f} s  {names}")
    print(f"stretches of {args.stretch_ms:g} ms or more: {sum(s[1] for s in stretches):.2f} s")


if __name__ == "__main__":
    main()
