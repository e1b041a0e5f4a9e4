"""A class on one machine: N learners over real websockets against ``torchcourse serve --users``.

Each simulated learner is a websocket that speaks textual-serve's protocol the way the page does
(``["stdin", keys]`` in, the terminal stream out, its text with the ANSI codes stripped): it opens
its home, opens the chapter (``c``), pages (space) and, every 20–40 s (uniformly random), selects the
next snippet (Tab) and runs it (``x``). The time of one run is from the moment ``x`` is sent to the
websocket message that writes the snippet's verdict line (its status, seconds and mode). Paging moves on,
so each run is a snippet that learner has not run yet: no run is answered from the output cache,
every figure is a real warm run.

The course is generated in a temporary directory: one chapter of 60 small torch snippets (a view,
a transpose, a stride: the course's own kind of code) with prose between them. The users file, the
learners' data directories and serve's home are temporary too.

Memory is read from ``/proc/<pid>/smaps_rollup`` of serve and every process under it (the apps,
the class runner and its forks), once every learner's runs are done (the state a class sits in
between runs; the peak during the runs is printed too): RSS summed over processes double-counts pages that forked
processes share (the torch-loaded runner's, Python's own), so PSS (each shared page divided among
the processes that map it) is printed next to it, and "per extra learner" is given for both:
``(total(N) − total(1)) / (N − 1)``. One learner's app process alone (RSS, PSS, USS) is printed too.

Schedule: learners connect 1.5 s apart; then every learner runs a snippet every 20–40 s for
``--seconds`` (default 150: about five runs each, 150 runs for 30 learners). With N = 1 the
interval is compressed to 2–4 s for half as long (one learner contends with nobody; the figure is
the same run without a queue) so that it also gives a p95 (about 25 runs) in a short time. For
N = 1, "per extra learner" is that one learner's cost: the total over serve and the warm class
runner alone (measured before anyone connects); for N > 1 it is the difference to N = 1.

Run: ``python benchmarks/bench_serve.py [--learners 1,10,30] [--seconds 150]`` — best when the
machine is otherwise idle: the load average is printed with the figures. The last lines are one per
N, in the form ``serve: N learners, X MB per extra learner, p95 Y ms`` (X from PSS).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import re
import secrets
import shutil
import statistics
import sys
import tempfile
import time
from codecs import getincrementaldecoder
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO / "tests"))
sys.path.insert(0, str(REPO))

from serve_support import Served, cmdline, descendants  # noqa: E402

SNIPPETS = 60
COLS, ROWS = 110, 30
MARK = "tc-bench"
# the end of a verdict line (status, seconds, mode), or a run that ended without one
VERDICT_MARKS = ("秒，预热进程）", "秒，全新解释器）", "缓存结果", "没能运行", "超时", "已取消")
ANSI = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[()][A-Z0-9]|\x1b[=>NOM78c]")
INCOMPLETE = re.compile(r"\x1b(\[[0-?]*[ -/]*|\][^\x07\x1b]*|\x1b?|[()])?$")


def make_course(dest: Path) -> Path:
    """One chapter of SNIPPETS warm snippets, each printing ``tc-bench <1000+k> …`` (unique)."""
    root = dest / "course"
    root.mkdir(parents=True)
    (root / "course.toml").write_text(
        'title = "课堂压测课"\nchars_per_minute = 170\n'
        '[[chapters]]\nid = "01"\nfile = "01.md"\ntitle = "步长"\npromise = "转置只改说明书"\n'
        '[[routes]]\nid = "A"\nname = "唯一路线"\naudience = "压测"\nchapters = ["01"]\n', encoding="utf-8")
    parts = ["# 01 · 步长\n\n🎯 转置只改说明书。\n"]
    for k in range(SNIPPETS):
        rows = 2 + k % 4
        parts.append(
            f"\n## 第 {k} 段 {{#s{k}}}\n\n" + "这一段讲一个张量的形状和步长：转置以后数据没有搬动，只是说明书换了。" * 3 + "\n\n"
            f"```python {{#v{k}}}\nimport torch\nx = torch.arange({rows * 4}.).reshape({rows}, 4)\ny = x.t()\n"
            f"print(\"{MARK}\", 1000 + {k}, y.is_contiguous(), tuple(y.stride()), float(y.sum()))\n```\n\n"
            f"```output\n{MARK} {1000 + k} False (1, 4) {float(sum(range(rows * 4)))}\n```\n")
    parts.append("\n<!-- break: 读完了 -->\n")
    (root / "01.md").write_text("".join(parts), encoding="utf-8")
    return root


def mem_mb(pid: int) -> tuple[float, float, float]:
    """(RSS, PSS, USS) of one process in MB, from smaps_rollup (0s when it is gone)."""
    try:
        text = Path(f"/proc/{pid}/smaps_rollup").read_text()
    except OSError:
        return 0.0, 0.0, 0.0
    d = {}
    for line in text.splitlines()[1:]:
        key, _, value = line.partition(":")
        d[key.strip()] = int(value.split()[0]) / 1024
    return d.get("Rss", 0.0), d.get("Pss", 0.0), d.get("Private_Clean", 0.0) + d.get("Private_Dirty", 0.0)


def total_mem(root: int) -> tuple[float, float, int]:
    """(Σ RSS, Σ PSS, processes) of ``root`` and everything under it."""
    pids = {root} | descendants(root)
    rss = pss = 0.0
    for pid in pids:
        r, p, _u = mem_mb(pid)
        rss += r
        pss += p
    return rss, pss, len(pids)


class SimLearner:
    def __init__(self, http, served: Served, name: str, token: str, interval: tuple[float, float]) -> None:
        self.http, self.served, self.name, self.token, self.interval = http, served, name, token, interval
        # what the app wrote since the last mark, ANSI stripped: a full screen model for 30 learners
        # cost the benchmark half a core (it ran on the cores it measures); text a frame writes
        # in one style is contiguous in it
        self.stream = ""
        self.pending = ""
        self.decode = getincrementaldecoder("utf-8")("replace").decode
        self.ws = None
        self.times: list[float] = []
        self.matched = 0
        self.failures: list[str] = []
        self.pid: int | None = None

    async def _read(self) -> None:
        """Reads the websocket all the time (so serve's pings are answered while the learner
        waits) and keeps its text; ``changed`` is set after each frame."""
        import aiohttp

        try:
            async for msg in self.ws:
                if msg.type == aiohttp.WSMsgType.BINARY:
                    self.stream += ANSI.sub("", self.pending + self.decode(msg.data))
                    cut = INCOMPLETE.search(self.stream)
                    self.pending = ""
                    if cut and cut.group(0):
                        self.stream, self.pending = self.stream[:cut.start()], self.stream[cut.start():]
                    self.frame_at = time.perf_counter()
                    self.changed.set()
        finally:
            self.closed = True
            self.changed.set()

    async def _receive_until(self, pred, deadline: float) -> float:
        """Until ``pred()`` holds; returns the arrival time of the frame that made it hold."""
        loop = asyncio.get_running_loop()
        end = loop.time() + deadline
        while not pred():
            if self.closed:
                raise ConnectionError(f"{self.name}: the websocket ended")
            left = end - loop.time()
            if left <= 0:
                raise TimeoutError(f"{self.name}: waited {deadline:.0f} s; the app wrote:\n{self.stream[-1500:]}")
            self.changed.clear()
            try:
                await asyncio.wait_for(self.changed.wait(), left)
            except TimeoutError:
                pass
        return self.frame_at

    async def drain(self, seconds: float) -> None:
        await asyncio.sleep(seconds)  # the reader keeps reading meanwhile

    async def press(self, keys: str) -> None:
        await self.ws.send_str(json.dumps(["stdin", keys]))

    def ws_url(self) -> str:
        return self.served.base.replace("http://", "ws://") + f"ws?width={COLS}&height={ROWS}"

    async def open(self) -> None:
        self.ws = await self.http.ws_connect(self.ws_url(), headers={"Authorization": f"token {self.token}"}, max_msg_size=0)
        self.changed = asyncio.Event()
        self.closed = False
        self.frame_at = 0.0
        self.reader = asyncio.ensure_future(self._read())
        await self._receive_until(lambda: "章节地图" in self.stream, 240)
        self.stream = ""
        await self.press("c")
        await self._receive_until(lambda: "第 0 段" in self.stream, 240)

    async def run_one(self) -> None:
        await self.press("\t")  # the next snippet from where the learner reads
        await self.drain(0.5)  # its scroll drawn
        self.stream = ""  # the snippet's verdict is the first written after x (the one run before is pages above)
        t0 = time.perf_counter()
        await self.press("x")
        t1 = await self._receive_until(lambda: any(v in self.stream for v in VERDICT_MARKS), 180)
        self.times.append(t1 - t0)
        self.matched += "一致：实际输出和预期输出相同" in self.stream

    async def live(self, until: float) -> None:
        loop = asyncio.get_running_loop()
        await self.drain(random.uniform(*self.interval))  # reads a while first; and not all in step
        while loop.time() < until:
            try:
                await self.run_one()
            except (TimeoutError, ConnectionError) as exc:
                self.failures.append(str(exc).splitlines()[0])
                return
            wait = random.uniform(*self.interval)
            await self.drain(wait / 3)
            await self.press(" ")  # pages on while reading
            await self.drain(wait / 3)
            await self.press(" ")
            await self.drain(wait / 3)

    async def close(self) -> None:
        if self.ws is not None:
            await self.ws.close()
            await self.reader


async def open_all(learners: list[SimLearner]) -> float:
    """Every learner connects, 1.5 s apart, into the chapter; the seconds until all are in."""
    t_open = time.perf_counter()
    opening = []
    for lr in learners:
        opening.append(asyncio.ensure_future(lr.open()))
        await asyncio.sleep(1.5)
    await asyncio.gather(*opening)
    return time.perf_counter() - t_open


def run_figures(learners: list[SimLearner]) -> dict:
    """The runs' times, matches and failures of all learners, and the load average after them."""
    return {"times": [t for lr in learners for t in lr.times], "matched": sum(lr.matched for lr in learners),
            "failures": [f for lr in learners for f in lr.failures], "load": os.getloadavg()}


def pct(xs: list[float], q: float) -> float:
    xs = sorted(xs)
    if not xs:
        return float("nan")
    i = min(len(xs) - 1, max(0, round(q * (len(xs) - 1))))
    return xs[i]


async def one_class(n: int, seconds: float, work: Path, course: Path) -> dict:
    import aiohttp

    users = {f"learner{i:02d}": secrets.token_urlsafe(24) for i in range(n)}
    home = work / f"n{n}"
    home.mkdir()
    users_path = home / "class.toml"
    users_path.write_text("".join(f'{k} = "{v}"\n' for k, v in users.items()), encoding="utf-8")
    users_path.chmod(0o600)
    served = Served(home / "serve", "--content", str(course), serve_args=("--users", str(users_path)))
    interval = (2.0, 4.0) if n == 1 else (20.0, 40.0)
    result: dict = {"n": n}
    try:
        # the class runner's torch import (started with serve) is over before anything is measured:
        # one run through the client the apps use (its socket from the service's command line)
        from torchcourse.course.model import Snippet
        from torchcourse.runner.classroom import ClassroomClient

        service = next(p for p in descendants(served.proc.pid) if "torchcourse.runner.classroom" in cmdline(p))
        argv = cmdline(service).split()
        sock = argv[argv.index("--socket") + 1]
        t_warm = time.perf_counter()
        await asyncio.to_thread(ClassroomClient(sock, "bench-warmup").run,
                                Snippet(id="warmup", chapter_id="01", code="import torch\nprint(1)\n", expected="1\n", line=1),
                                use_cache=False)
        result["warm_s"] = time.perf_counter() - t_warm
        base = await asyncio.to_thread(total_mem, served.proc.pid)  # serve and the warm class runner, no learner
        async with aiohttp.ClientSession() as http:
            learners = [SimLearner(http, served, name, tok, interval) for name, tok in users.items()]
            result["open_s"] = await open_all(learners)
            loop = asyncio.get_running_loop()
            until = loop.time() + (seconds / 2 if n == 1 else seconds)
            sampler_stop = asyncio.Event()
            samples: list[tuple[float, float, int]] = []

            async def sample() -> None:
                while not sampler_stop.is_set():
                    samples.append(await asyncio.to_thread(total_mem, served.proc.pid))
                    try:
                        await asyncio.wait_for(sampler_stop.wait(), 5)
                    except TimeoutError:
                        pass

            sampler = asyncio.ensure_future(sample())
            await asyncio.gather(*(lr.live(until) for lr in learners))
            sampler_stop.set()
            await sampler
            pids = [p for p in served.session_pids()]
            apps = [mem_mb(p) for p in pids if mem_mb(p)[0]]
            result["app"] = tuple(statistics.median(x[i] for x in apps) for i in range(3)) if apps else (0, 0, 0)
            # every learner in the chapter, their runs done: the steady state a class sits in
            result["mem"] = await asyncio.to_thread(total_mem, served.proc.pid)
            result["peak"] = max(samples + [result["mem"]], key=lambda s: s[1])
            result["base"] = base
            for lr in learners:
                await lr.close()
        result.update(run_figures(learners))
    finally:
        served.close()
    return result


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--learners", default="1,10,30")
    ap.add_argument("--seconds", type=float, default=150.0, help="run phase per N (after every learner connected)")
    args = ap.parse_args()
    ns = [int(x) for x in args.learners.split(",")]
    work = Path(tempfile.mkdtemp(prefix="tc-bench-class-"))
    course = make_course(work)
    print(f"machine: {os.cpu_count()} cores, {os.sysconf('SC_PAGE_SIZE') * os.sysconf('SC_PHYS_PAGES') / 2**30:.0f} GB; "
          f"load average before: {' '.join(f'{x:.2f}' for x in os.getloadavg())}", flush=True)
    results = []
    try:
        for n in ns:
            r = asyncio.run(one_class(n, args.seconds, work, course))
            results.append(r)
            rss, pss, procs = r["mem"]
            times = r["times"]
            app = r["app"]
            print(f"N={n}: {procs} processes, total RSS {rss:.0f} MB, total PSS {pss:.0f} MB after the runs "
                  f"(peak PSS during them {r['peak'][1]:.0f} MB; serve and the warm class runner alone: RSS "
                  f"{r['base'][0]:.0f} MB, PSS {r['base'][1]:.0f} MB); one learner's app: RSS {app[0]:.0f} MB, PSS {app[1]:.0f} MB, USS {app[2]:.0f} MB; "
                  f"all connected and in the chapter after {r['open_s']:.1f} s (the class runner was warm {r['warm_s']:.1f} s after serve started)", flush=True)
            print(f"      {len(times)} runs ({r['matched']} ✅ 一致), key → result p50 {pct(times, .5) * 1000:.0f} ms, p95 {pct(times, .95) * 1000:.0f} ms, "
                  f"max {max(times, default=float('nan')) * 1000:.0f} ms; load average after {' '.join(f'{x:.2f}' for x in r['load'])}"
                  + (f"; {len(r['failures'])} learners stopped: {r['failures'][:3]}" if r["failures"] else ""), flush=True)
    finally:
        shutil.rmtree(work, ignore_errors=True)
    one = next((r for r in results if r["n"] == 1), None)

    def extra(r: dict, i: int) -> float:  # i = 0: RSS, 1: PSS
        if one is not None and r["n"] > 1:
            return (r["mem"][i] - one["mem"][i]) / (r["n"] - 1)
        return (r["mem"][i] - r["base"][i]) / r["n"]  # N = 1, or no N = 1 run: over serve and the warm runner alone

    print("per extra learner: (total(N) − total(1)) / (N − 1), or (total(N) − serve and the warm class runner alone) / N"
          " without an N = 1 run (N = 1 itself: over serve and the runner alone);"
          " X below is PSS (summed RSS double-counts the pages forked processes share)")
    for r in results:
        print(f"      N={r['n']}: {extra(r, 0):.0f} MB RSS, {extra(r, 1):.0f} MB PSS per extra learner")
    for r in results:
        print(f"serve: {r['n']} learners, {extra(r, 1):.0f} MB per extra learner, p95 {pct(r['times'], .95) * 1000:.0f} ms")
    return 0 if all(not r["failures"] for r in results) else 1


if __name__ == "__main__":
    raise SystemExit(main())
