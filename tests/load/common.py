"""Shared helpers of the load and crash tests: start the real daemon on
127.0.0.1 with an ephemeral port, and talk HTTP to it. Every wait is bounded."""
import http.client
import json
import os
import signal
import subprocess
import tempfile
import time


class Reply:
    def __init__(self, status, body, headers):
        self.status = status
        self.body = body
        self.headers = headers

    def json(self):
        return json.loads(self.body)


def call(port, method, path, body=None, headers=None, timeout=120):
    """One request on a fresh connection. Raises OSError on connection errors."""
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
    try:
        data = body if isinstance(body, (bytes, type(None))) else json.dumps(body).encode()
        h = {"Content-Type": "application/json"} if data is not None else {}
        h.update(headers or {})
        conn.request(method, path, body=data, headers=h)
        r = conn.getresponse()
        return Reply(r.status, r.read(), {k.lower(): v for k, v in r.getheaders()})
    finally:
        conn.close()


class Daemon:
    """`drainwise serve` on 127.0.0.1:0 with `db`; stderr goes to dir/serve.log."""

    def __init__(self, binary, db, extra=(), env=None, start_timeout=120):
        self.dir = os.path.dirname(db)
        self.port_file = os.path.join(self.dir, "port")
        if os.path.exists(self.port_file):
            os.unlink(self.port_file)
        self.log_path = os.path.join(self.dir, "serve.log")
        self.log = open(self.log_path, "ab")
        self.proc = subprocess.Popen(
            [binary, "serve", "--listen", "127.0.0.1:0", "--db", db, "--port-file", self.port_file, *extra],
            stdout=self.log, stderr=self.log, env=env)
        self.port = 0
        deadline = time.monotonic() + start_timeout
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"daemon exited {self.proc.returncode} at start-up:\n{self.tail()}")
            try:
                with open(self.port_file) as f:
                    self.port = int(f.read().strip() or 0)
            except (OSError, ValueError):
                pass
            if self.port:
                return
            time.sleep(0.05)
        self.kill()
        raise RuntimeError(f"no port after {start_timeout} s:\n{self.tail()}")

    def tail(self, n=20):
        try:
            with open(self.log_path, "rb") as f:
                return b"\n".join(f.read().splitlines()[-n:]).decode(errors="replace")
        except OSError:
            return ""

    def stop(self, timeout=30):
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.log.close()
        return self.proc.returncode

    def kill(self):
        if self.proc.poll() is None:
            self.proc.kill()
        self.proc.wait()
        self.log.close()


def percentile(values, p):
    if not values:
        return float("nan")
    v = sorted(values)
    k = (len(v) - 1) * p
    lo = int(k)
    hi = min(lo + 1, len(v) - 1)
    return v[lo] + (v[hi] - v[lo]) * (k - lo)


def temp_dir(prefix):
    return tempfile.mkdtemp(prefix=prefix, dir=os.environ.get("TMPDIR", "/tmp"))
