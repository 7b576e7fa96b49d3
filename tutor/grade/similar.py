"""Near-identical submissions: evidence for a teacher to look at, never a verdict. Pure: the
standard library only (tokenize, ast, zlib); student code is parsed, never run.

Each file becomes a sequence of normalised tokens: comments, docstrings, blank lines and spacing
are dropped; a name the file binds (a variable, a parameter, a function) becomes its order of
first appearance in its top-level definition, so renaming changes nothing; library names,
attributes, operators and numbers are kept; strings become one token. Each top-level
definition is cut into k-grams on its own, so reordering the functions changes nothing either.
A k-gram of the lesson's starter (the code handed out) is not the student's and is dropped, and
so is one more than half of the class has (the obvious line everyone writes). Two files'
similarity is the Jaccard index of their k-gram sets; pairs at THRESHOLD or more are grouped.
Moss and Dolos (its README credits both) work this way; this is a small offline version.
"""

from __future__ import annotations

import ast
import hashlib
import io
import keyword
import os
import tokenize
import zlib
from dataclasses import dataclass, field
from pathlib import Path

K = 10  # tokens per k-gram: a statement or two
# Pairs at or above this are grouped. Measured on tests/grade/similar_kit.py's classes (five
# classes of 200 independent correct solutions in varied styles: highest pair 0.687; 100
# planted near-copies, renamed, reordered, comments and spacing changed, half with a line
# rewritten and one added: lowest 0.878): between the two, nearer the independent side.
THRESHOLD = 0.75
COMMON = 0.5  # a k-gram in more than this share of the class is everyone's, not a copy's
MIN_GRAMS = 12  # fewer k-grams of the student's own: too little code to compare
MAX_BYTES = 1 << 20


@dataclass
class Print:
    student: str
    source: str
    grams: dict[int, list[int]]  # k-gram hash -> the source lines it covers


@dataclass
class Pair:
    a: str
    b: str
    similarity: float
    lines_a: list[int]  # lines of a that are in a shared k-gram
    lines_b: list[int]


@dataclass
class Group:
    students: list[str]
    pairs: list[Pair]


@dataclass
class Similarity:
    groups: list[Group] = field(default_factory=list)
    compared: int = 0
    skipped: list[str] = field(default_factory=list)  # unreadable, changed since graded, too short
    sources: dict[str, str] = field(default_factory=dict)  # the grouped students' files


def _bound_and_docstrings(tree: ast.AST) -> tuple[set[str], set[int]]:
    """Names the code binds (assigned, parameters, defined, loop and with targets), and the
    lines of its docstrings."""
    names: set[str] = set()
    lines: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Name):
            if not isinstance(node.ctx, ast.Load):
                names.add(node.id)
        elif isinstance(node, ast.arg):
            names.add(node.arg)
        elif isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef, ast.Module)):
            if not isinstance(node, ast.Module):
                names.add(node.name)
            first = node.body[0] if node.body else None
            value = first.value if isinstance(first, ast.Expr) else None
            if (
                first is not None
                and isinstance(value, ast.Constant)
                and isinstance(value.value, str)
            ):
                lines |= set(range(first.lineno, (first.end_lineno or first.lineno) + 1))
    return names, lines


def _token_id(text: str, ids: dict[str, int] = {}) -> int:  # noqa: B006 (a cache on purpose)
    """A token as a number, the same in every process (crc32; str's hash is salted)."""
    found = ids.get(text)
    if found is None:
        found = ids[text] = zlib.crc32(text.encode())
    return found


def fingerprint(source: str) -> dict[int, list[int]]:
    """The file's k-grams (a stable hash each) and the lines each covers; {} if it does not
    parse (a file that does not run is not compared)."""
    try:
        tree = ast.parse(source)
        tokens = list(tokenize.generate_tokens(io.StringIO(source).readline))
    except (SyntaxError, ValueError, tokenize.TokenError, MemoryError, RecursionError):
        return {}
    bound, skip = _bound_and_docstrings(tree)
    starts = sorted(node.lineno for node in tree.body)
    grams: dict[int, list[int]] = {}
    unit: list[tuple[int, int]] = []  # (token id, line)
    names: dict[str, str] = {}
    next_start = 1
    after_dot = False

    def flush() -> None:
        ids = [tok for tok, _ in unit]
        for i in range(len(unit) - K + 1):
            # A tuple of ints hashes the same in every process (no salt), unlike a str.
            h = hash(tuple(ids[i : i + K]))
            grams.setdefault(h, []).extend(range(unit[i][1], unit[i + K - 1][1] + 1))
        unit.clear()
        names.clear()

    for tok in tokens:
        line = tok.start[0]
        if next_start < len(starts) and line >= starts[next_start] and tok.type != tokenize.DEDENT:
            while next_start < len(starts) and line >= starts[next_start]:
                next_start += 1
            flush()  # a new top-level statement: its own k-grams, its own names
        if line in skip or tok.type in (tokenize.COMMENT, tokenize.NL, tokenize.ENCODING):
            continue
        if tok.type == tokenize.NAME:
            text = tok.string
            if not after_dot and text in bound and not keyword.iskeyword(text):
                text = names.setdefault(text, f"v{len(names)}")
        elif tok.type == tokenize.STRING:
            text = "S"
        elif tok.type == tokenize.NEWLINE:
            text = ";"
        elif tok.type == tokenize.INDENT:
            text = "{"
        elif tok.type == tokenize.DEDENT:
            text = "}"
        elif tok.type == tokenize.ENDMARKER:
            continue
        else:
            text = tok.string
        after_dot = tok.string == "." and tok.type == tokenize.OP
        unit.append((_token_id(text), line))
    flush()
    return grams


def _read(record: dict) -> str | None:
    """The graded file's text, not through a link, if it is still what was graded."""
    path = record.get("file")
    if not path or not record.get("sha256"):
        return None
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
        with os.fdopen(fd, "rb") as f:
            raw = f.read(MAX_BYTES + 1)
    except OSError:
        return None
    if len(raw) > MAX_BYTES or hashlib.sha256(raw).hexdigest() != record["sha256"]:
        return None
    return code_text(path, raw)


def code_text(path: str | Path, raw: bytes) -> str | None:
    """The code a file holds: a notebook's, as the checks take it (its outputs are not code)."""
    from tutor.workspace.notebook import NotebookError, is_notebook, read_notebook

    try:
        if is_notebook(path):
            return read_notebook(raw, Path(path).absolute().parent).text
        return raw.decode("utf-8")
    except (UnicodeDecodeError, NotebookError):
        return None


def similarity(lesson, records: list[dict], ahead=None, threshold: float = THRESHOLD) -> Similarity:
    """ahead: an ahead.Ahead whose fingerprints were made while the class was graded."""
    try:
        starter = set(fingerprint(lesson.starter_path.read_text(encoding="utf-8")))
    except OSError:
        starter = set()
    prints, skipped = [], []
    for r in sorted(records, key=lambda r: r["student"]):
        if r["status"] in ("no file", "not graded"):
            continue
        made = ahead.get(r["file"], r["sha256"]) if ahead and r.get("file") else None
        text = made[0] if made else _read(r)
        if text is None:
            skipped.append(r["student"])
            continue
        grams = made[1] if made else fingerprint(text)
        prints.append(
            Print(r["student"], text, {h: v for h, v in grams.items() if h not in starter})
        )
    return compare(prints, threshold, skipped)


def compare(prints: list[Print], threshold: float = THRESHOLD, skipped=()) -> Similarity:
    counts: dict[int, int] = {}
    for p in prints:
        for h in p.grams:
            counts[h] = counts.get(h, 0) + 1
    if len(prints) >= 10:  # in a small class "everyone" is too few to tell
        common = {h for h, n in counts.items() if n > COMMON * len(prints)}
        for p in prints:
            p.grams = {h: ls for h, ls in p.grams.items() if h not in common}
    out = Similarity(skipped=list(skipped))
    kept = [p for p in prints if len(p.grams) >= MIN_GRAMS]
    out.skipped += [p.student for p in prints if len(p.grams) < MIN_GRAMS]
    out.compared = len(kept)
    # Each file as a bit set over the class's k-grams: a pair's shared count is one AND and a
    # popcount, in C (200 files: 19,900 pairs in a few hundredths of a second).
    column = {h: i for i, h in enumerate({h for p in kept for h in p.grams})}
    masks = []
    for p in kept:
        bits = bytearray((len(column) + 8) // 8)
        for h in p.grams:
            c = column[h]
            bits[c >> 3] |= 1 << (c & 7)
        masks.append(int.from_bytes(bits, "little"))
    pairs = []
    for i, a in enumerate(kept):
        for j in range(i + 1, len(kept)):
            b = kept[j]
            n = (masks[i] & masks[j]).bit_count()
            if not n:
                continue
            jaccard = n / (len(a.grams) + len(b.grams) - n)
            if jaccard >= threshold:
                both = a.grams.keys() & b.grams.keys()
                pairs.append(
                    Pair(
                        a.student,
                        b.student,
                        round(jaccard, 3),
                        sorted({line for h in both for line in a.grams[h]}),
                        sorted({line for h in both for line in b.grams[h]}),
                    )
                )
    out.groups = _groups(pairs)
    by_student = {p.student: p.source for p in kept}
    out.sources = {s: by_student[s] for g in out.groups for s in g.students}
    return out


def _groups(pairs: list[Pair]) -> list[Group]:
    parent: dict[str, str] = {}

    def root(s: str) -> str:
        while parent.setdefault(s, s) != s:
            s = parent[s]
        return s

    for p in pairs:
        parent[root(p.a)] = root(p.b)
    groups: dict[str, Group] = {}
    for p in sorted(pairs, key=lambda p: (-p.similarity, p.a, p.b)):
        g = groups.setdefault(root(p.a), Group([], []))
        g.pairs.append(p)
        for s in (p.a, p.b):
            if s not in g.students:
                g.students.append(s)
    for g in groups.values():
        g.students.sort()
    return sorted(groups.values(), key=lambda g: (-g.pairs[0].similarity, g.students))


def to_json(sim: Similarity, threshold: float = THRESHOLD) -> dict:
    return {
        "schema_version": 1,
        "note": "Evidence to look at, not a verdict: similar code can be written independently.",
        "method": f"Jaccard index of normalised {K}-token k-grams; starter and class-wide code left out",
        "threshold": threshold,
        "compared": sim.compared,
        "skipped": sim.skipped,
        "groups": [
            {
                "students": g.students,
                "max": g.pairs[0].similarity,
                "min": min(p.similarity for p in g.pairs),
                "pairs": [
                    {
                        "a": p.a,
                        "b": p.b,
                        "similarity": p.similarity,
                        "lines_a": p.lines_a,
                        "lines_b": p.lines_b,
                    }
                    for p in g.pairs
                ],
            }
            for g in sim.groups
        ],
    }
