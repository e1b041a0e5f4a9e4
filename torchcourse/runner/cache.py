"""A disposable cache of real snippet outputs, keyed on code + environment, never on expected text."""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import platform
import sys
import threading
from functools import lru_cache
from pathlib import Path

PROTOCOL_VERSION = 1  # bump whenever the runner's output format or normalization changes
_tmp_names = itertools.count()  # with the pid and thread: a temporary name nobody else uses


@lru_cache(maxsize=8)
def torch_version(python: str) -> str:
    """Installed torch version for ``python`` without importing torch."""
    if python == sys.executable:
        try:
            from importlib.metadata import PackageNotFoundError, version

            try:
                return version("torch")
            except PackageNotFoundError:
                return "none"
        except Exception:  # pragma: no cover
            return "unknown"
    import subprocess

    code = "import importlib.metadata as m\ntry: print(m.version('torch'))\nexcept Exception: print('none')"
    try:
        out = subprocess.run([python, "-c", code], capture_output=True, text=True, timeout=30)
        return out.stdout.strip() or "none"
    except (OSError, subprocess.SubprocessError):
        return "none"


_VERSIONS_CODE = r"""
import importlib.metadata as m, importlib.util as u, json, sys
out = {}
dists = None
for name in json.loads(sys.argv[1]):
    top = name.split(".")[0]
    try:
        if u.find_spec(top) is None:
            out[name] = "none"
            continue
    except Exception:
        out[name] = "none"
        continue
    try:
        out[name] = m.version(top)
        continue
    except Exception:
        pass
    if dists is None:
        try:
            dists = m.packages_distributions()
        except Exception:
            dists = {}
    found = None
    for dist in dists.get(top, ()):
        try:
            found = m.version(dist)
            break
        except Exception:
            pass
    if found is None:
        try:
            found = str(getattr(__import__(top), "__version__", "unknown"))
        except BaseException:
            found = "unknown"
    out[name] = found
print(json.dumps(out))
"""


@lru_cache(maxsize=16)
def module_versions(python: str, modules: tuple[str, ...]) -> dict[str, str]:
    """Installed version of each module for the interpreter ``python`` ("none" when it cannot be
    found, "unknown" when it has no version): the distribution's metadata, else the module's
    ``__version__``. Asked of ``python`` itself in one subprocess (in its snippet environment),
    so that another interpreter (``verify --python``) answers for its own site-packages."""
    if not modules:
        return {}
    if modules == ("torch",):
        return {"torch": torch_version(python)}
    import subprocess

    from torchcourse.runner.execute import snippet_env

    try:
        out = subprocess.run([python, "-c", _VERSIONS_CODE, json.dumps(list(modules))], capture_output=True, text=True, timeout=60, env=snippet_env())
        data = json.loads(out.stdout.strip().splitlines()[-1])
        return {name: str(data.get(name, "unknown")) for name in modules}
    except (OSError, subprocess.SubprocessError, ValueError, IndexError):
        return {name: "unknown" for name in modules}


def gpu_possible(python: str) -> bool:
    """A cheap guess (no torch import): a CUDA build of torch and an NVIDIA device node."""
    tv = torch_version(python)
    if tv in ("none", "unknown") or tv.endswith("+cpu"):
        return False
    return os.path.exists("/dev/nvidia0") or os.path.exists("/proc/driver/nvidia/version")


def fingerprint(python: str, gpu: bool, preload: tuple[str, ...] = ()) -> dict:
    """What a cached output depends on besides its code: the interpreter, torch, the version of
    every module the course preloads (author walk H3: a NumPy course on another NumPy), platform,
    GPU and the runner's protocol."""
    env = {
        "python": sys.version if python == sys.executable else python,
        "torch": torch_version(python),
        "platform": platform.platform(),
        "machine": platform.machine(),
        "gpu": bool(gpu),
        "protocol": PROTOCOL_VERSION,
    }
    others = tuple(m for m in preload if m != "torch")
    if others:
        env["preload_versions"] = module_versions(python, others)
    return env


def _opt_int(v) -> bool:
    return v is None or (isinstance(v, int) and not isinstance(v, bool) and -(1 << 31) <= v < (1 << 31))


def valid_record(data) -> bool:
    """A cache record as :meth:`RunCache.put` writes it; anything else (hand-edited, from another
    version, damaged) is a cache miss, never an error."""
    import math

    if not isinstance(data, dict) or not isinstance(data.get("actual"), str):
        return False
    seconds = data.get("seconds", 0.0)
    if isinstance(seconds, bool) or not isinstance(seconds, (int, float)) or not math.isfinite(seconds) or seconds < 0:
        return False
    if not _opt_int(data.get("returncode")) or not _opt_int(data.get("signal")):
        return False
    return isinstance(data.get("truncated", False), bool)


class RunCache:
    def __init__(self, root: Path):
        self.root = Path(root)

    def key(self, code: str, env: dict) -> str:
        blob = json.dumps({"code": code, "env": env}, sort_keys=True, ensure_ascii=False)
        return hashlib.sha256(blob.encode("utf-8")).hexdigest()

    def _path(self, key: str) -> Path:
        return self.root / key[:2] / f"{key}.json"

    def get(self, key: str) -> dict | None:
        try:
            data = json.loads(self._path(key).read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return None
        return data if valid_record(data) else None

    def put(self, key: str, record: dict) -> None:
        """Write the record atomically (a temporary file renamed over the key's file) with plain
        os calls: ~0.3 ms instead of ~0.6 ms for pathlib, mkstemp and a text file object, on the
        run's way back to the learner."""
        path = self._path(key)
        tmp = os.path.join(path.parent, ".tmp-%d-%d-%d" % (os.getpid(), threading.get_ident(), next(_tmp_names)))
        try:
            data = memoryview(json.dumps(record, ensure_ascii=False).encode("utf-8"))
            flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC
            try:
                fd = os.open(tmp, flags, 0o600)
            except FileNotFoundError:
                os.makedirs(path.parent, exist_ok=True)
                fd = os.open(tmp, flags, 0o600)
            try:
                while data:
                    data = data[os.write(fd, data):]
            finally:
                os.close(fd)
            os.replace(tmp, path)
        except (OSError, ValueError):
            try:
                os.unlink(tmp)
            except OSError:
                pass
            # a cache that cannot be written is only slower
