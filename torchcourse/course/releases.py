"""Releases a course's outputs are recorded on, and the per-release output alternatives.

``course.toml`` declares them::

    [recorded]
    torch = ["2.13.0", "2.14.1", "2.15.0"]   # the first is the reference release

and after a snippet's reference ```output block a chapter may carry alternatives, each for the
releases of one module that a PEP 440 specifier set selects::

    ```output {torch==2.15.0}
    ```output {torch>=2.14.1,<=2.15.0}

Specifier matching is written here (release numbers, the six comparison operators, ``~=`` and
``==X.*``) so that the course model needs no third-party package. A local version label
(``2.15.0+cu132``) is ignored, as PEP 440 says for specifiers without one. No I/O, no torch.
"""

from __future__ import annotations

import re

_OP_RE = r"(?:~=|==|!=|<=|>=|<|>)"
_VERSION_RE = re.compile(r"^v?(?P<release>\d+(?:\.\d+)*)(?P<rest>[^+]*)(?:\+(?P<local>[A-Za-z0-9.]+))?$")
SPEC_RE = re.compile(rf"^\s*{_OP_RE}\s*[0-9][0-9A-Za-z.*+!-]*\s*$")
ALT_RE = re.compile(r"^(?P<module>[A-Za-z_][A-Za-z0-9_]*(?:\.[A-Za-z_][A-Za-z0-9_]*)*)\s*(?P<spec>" + _OP_RE + r".*)$")


class OutputAlternative:
    """One ```output {module SPEC} block: what a snippet prints on the releases SPEC selects."""

    __slots__ = ("module", "spec", "text", "line")

    def __init__(self, module: str, spec: str, text: str, line: int) -> None:
        self.module = module
        self.spec = spec  # e.g. "==2.15.0" or ">=2.14.1,<=2.15.0"
        self.text = text
        self.line = line  # 1-based line of the alternative's opening fence

    @property
    def label(self) -> str:
        return f"{self.module}{self.spec}"

    def __repr__(self) -> str:
        return f"OutputAlternative({self.module!r}, {self.spec!r}, line={self.line})"

    def __eq__(self, other: object):
        if not isinstance(other, OutputAlternative):
            return NotImplemented
        return (self.module, self.spec, self.text, self.line) == (other.module, other.spec, other.text, other.line)

    def __getstate__(self):
        return (self.module, self.spec, self.text, self.line)

    def __setstate__(self, state) -> None:
        self.module, self.spec, self.text, self.line = state


def parse_alternative(attrs: str) -> tuple[str, str] | str:
    """``torch==2.15.0`` → ("torch", "==2.15.0"); a message (str) when it is not a module and a
    specifier set."""
    m = ALT_RE.match(attrs.strip())
    if not m:
        return f"输出替代块要写成 ```output {{模块 版本条件}}，如 ```output {{torch==2.15.0}}，这里是 {{{attrs}}}"
    spec = re.sub(r"\s+", "", m.group("spec"))
    for clause in spec.split(","):
        if not SPEC_RE.match(clause) or release_of(re.sub(rf"^{_OP_RE}", "", clause).rstrip("*").rstrip(".")) is None:
            return f"{{{attrs}}} 里的 {clause!r} 不是版本条件（应该像 ==2.15.0 或 >=2.14,<2.16 这样）"
    return m.group("module"), spec


def release_of(version: str) -> tuple[int, ...] | None:
    """The release numbers of a version (``2.15.0+cu132`` → (2, 15, 0)), None when unreadable."""
    m = _VERSION_RE.match(version.strip())
    if not m:
        return None
    return tuple(int(p) for p in m.group("release").split("."))


def _pad(a: tuple[int, ...], n: int) -> tuple[int, ...]:
    return a + (0,) * (n - len(a))


def _cmp(a: tuple[int, ...], b: tuple[int, ...]) -> int:
    n = max(len(a), len(b))
    a, b = _pad(a, n), _pad(b, n)
    return (a > b) - (a < b)


def _clause_matches(clause: str, version: tuple[int, ...]) -> bool:
    op = re.match(_OP_RE, clause).group(0)
    target = clause[len(op):]
    if target.endswith(".*") and op in ("==", "!="):
        prefix = release_of(target[:-2])
        same = prefix is not None and _pad(version, len(prefix))[: len(prefix)] == prefix
        return same if op == "==" else not same
    want = release_of(target)
    if want is None:
        return False
    c = _cmp(version, want)
    if op == "==":
        return c == 0
    if op == "!=":
        return c != 0
    if op == "<=":
        return c <= 0
    if op == ">=":
        return c >= 0
    if op == "<":
        return c < 0
    if op == ">":
        return c > 0
    # ~=X.Y.Z: >= X.Y.Z and == X.Y.*
    if len(want) < 2:
        return False
    return c >= 0 and _pad(version, len(want))[: len(want) - 1] == want[:-1]


def spec_matches(spec: str, version: str) -> bool:
    """True when ``version`` (``2.15.0+cu132`` too) satisfies every clause of ``spec``."""
    release = release_of(version)
    if release is None:
        return False
    return all(_clause_matches(clause, release) for clause in spec.split(",") if clause)


def same_release(a: str, b: str) -> bool:
    ra, rb = release_of(a), release_of(b)
    return ra is not None and rb is not None and _cmp(ra, rb) == 0


def applicable(alternatives, installed: dict[str, str]):
    """The first alternative whose module's installed version its specifier selects, or None."""
    for alt in alternatives:
        version = installed.get(alt.module)
        if version and spec_matches(alt.spec, version):
            return alt
    return None


def off_reference(recorded: dict[str, tuple[str, ...]], installed: dict[str, str]) -> list[tuple[str, str, str]]:
    """(module, reference release, installed version) for every recorded module whose installed
    version is not its reference release (the first one recorded)."""
    out = []
    for module, releases in recorded.items():
        have = installed.get(module)
        if releases and have and have not in ("none", "unknown") and not same_release(releases[0], have):
            out.append((module, releases[0], have))
    return out


def spec_for(releases: list[str]) -> str:
    """The specifier set naming a run of consecutive recorded releases: ``==X`` or ``>=X,<=Y``."""
    ordered = sorted(releases, key=lambda v: release_of(v) or ())
    if len(ordered) == 1:
        return f"=={ordered[0]}"
    return f">={ordered[0]},<={ordered[-1]}"


def release_note(module: str, reference: str, installed: str) -> str:
    """The learner's words for a mismatch on a release the output was not recorded on."""
    return f"书里这段是在 {module} {reference} 上记录的，你装的是 {installed}；不一致可能来自版本差异，不一定是你的改动"


def regroup(alternatives, module: str, releases: tuple[str, ...], release: str, text: str | None,
            same=lambda a, b: a == b) -> list[tuple[str, str]]:
    """The alternative blocks of ``module`` for a snippet after recording ``text`` on ``release``
    (None: it printed the reference output there). ``releases`` are the recorded ones, the
    reference first; the others keep what their blocks say now. Consecutive releases (in version
    order) with the same output share one block (``>=2.14.1,<=2.15.0``). Returns (spec, text)."""
    others = sorted(releases[1:], key=lambda v: release_of(v) or ())
    texts: dict[str, str | None] = {}
    for r in others:
        found = applicable([a for a in alternatives if a.module == module], {module: r})
        texts[r] = found.text if found is not None else None
    for r in others:
        if same_release(r, release):
            texts[r] = text
    out: list[tuple[str, str]] = []
    run: list[str] = []
    for r in [*others, None]:
        if run and (r is None or texts[r] is None or not same(texts[r], texts[run[0]])):
            out.append((spec_for(run), texts[run[0]]))
            run = []
        if r is not None and texts[r] is not None:
            run.append(r)
    return out


def book_output(snippet, recorded: dict[str, tuple[str, ...]], installed: dict[str, str]) -> tuple[str | None, str]:
    """(the output the reader shows for ``snippet``, its label): the alternative recorded for the
    installed release when there is one, else the reference block — labelled with the release it
    was recorded on when the installed one is another ("" on the reference release)."""
    off = off_reference(recorded, installed) if recorded else []
    if not off or snippet.expected is None:
        return snippet.expected, ""
    alt = applicable(snippet.alternatives, installed)
    if alt is not None:
        return alt.text, f"书里 {alt.label} 的记录"  # the words `run` prints too
    module, reference, have = off[0]
    return snippet.expected, f"在 {module} {reference} 上记录；你装的是 {have}"
