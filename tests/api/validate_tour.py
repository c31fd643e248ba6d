#!/usr/bin/env python3
"""Runs the README's curl tour through Prism's validating proxy and fails on any violation.

The requests are not copied here: they are read from the README's "A tour with
curl" block, so the tour and this check cannot drift apart. Each `curl` line is
run with curl itself, exactly as written, except that 127.0.0.1:8080 becomes
the proxy (`prism proxy docs/openapi.yaml`, loopback, ephemeral port), which
forwards to a real `drainwise serve --demo` on 127.0.0.1 (ephemeral port, a
throw-away database) and checks every request and response against
docs/openapi.yaml. Two placeholders of the tour are filled in:
  @my-topology.json  the demo topology with one link to an unknown node (the
                     tour says: a bad document is refused, offending item named)
  <id>               the id the tour's POST /v1/drains returned
Pipes (`| head`, `| grep`) only shape the terminal output and are dropped.
One header is added: `curl -d` labels a body application/x-www-form-urlencoded,
the daemon reads JSON whatever the label and the tour leaves the header out for
brevity, but the API (docs/openapi.yaml) documents application/json, so a body
without a -H Content-Type is sent with `Content-Type: application/json`.

Fails (exit 1) when Prism reports any violation (its sl-violations header or
its log), when a request gets a 5xx, or a 4xx other than the bad topology's.
Exit 77 (ctest: skipped) when node or the npm packages are missing
(packaging/install-deps.sh installs them).

Usage: validate_tour.py --binary build/src/app/drainwise [--readme README.md]
                        [--spec docs/openapi.yaml] [--prism tests/api/node_modules/.bin/prism]
"""
import argparse
import json
import os
import re
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
TOUR_ADDRESS = "127.0.0.1:8080"


def skip(msg):
    print(f"validate_tour: skipped: {msg}")
    sys.exit(77)


def tour_commands(readme):
    """The curl commands of the README's tour, as argument lists (pipes dropped)."""
    text = open(readme, encoding="utf-8").read()
    m = re.search(r"^## A tour with curl\n(.*?)^```sh\n(.*?)^```", text, re.S | re.M)
    if not m:
        raise SystemExit(f"validate_tour: no '## A tour with curl' section with a ```sh block in {readme}")
    block = m.group(2).replace("\\\n", " ")
    commands = []
    for line in block.splitlines():
        words = shlex.split(line, comments=True)
        if not words:
            continue
        if words[0] != "curl":
            raise SystemExit(f"validate_tour: the tour has a line that is not curl: {line!r}")
        if "|" in words:
            words = words[: words.index("|")]
        commands.append(words)
    return commands


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_port(port, proc, what, limit=60):
    deadline = time.time() + limit
    while time.time() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"{what} exited with {proc.returncode}")
        try:
            with socket.create_connection(("127.0.0.1", port), timeout=1):
                return
        except OSError:
            time.sleep(0.2)
    raise RuntimeError(f"{what} did not listen on port {port} within {limit} s")


def run_curl(words, out_dir, n):
    """Runs curl with the tour's words plus output capture; returns (status, headers, body)."""
    head, body = os.path.join(out_dir, f"{n}.head"), os.path.join(out_dir, f"{n}.body")
    cmd = words + ["-D", head, "-o", body, "-w", "%{http_code}", "--max-time", "120"]
    r = subprocess.run(cmd, capture_output=True, text=True, cwd=out_dir)
    if r.returncode != 0:
        raise RuntimeError(f"curl failed ({r.returncode}): {r.stderr.strip()}")
    headers = {}
    for line in open(head, encoding="latin-1").read().splitlines()[1:]:
        if ":" in line:
            k, v = line.split(":", 1)
            headers[k.strip().lower()] = v.strip()
    return int(r.stdout), headers, open(body, "rb").read()


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--binary", required=True)
    ap.add_argument("--readme", default=os.path.join(ROOT, "README.md"))
    ap.add_argument("--spec", default=os.path.join(ROOT, "docs", "openapi.yaml"))
    ap.add_argument("--prism", default=os.path.join(HERE, "node_modules", ".bin", "prism"))
    args = ap.parse_args()

    if not shutil.which("node"):
        skip("node not found")
    if not os.path.exists(args.prism):
        skip(f"{args.prism} not found (packaging/install-deps.sh runs npm ci in tests/api)")
    if not shutil.which("curl"):
        skip("curl not found")
    commands = tour_commands(args.readme)

    work = tempfile.mkdtemp(prefix="drainwise-tour-")
    procs = []
    failures = []
    try:
        port_file = os.path.join(work, "port")
        daemon_log = open(os.path.join(work, "daemon.log"), "w")
        env = dict(os.environ)
        env["ASAN_OPTIONS"] = env.get("ASAN_OPTIONS", "") + ":detect_leaks=0"
        daemon = subprocess.Popen([args.binary, "serve", "--demo", "--listen", "127.0.0.1:0", "--db",
                                   os.path.join(work, "d.db"), "--port-file", port_file],
                                  stdout=daemon_log, stderr=subprocess.STDOUT, env=env)
        procs.append(daemon)
        deadline = time.time() + 60
        while not (os.path.exists(port_file) and open(port_file).read().strip()):
            if daemon.poll() is not None or time.time() > deadline:
                raise RuntimeError(f"the daemon did not start; log: {os.path.join(work, 'daemon.log')}")
            time.sleep(0.1)
        daemon_port = int(open(port_file).read().strip())

        prism_port = free_port()
        prism_log_path = os.path.join(work, "prism.log")
        prism_log = open(prism_log_path, "w")
        # --errors=false: Prism forwards every request and reports what it finds
        # (sl-violations header, log) instead of answering for the daemon.
        prism = subprocess.Popen([args.prism, "proxy", args.spec, f"http://127.0.0.1:{daemon_port}",
                                  "--host", "127.0.0.1", "--port", str(prism_port), "--errors=false"],
                                 stdout=prism_log, stderr=subprocess.STDOUT, start_new_session=True)
        procs.append(prism)
        wait_port(prism_port, prism, f"prism (log {prism_log_path})")

        # The placeholders: a bad topology file and the id of the drain the tour records.
        _, _, topo = run_curl(["curl", "-s", f"http://127.0.0.1:{daemon_port}/v1/topology"], work, "topology")
        doc = json.loads(topo)
        doc["links"].append({"a": doc["links"][0]["a"], "b": "spine-9", "gbps": 400})
        with open(os.path.join(work, "my-topology.json"), "w") as f:
            json.dump(doc, f)
        drain_id = None

        for n, words in enumerate(commands):
            words = [w.replace(TOUR_ADDRESS, f"127.0.0.1:{prism_port}") for w in words]
            if any("<id>" in w for w in words):
                if drain_id is None:
                    failures.append(f"{' '.join(words)}: no drain id from an earlier POST /v1/drains")
                    continue
                words = [w.replace("<id>", str(drain_id)) for w in words]
            has_body = any(w in ("-d", "--data") or w.startswith("--data") for w in words)
            has_type = any(w.lower().startswith("content-type") for w in words)
            if has_body and not has_type:
                words = words + ["-H", "Content-Type: application/json"]
            shown = " ".join(shlex.quote(w) for w in words)
            bad_document = any(w == "@my-topology.json" for w in words)
            status, headers, body = run_curl(words, work, n)
            violations = json.loads(headers["sl-violations"]) if "sl-violations" in headers else []
            line = f"{status} {shown}"
            if violations:
                failures.append(f"{line}: {json.dumps(violations)}")
            elif status >= 500 or (status >= 400 and not bad_document) or (bad_document and status < 400):
                failures.append(f"{line}: unexpected status; body: {body[:300]!r}")
            print(f"{'FAIL' if failures and failures[-1].startswith(line) else 'ok  '} {line}")
            if "/v1/drains" in shown and "-XPOST" in words and status < 300:
                drain_id = json.loads(body).get("id")

        prism.send_signal(signal.SIGINT)
        try:
            prism.wait(timeout=10)
        except subprocess.TimeoutExpired:
            pass
        prism_log.close()
        logged = [l for l in open(prism_log_path, encoding="utf-8", errors="replace")
                  if re.search(r"violation", l, re.I)]
        if logged:
            failures.append("prism logged violations:\n  " + "  ".join(logged))
    finally:
        for p in reversed(procs):
            if p.poll() is None:
                try:
                    if p is procs[-1] and len(procs) > 1:
                        os.killpg(p.pid, signal.SIGTERM)
                    else:
                        p.terminate()
                    p.wait(timeout=10)
                except (subprocess.TimeoutExpired, ProcessLookupError):
                    p.kill()

    if failures:
        print(f"validate_tour: {len(failures)} problem(s) in {len(commands)} tour requests "
              f"(logs in {work}):", file=sys.stderr)
        for f in failures:
            print(f"  {f}", file=sys.stderr)
        return 1
    shutil.rmtree(work, ignore_errors=True)
    print(f"validate_tour: {len(commands)} tour requests through prism proxy: no violation")
    return 0


if __name__ == "__main__":
    sys.exit(main())
