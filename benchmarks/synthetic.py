"""A synthetic course 4× the shipped one, generated from the shipped chapters (issue 24).

``make_course(dest, factor=4)`` writes ``dest/content`` and ``dest/checkpoints``: every written
chapter of the shipped course ``factor`` times (copy k > 0 gets the id ``ID-k``, its snippet ids and
anchors suffixed ``-k`` so they stay unique), plus one chapter ``LONG`` that is the longest shipped
chapter ``factor`` times over (its break points, snippets and anchors renumbered), so that growth of
the course and of a single chapter are both visible. Routes and the appendix are kept as shipped.
Used by ``bench_app.py`` and ``bench_runner.py`` (``--synthetic``); standard library only.
"""

from __future__ import annotations

import re
import shutil
import tomllib
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
ID_RE = re.compile(r"\{#([A-Za-z0-9_\-]+)")


def _q(value) -> str:
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, float)):
        return str(value)
    if isinstance(value, list):
        return "[" + ", ".join(_q(v) for v in value) + "]"
    return '"' + str(value).replace("\\", "\\\\").replace('"', '\\"') + '"'


def _table(name: str, fields: dict) -> str:
    return f"[[{name}]]\n" + "".join(f"{k} = {_q(v)}\n" for k, v in fields.items()) + "\n"


LOCAL_LINK_RE = re.compile(r"\]\(#([A-Za-z0-9_\-]+)\)")


def _suffix_ids(text: str, k: int) -> str:
    text = LOCAL_LINK_RE.sub(lambda m: "](#" + m.group(1) + f"-{k})", text)
    return ID_RE.sub(lambda m: "{#" + m.group(1) + f"-{k}", text)


def make_course(dest: Path, factor: int = 4, content: Path | None = None) -> Path:
    """Write the synthetic course under ``dest``; return its content directory."""
    src = content or REPO / "content"
    manifest = tomllib.loads((src / "course.toml").read_text(encoding="utf-8"))
    out = Path(dest) / "content"
    if out.exists():
        shutil.rmtree(out)
    out.mkdir(parents=True)
    ck_src = (src / manifest.get("checkpoints", "../checkpoints")).resolve()
    ck_out = Path(dest) / "checkpoints"
    if ck_src.is_dir():
        shutil.copytree(ck_src, ck_out, dirs_exist_ok=True)
    head = {k: v for k, v in manifest.items() if not isinstance(v, (list, dict))}
    head["id"] = f"{manifest.get('id', 'course')}-x{factor}"
    head["title"] = f"{manifest.get('title', '')}（×{factor} 基准）"
    head["checkpoints"] = "../checkpoints"
    text = "".join(f"{k} = {_q(v)}\n" for k, v in head.items()) + "\n"
    chapters = manifest.get("chapters", [])
    written = [c for c in chapters if (src / c.get("file", "")).is_file() and not c.get("planned")]
    longest = max((c for c in written if c.get("kind") != "appendix"),
                  key=lambda c: len((src / c["file"]).read_text(encoding="utf-8")))
    for k in range(factor):
        for ch in chapters:
            if k and (ch.get("kind") == "appendix" or ch not in written):
                continue
            fields = dict(ch)
            if k:
                fields["id"] = f"{ch['id']}-{k}"
                fields["file"] = f"x{k}-{ch['file']}"
                fields["title"] = f"{ch['title']}（副本 {k}）"
                fields.pop("checkpoint", None)  # the quiz names copy 0's anchors
                (out / fields["file"]).write_text(_suffix_ids((src / ch["file"]).read_text(encoding="utf-8"), k), encoding="utf-8")
            elif ch in written:
                shutil.copy(src / ch["file"], out / ch["file"])
            text += _table("chapters", fields)
    # one chapter that is the longest one `factor` times over
    body = (src / longest["file"]).read_text(encoding="utf-8")
    early = body.replace("## ⚡", "## 回顾")  # the ⚡ recap stays after the final break point
    long_text = early.rstrip("\n") + "\n"
    for k in range(1, factor):
        copy = _suffix_ids(body if k == factor - 1 else early, 100 + k)
        long_text += f"\n<!-- break: 第 {k + 1} 遍 -->\n\n" + copy.rstrip("\n") + "\n"
    (out / "LONG.md").write_text(long_text, encoding="utf-8")
    long = {k: v for k, v in longest.items() if k not in ("checkpoint",)}
    long.update(id="LONG", file="LONG.md", title=f"{longest['title']}（×{factor} 长章）")
    long.pop("target_minutes", None)
    text += _table("chapters", long)
    for route in manifest.get("routes", []):
        text += _table("routes", route)
    (out / "course.toml").write_text(text, encoding="utf-8")
    return out


if __name__ == "__main__":
    import sys

    print(make_course(Path(sys.argv[1]) if len(sys.argv) > 1 else Path("/tmp/torchcourse-x4")))
