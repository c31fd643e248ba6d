#!/usr/bin/env python3
"""Durability under kill -9: a stream of writes (PUT /v1/jobs with changing
content, POST /v1/drains, DELETE of some drains, POST /v1/assessments) from
several client threads while the daemon is SIGKILLed at a random moment, then
a restart on the same database. Passes when every write the client saw
acknowledged (a 2xx) is there after the restart: jobs versions, drain ids
(and ended drains still ended), assessment ids, and when sqlite3's
`PRAGMA integrity_check` says ok. Repeats for several cycles on one database.

  tests/load/crash_test.py --binary build/src/app/drainwise               # CI: 3 cycles
  tests/load/crash_test.py --binary build/src/app/drainwise --cycles 20   # on demand
"""
import argparse
import copy
import json
import os
import random
import shutil
import subprocess
import sys
import threading
import time

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from common import Daemon, call, temp_dir  # noqa: E402


class Acked:
    """What the client saw acknowledged, across cycles."""

    def __init__(self):
        self.lock = threading.Lock()
        self.jobs_versions = set()
        self.drains = set()
        self.ended_drains = set()
        self.assessments = set()
        self.attempted = 0
        self.unacked = 0  # connection reset by the kill: no promise made
        self.errors = []  # a write refused for a reason other than the kill


def writer(port, kind, seed, stop, acked, base_jobs, switches, counter):
    rnd = random.Random(seed)
    while not stop.is_set():
        try:
            if kind == "jobs":
                doc = copy.deepcopy(base_jobs)
                # Renaming one job makes every PUT a new version without
                # changing where GPUs are placed.
                with acked.lock:
                    counter[0] += 1
                    n = counter[0]
                doc["jobs"][n % len(doc["jobs"])]["id"] = f"crash-{seed}-{n}"
                r = call(port, "PUT", "/v1/jobs", doc, timeout=60)
                if r.status in (200, 201):
                    with acked.lock:
                        acked.jobs_versions.add(r.json()["version"])
                elif r.status not in (503,):
                    raise AssertionError(f"PUT /v1/jobs: {r.status} {r.body[:200]!r}")
            elif kind == "drains":
                body = {"drain": {"switches": [rnd.choice(switches)]}, "ticket": f"CRASH-{seed}"}
                r = call(port, "POST", "/v1/drains", body, timeout=60)
                if r.status == 201:
                    did = r.json()["id"]
                    with acked.lock:
                        acked.drains.add(did)
                    if rnd.random() < 0.5:
                        d = call(port, "DELETE", f"/v1/drains/{did}", timeout=60)
                        if d.status == 200:
                            with acked.lock:
                                acked.ended_drains.add(did)
                elif r.status not in (503,):
                    raise AssertionError(f"POST /v1/drains: {r.status} {r.body[:200]!r}")
            else:
                body = {"drain": {"switches": [rnd.choice(switches)]}, "modes": ["job"], "ticket": f"CRASH-{seed}"}
                r = call(port, "POST", "/v1/assessments", body, timeout=120)
                if r.status == 201:
                    with acked.lock:
                        acked.assessments.add(r.json()["id"])
                elif r.status == 503:
                    time.sleep(0.05)
                else:
                    raise AssertionError(f"POST /v1/assessments: {r.status} {r.body[:200]!r}")
            with acked.lock:
                acked.attempted += 1
        except AssertionError as e:
            with acked.lock:
                acked.errors.append(str(e))
            return
        except (OSError, ValueError):
            # The daemon died mid-request: no acknowledgement, no promise.
            with acked.lock:
                acked.unacked += 1
            if stop.is_set():
                return
            time.sleep(0.01)
        except Exception as e:  # a bug in this test must fail it, not end a thread quietly
            with acked.lock:
                acked.errors.append(f"{kind} writer: {type(e).__name__}: {e}")
            return


def verify(port, acked):
    problems = []
    snaps = call(port, "GET", "/v1/snapshots?limit=1000", timeout=60).json()
    stored_jobs = {v["version"] for v in snaps["versions"] if v["kind"] == "jobs"}
    # /v1/snapshots lists the newest 1000 versions: compare within that window.
    if stored_jobs:
        window = {v for v in acked.jobs_versions if v >= min(stored_jobs)}
        missing = window - stored_jobs
        if missing:
            problems.append(f"acknowledged jobs versions missing: {sorted(missing)[:10]}")
        if acked.jobs_versions and snaps["current"]["jobs_version"] < max(acked.jobs_versions):
            problems.append(f"serving jobs v{snaps['current']['jobs_version']} older than acknowledged "
                            f"v{max(acked.jobs_versions)}")
    elif acked.jobs_versions:
        problems.append("no jobs version stored at all")
    drains = {d["id"]: d for d in call(port, "GET", "/v1/drains?all=true", timeout=60).json()["drains"]}
    for did in acked.drains:
        if did not in drains:
            problems.append(f"acknowledged drain {did} missing")
        elif did in acked.ended_drains and not drains[did].get("ended_at"):
            problems.append(f"drain {did} was ended (200) but is active again")
    for aid in acked.assessments:
        r = call(port, "GET", f"/v1/assessments/{aid}", timeout=60)
        if r.status != 200:
            problems.append(f"acknowledged assessment {aid}: GET says {r.status}")
    return problems


def integrity(db):
    out = subprocess.run(["sqlite3", db, "PRAGMA integrity_check;"], capture_output=True, text=True, timeout=120)
    return out.stdout.strip() or out.stderr.strip()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--binary", required=True)
    ap.add_argument("--cycles", type=int, default=3)
    ap.add_argument("--min-run", type=float, default=1.0, help="seconds of writes before the kill, at least")
    ap.add_argument("--max-run", type=float, default=2.5, help="seconds of writes before the kill, at most")
    ap.add_argument("--seed", type=int, default=int(time.time()))
    ap.add_argument("--keep", action="store_true")
    args = ap.parse_args()
    binary = os.path.abspath(args.binary)
    rnd = random.Random(args.seed)
    work = temp_dir("drainwise-crash-")
    db = os.path.join(work, "d.db")
    acked = Acked()
    report = {"seed": args.seed, "cycles": []}
    ok = True
    try:
        for cycle in range(args.cycles):
            d = Daemon(binary, db)
            if cycle > 0:
                problems = verify(d.port, acked)
                report["cycles"][-1]["after_restart"] = problems or "all acknowledged writes present"
                if problems:
                    ok = False
                    break
            base_jobs = call(d.port, "GET", "/v1/jobs", timeout=60).json()
            base_jobs["jobs"] = base_jobs["jobs"][:20]
            if not base_jobs["jobs"]:
                raise RuntimeError("no job to rewrite")
            topo = call(d.port, "GET", "/v1/topology", timeout=60).json()
            switches = [n["id"] for n in topo["nodes"] if n.get("kind") == "switch"]
            stop = threading.Event()
            counter = [0]
            threads = [threading.Thread(target=writer, args=(d.port, k, 1000 * cycle + i, stop, acked, base_jobs,
                                                             switches, counter))
                       for i, k in enumerate(["jobs", "jobs", "drains", "assessments", "assessments"])]
            before = (len(acked.jobs_versions), len(acked.drains), len(acked.assessments))
            for t in threads:
                t.start()
            time.sleep(rnd.uniform(args.min_run, args.max_run))
            d.proc.kill()  # SIGKILL: no shutdown, no checkpoint
            d.proc.wait()
            stop.set()
            for t in threads:
                t.join(timeout=150)
            d.log.close()
            report["cycles"].append({
                "cycle": cycle,
                "acked_jobs_versions": len(acked.jobs_versions) - before[0],
                "acked_drains": len(acked.drains) - before[1],
                "acked_assessments": len(acked.assessments) - before[2],
                "in_flight_at_kill": acked.unacked,
            })
            acked.unacked = 0
        if ok:
            d = Daemon(binary, db)
            problems = verify(d.port, acked)
            report["cycles"][-1]["after_restart"] = problems or "all acknowledged writes present"
            ok = not problems
            rc = d.stop()
            if rc != 0:
                ok = False
                report["final_exit"] = rc
        report["integrity_check"] = integrity(db)
        ok = ok and report["integrity_check"] == "ok"
        report["totals"] = {"jobs_versions": len(acked.jobs_versions), "drains": len(acked.drains),
                            "ended_drains": len(acked.ended_drains), "assessments": len(acked.assessments),
                            "requests": acked.attempted}
        report["errors"] = acked.errors[:10]
        per_cycle = all(c["acked_jobs_versions"] > 0 and c["acked_drains"] > 0 and c["acked_assessments"] > 0
                        for c in report["cycles"])
        if not per_cycle:
            report["errors"].append("a cycle acknowledged no write of some kind: the stream did not run")
        ok = ok and per_cycle and not acked.errors and len(acked.jobs_versions) > 0 and len(acked.drains) > 0 and len(acked.assessments) > 0
        print(json.dumps(report, indent=2))
        if not ok:
            print("crash test FAILED", file=sys.stderr)
        return 0 if ok else 1
    finally:
        if not args.keep:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
