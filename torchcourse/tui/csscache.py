"""Parsed Textual CSS kept between runs.

Textual parses every stylesheet (its widgets' default CSS, app.tcss, reader.tcss) on each start:
~12 ms of the home screen's first frame, for text that changes only with an upgrade. The parsed
rule sets are pickled under the cache directory, keyed by the CSS text, where it was read from,
its flags, the theme's variables and Textual's version; anything unreadable or different is
simply parsed again. Loading the file costs ~1 ms.
"""

from __future__ import annotations

import os
import pickle
import threading
from pathlib import Path

_lock = threading.Lock()
_state: dict = {"path": None, "entries": {}, "dirty": False}


def _file(cache_dir: Path) -> Path:
    """One file per installed Textual: named after its CSS parser's files as installed (size and
    mtime; ``textual.__version__`` would import importlib.metadata, ~40 ms)."""
    import zlib

    import textual.css

    here = Path(textual.css.__file__).parent
    stamp = []
    for name in ("parse.py", "tokenize.py", "stylesheet.py", "styles.py", "_styles_builder.py", "model.py"):
        try:
            st = (here / name).stat()
            stamp.append(f"{name}:{st.st_size}:{st.st_mtime_ns}")
        except OSError:
            stamp.append(f"{name}:-")
    key = zlib.crc32("|".join([str(here), *stamp]).encode("utf-8"))
    return Path(cache_dir) / "css" / f"textual-{key:08x}.pickle"


_last_variables: tuple = (None, None, ())  # the dict, a copy of it, its key (one tuple: thread-safe)


def _variables_key(variables: dict) -> tuple:
    """The theme's variables as part of a key: sorted once per theme, not once per stylesheet
    (a start parses ~60 of them with the same variables)."""
    global _last_variables
    last = _last_variables
    if variables is not last[0] or variables != last[1]:
        last = _last_variables = (variables, dict(variables), tuple(sorted(variables.items())))
    return last[2]


def install(cache_dir: Path) -> bool:
    """Serve :meth:`Stylesheet._parse_rules` from the cache in ``cache_dir`` (once per process)."""
    try:
        from textual.css.stylesheet import Stylesheet
    except ImportError:  # pragma: no cover
        return False
    original = getattr(Stylesheet, "_parse_rules", None)
    if original is None:
        return False
    path = _file(cache_dir)
    with _lock:
        _state["path"] = path
        try:
            with open(path, "rb") as fh:
                entries = pickle.load(fh)
            _state["entries"] = entries if isinstance(entries, dict) else {}
        except Exception:  # none yet, truncated, another version: parse as usual
            _state["entries"] = {}
        _state["dirty"] = False
    if getattr(original, "cached_between_runs", False):
        return True

    def parse_rules(self, css, read_from, is_default_rules=False, tie_breaker=0, scope=""):
        key = (css, read_from, is_default_rules, tie_breaker, scope, _variables_key(self._variables))
        rules = _state["entries"].get(key)
        if rules is None:
            rules = original(self, css, read_from, is_default_rules, tie_breaker, scope)
            if not any(rule.errors for rule in rules):  # a broken stylesheet is never remembered
                with _lock:
                    _state["entries"][key] = rules
                    _state["dirty"] = True
        return rules

    parse_rules.cached_between_runs = True  # type: ignore[attr-defined]
    parse_rules.original = original  # type: ignore[attr-defined]
    Stylesheet._parse_rules = parse_rules
    return True


def save() -> None:
    """Write what was parsed this run (if anything new); a read-only cache only costs speed."""
    with _lock:
        path, dirty, entries = _state["path"], _state["dirty"], dict(_state["entries"])
        _state["dirty"] = False
    if path is None or not dirty:
        return
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        with open(tmp, "wb") as fh:
            pickle.dump(entries, fh, protocol=pickle.HIGHEST_PROTOCOL)
        os.replace(tmp, path)
    except Exception:
        try:
            tmp.unlink()  # type: ignore[possibly-undefined]
        except Exception:
            pass
