#!/usr/bin/env python3
"""Mixed load on the real daemon: concurrent GETs (health, topology, jobs,
snapshots) and concurrent flow-level assessments on various spines and
leaves, for a bounded time. Passes when no request failed (a 503 from the
simulation queue counts only if the retry, after Retry-After, succeeded) and
/healthz stayed fast while simulations ran. Prints throughput and latency
percentiles as one JSON object.

  tests/load/load_test.py --binary build/src/app/drainwise               # CI: demo fabric, ~10 s
  tests/load/load_test.py --binary build/src/app/drainwise --size full   # the 32k preset, 60 s

The benchmark of docs/reliability.md (32k: 8 flow-level assessment clients,
8 GET /v1/topology readers, 60 s, health p99 under 10 ms, no errors):

  tests/load/load_test.py --binary build/src/app/drainwise --size full --strict \
      --assessors 8 --modes flow --readers 8 --reader-paths /v1/topology --max-health-p99-ms 10
"""
import argparse
import json
import multiprocessing
import os
import queue
import random
import shutil
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import Daemon, call, percentile, temp_dir  # noqa: E402


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--binary", required=True)
    ap.add_argument("--size", choices=["small", "full"], default="small")
    ap.add_argument("--duration", type=float, help="seconds of load (default 10 small, 60 full)")
    ap.add_argument("--readers", type=int, default=4, help="threads issuing GETs")
    ap.add_argument("--reader-paths", default="/healthz,/v1/topology,/v1/jobs,/v1/snapshots,/readyz,/v1/drains",
                    help="comma-separated paths the readers pick from at random")
    ap.add_argument("--assessors", type=int, default=4, help="threads issuing assessments")
    ap.add_argument("--modes", default="job,flow", help="comma-separated assessment modes (job, flow)")
    ap.add_argument("--max-health-p99-ms", type=float, default=1000.0)
    ap.add_argument("--strict", action="store_true",
                    help="a 503 is an error (by default an assessment's 503 is retried after Retry-After)")
    ap.add_argument("--client-nice", type=int, default=0,
                    help="run the reader and assessor threads at this nice value (the daemon and the health probe "
                         "keep theirs): on one machine, a stand-in for clients on other hosts")
    ap.add_argument("--keep", action="store_true", help="keep the temporary directory")
    args = ap.parse_args()
    duration = args.duration or (10.0 if args.size == "small" else 60.0)
    work = temp_dir("drainwise-load-")
    db = os.path.join(work, "d.db")
    setup_s = 0.0
    try:
        daemon = Daemon(os.path.abspath(args.binary), db)
        port = daemon.port
        if args.size == "full":
            t0 = time.monotonic()
            fabric = os.path.join(work, "fabric")
            subprocess.run([args.binary, "fabric", "--preset", "32k", "--out", fabric], check=True,
                           stdout=subprocess.DEVNULL, timeout=600)
            for kind in ("topology", "jobs"):
                with open(os.path.join(fabric, f"{kind}.json"), "rb") as f:
                    r = call(port, "PUT", f"/v1/{kind}", f.read(), timeout=600)
                if r.status not in (200, 201):
                    raise RuntimeError(f"PUT /v1/{kind}: {r.status} {r.body[:300]!r}")
            setup_s = time.monotonic() - t0
        topo = call(port, "GET", "/v1/topology", timeout=300).json()
        spines = [n["id"] for n in topo["nodes"] if n.get("tier") == "spine"]
        leaves = [n["id"] for n in topo["nodes"] if n.get("tier") == "leaf"]
        if not spines or not leaves:
            raise RuntimeError("the fabric has no spine or no leaf")
        result = run_load(port, spines, leaves, duration, args)
        result.update({"size": args.size, "setup_s": round(setup_s, 1), "switches": len(spines) + len(leaves),
                       "nodes": len(topo["nodes"]), "links": len(topo["links"]),
                       "readers": args.readers, "reader_paths": args.reader_paths.split(","),
                       "assessors": args.assessors, "modes": args.modes.split(","),
                       "load_average": os.getloadavg()})
        rc = daemon.stop()
        result["daemon_exit"] = rc
        server_ms = server_side_health_ms(daemon.log_path)
        result["health"]["server_side_p99_ms"] = round(percentile(server_ms, 0.99), 3)
        print(json.dumps(result, indent=2))
        ok = (result["errors"] == 0 and rc == 0
              and (args.assessors == 0 or result["assessments"]["ok"] > 0)
              and result["health"]["p99_ms"] <= args.max_health_p99_ms)
        if not ok:
            print("load test FAILED (errors, no assessment, slow health or a bad exit)", file=sys.stderr)
            for e in result["error_samples"]:
                print("  ", e, file=sys.stderr)
            print(daemon.tail(), file=sys.stderr)
        return 0 if ok else 1
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


def health_probe(port, duration, results):
    """One GET /healthz every 20 ms for `duration` s (in a child process):
    the latency an orchestrator's liveness check sees while simulations run."""
    ms, errors = [], []
    stop_at = time.monotonic() + duration
    while time.monotonic() < stop_at:
        t0 = time.monotonic()
        try:
            r = call(port, "GET", "/healthz", timeout=30)
            ms.append((time.monotonic() - t0) * 1e3)
            if r.status != 200:
                errors.append(f"GET /healthz: {r.status}")
        except OSError as e:
            errors.append(f"GET /healthz: {e}")
        time.sleep(0.02)
    results.put({"ms": ms, "errors": errors[:10]})


def server_side_health_ms(log_path):
    """The daemon's own timing of each GET /healthz, from its request log."""
    out = []
    try:
        with open(log_path, errors="replace") as f:
            for line in f:
                if "GET /healthz 200" in line and line.rstrip().endswith("ms"):
                    out.append(float(line.rstrip()[:-2].rsplit(" ", 1)[1]))
    except (OSError, ValueError):
        pass
    return out


def run_load(port, spines, leaves, duration, args):
    stop_at = time.monotonic() + duration
    lock = threading.Lock()
    stats = {"get": {}, "assess_ok": 0, "assess_ms": [], "retried_503": 0, "errors": 0, "error_samples": [],
             "health_ms": []}

    def error(what):
        with lock:
            stats["errors"] += 1
            if len(stats["error_samples"]) < 10:
                stats["error_samples"].append(what)

    def reader(seed):
        rnd = random.Random(seed)
        paths = args.reader_paths.split(",")
        while time.monotonic() < stop_at:
            p = rnd.choice(paths)
            try:
                r = call(port, "GET", p, timeout=120)
            except OSError as e:
                error(f"GET {p}: {e}")
                continue
            if r.status != 200:
                error(f"GET {p}: {r.status} {r.body[:200]!r}")
                continue
            with lock:
                stats["get"][p] = stats["get"].get(p, 0) + 1

    def assessor(seed):
        rnd = random.Random(seed)
        while time.monotonic() < stop_at:
            target = rnd.choice(spines) if rnd.random() < 0.5 else rnd.choice(leaves)
            body = {"drain": {"switches": [target]}, "modes": args.modes.split(","), "ticket": f"LOAD-{seed}"}
            t0 = time.monotonic()
            # A 503 (queue full) is retried after Retry-After, at most 50 times.
            for attempt in range(50):
                try:
                    r = call(port, "POST", "/v1/assessments", body, timeout=300)
                except OSError as e:
                    error(f"POST /v1/assessments {target}: {e}")
                    break
                if r.status == 503 and "retry-after" in r.headers and not args.strict:
                    with lock:
                        stats["retried_503"] += 1
                    time.sleep(min(float(r.headers["retry-after"]), 5.0) * rnd.uniform(0.5, 1.0))
                    continue
                if r.status == 201 and r.json().get("id"):
                    with lock:
                        stats["assess_ok"] += 1
                        stats["assess_ms"].append((time.monotonic() - t0) * 1e3)
                else:
                    error(f"POST /v1/assessments {target}: {r.status} {r.body[:200]!r}")
                break
            else:
                error(f"POST /v1/assessments {target}: still 503 after 50 tries")

    threads = [threading.Thread(target=reader, args=(i,)) for i in range(args.readers)]
    threads += [threading.Thread(target=assessor, args=(100 + i,)) for i in range(args.assessors)]
    # The liveness probe runs in its own process: in this one it would share
    # the GIL with the readers parsing large topologies and measure Python.
    results = multiprocessing.Queue()
    probe = multiprocessing.Process(target=health_probe, args=(port, duration, results))
    t_start = time.monotonic()
    probe.start()
    if args.client_nice:
        os.nice(args.client_nice)  # this thread; the client threads started below inherit it
    for t in threads:
        t.start()
    try:
        probe_out = results.get(timeout=duration + 120)
    except queue.Empty:
        probe_out = {"ms": [], "errors": ["the health probe process returned nothing"]}
    probe.join(timeout=30)
    for t in threads:
        t.join(timeout=duration + 600)  # an assessment in flight at the end may take a while
    elapsed = time.monotonic() - t_start
    stats["health_ms"] = probe_out["ms"]
    for e in probe_out["errors"]:
        error(e)
    if any(t.is_alive() for t in threads):
        stats["errors"] += 1
        stats["error_samples"].append("a client thread did not finish within duration + 600 s")
    h = stats["health_ms"]
    gets = sum(stats["get"].values())
    return {
        "duration_s": round(elapsed, 1),
        "errors": stats["errors"],
        "error_samples": stats["error_samples"],
        "gets": {"total": gets, "per_s": round(gets / elapsed, 1), "by_path": stats["get"]},
        "assessments": {"ok": stats["assess_ok"], "per_s": round(stats["assess_ok"] / elapsed, 2),
                        "retried_503": stats["retried_503"],
                        "p50_ms": round(percentile(stats["assess_ms"], 0.5), 1),
                        "p99_ms": round(percentile(stats["assess_ms"], 0.99), 1)},
        "health": {"probes": len(h), "p50_ms": round(percentile(h, 0.5), 2), "p99_ms": round(percentile(h, 0.99), 2),
                   "max_ms": round(max(h) if h else float("nan"), 2)},
    }


if __name__ == "__main__":
    sys.exit(main())
