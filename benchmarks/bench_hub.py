"""A class on JupyterHub against a class on ``serve --users``, measured in one run.

The hub is real (``tests/hub_support.py``: ``jupyterhub``, npm's ``configurable-http-proxy``, a local
spawner); N learners each get their own Jupyter server, started through the hub's REST API, and
open the course at ``/user/<name>/torchcourse/`` over a real websocket through the hub's proxy and
jupyter-server-proxy (a benchmark service's token, with the ``access:servers`` scope, stands in for
each learner's login). Then each simulated learner does what ``bench_serve.py``'s do — reads,
pages, and every 20–40 s runs the next snippet (``x``) — and the time from ``x`` to the verdict
line is one warm run. The same course and the same learner model then run against
``serve --users`` with N learners, so both lines come from one run of this script.

Memory: PSS (``/proc/<pid>/smaps_rollup``) of every process of each learner's Jupyter server (the
server, ``serve --hub``, the course app and its warm runner — on the hub each learner has their
own runner with torch loaded, where a ``serve --users`` class shares one), summed per learner once
the runs are done; "per extra learner" is the mean of those sums (the hub and its proxy are
printed apart). For ``serve --users`` it is bench_serve's figure: (total(N) − serve and the class
runner alone) / N.

Run: ``python benchmarks/bench_hub.py [--learners 10] [--seconds 150]``. The last lines:
``hub: N learners, X MB per extra learner, p95 Y ms`` and ``serve: N learners, …``.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import secrets
import shutil
import statistics
import sys
import tempfile
import time
import urllib.error
import urllib.request
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO / "benchmarks"))
sys.path.insert(0, str(REPO))

from bench_serve import COLS, ROWS, SimLearner, make_course, one_class, open_all, pct, run_figures, total_mem  # noqa: E402
from hub_support import Hub  # noqa: E402
from serve_support import wait_for  # noqa: E402


def api(hub: Hub, token: str, method: str, path: str) -> tuple[int, str]:
    req = urllib.request.Request(f"{hub.url}/hub/api{path}", method=method,
                                 headers={"Authorization": f"token {token}"}, data=b"" if method == "POST" else None)
    try:
        with urllib.request.urlopen(req, timeout=60) as r:
            return r.status, r.read().decode()
    except urllib.error.HTTPError as e:
        return e.code, e.read().decode()


def server_pid(hub: Hub, name: str) -> int | None:
    """The learner's Jupyter server: the process whose HOME is their home and whose parent is not."""
    home = str(hub.homes / name).encode()
    found = []
    for d in Path("/proc").iterdir():
        if not d.name.isdigit():
            continue
        try:
            env = (d / "environ").read_bytes().split(b"\0")
            cmd = (d / "cmdline").read_bytes()
        except OSError:
            continue
        if b"HOME=" + home in env and b"jupyterhub-singleuser" in cmd:
            found.append(int(d.name))
    return min(found) if found else None


class HubLearner(SimLearner):
    def __init__(self, http, hub: Hub, name: str, token: str, interval: tuple[float, float]) -> None:
        super().__init__(http, None, name, token, interval)
        self.hub = hub

    def ws_url(self) -> str:  # through the hub's proxy and jupyter-server-proxy
        return self.hub.url.replace("http://", "ws://") + f"/user/{self.name}/torchcourse/ws?width={COLS}&height={ROWS}"


async def hub_class(n: int, seconds: float, work: Path, course: Path) -> dict:
    import aiohttp

    token = secrets.token_hex(32)
    names = tuple(f"learner{i:02d}" for i in range(n))
    hub = Hub(work / "hub", users=names, content=course, extra_config=(
        f"c.JupyterHub.services = [{{'name': 'bench', 'api_token': {token!r}}}]",
        "c.JupyterHub.load_roles = [{'name': 'bench', 'services': ['bench'], "
        "'scopes': ['admin:users', 'admin:servers', 'access:servers']}]",
    ))
    result: dict = {"n": n}
    try:
        hub_base = await asyncio.to_thread(total_mem, hub.proc.pid)
        t0 = time.perf_counter()
        for name in names:
            status, body = api(hub, token, "POST", f"/users/{name}")
            assert status in (201, 409), (status, body)
            status, body = api(hub, token, "POST", f"/users/{name}/server")
            assert status in (201, 202), (status, body)
        for name in names:
            wait_for(lambda: json.loads(api(hub, token, "GET", f"/users/{name}")[1]).get("server"),
                     f"{name}'s server is ready", timeout=600)
        result["spawn_s"] = time.perf_counter() - t0
        async with aiohttp.ClientSession() as http:
            learners = [HubLearner(http, hub, name, token, (20.0, 40.0)) for name in names]
            result["open_s"] = await open_all(learners)
            until = asyncio.get_running_loop().time() + seconds
            await asyncio.gather(*(lr.live(until) for lr in learners))
            per = []
            for name in names:
                pid = server_pid(hub, name)
                per.append((await asyncio.to_thread(total_mem, pid)) if pid else (0.0, 0.0, 0))
            result["per"] = per
            result["hub"] = await asyncio.to_thread(total_mem, hub.proc.pid)
            result["hub_base"] = hub_base
            for lr in learners:
                await lr.close()
        result.update(run_figures(learners))
    finally:
        hub.close()
    return result


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--learners", type=int, default=10)
    ap.add_argument("--seconds", type=float, default=150.0, help="run phase (after every learner connected)")
    args = ap.parse_args()
    n = args.learners
    work = Path(tempfile.mkdtemp(prefix="tc-bench-hub-"))
    course = make_course(work)
    print(f"machine: {os.cpu_count()} cores, {os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30:.0f} GB; "
          f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    try:
        h = asyncio.run(hub_class(n, args.seconds, work, course))
        per_pss = [p[1] for p in h["per"]]
        print(f"hub N={n}: servers ready after {h['spawn_s']:.1f} s, all in the chapter after {h['open_s']:.1f} s; "
              f"per learner (Jupyter server + serve --hub + app + warm runner) PSS median {statistics.median(per_pss):.0f} MB, "
              f"min {min(per_pss):.0f}, max {max(per_pss):.0f}; the hub and its proxy {h['hub'][1] - sum(per_pss):.0f} MB PSS", flush=True)
        print(f"      {len(h['times'])} runs ({h['matched']} ✅ 一致), key → result p50 {pct(h['times'], .5) * 1000:.0f} ms, "
              f"p95 {pct(h['times'], .95) * 1000:.0f} ms; load average after {' '.join(f'{x:.2f}' for x in h['load'])}"
              + (f"; {len(h['failures'])} learners stopped: {h['failures'][:3]}" if h["failures"] else ""), flush=True)
        (work / "serve").mkdir()
        s = asyncio.run(one_class(n, args.seconds, work / "serve", course))
        extra = (s["mem"][1] - s["base"][1]) / n
        print(f"serve N={n}: {len(s['times'])} runs ({s['matched']} ✅ 一致), p95 {pct(s['times'], .95) * 1000:.0f} ms", flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    print(f"hub: {n} learners, {statistics.mean(per_pss):.0f} MB per extra learner, p95 {pct(h['times'], .95) * 1000:.0f} ms")
    print(f"serve: {n} learners, {extra:.0f} MB per extra learner, p95 {pct(s['times'], .95) * 1000:.0f} ms")
    return 0 if not h["failures"] and not s["failures"] else 1


if __name__ == "__main__":
    raise SystemExit(main())
