"""Every word the learner reads comes from the catalogs, so `l` can switch it.

The UI modules are scanned with `ast` for string literals that reach the screen
without going through `t()`: the text of Text(...), Static(...), Wrapped(...),
notify(...), print(...), Binding descriptions, table headers and rows, argparse
help texts, the parameters given to `t()` itself, and so on. A literal is allowed
when it has no letters (" ", "·", "…", "—", "÷") or when every word in it is on
the small whitelist below (code tokens and names that are never translated).
"""

from __future__ import annotations

import ast
import re
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCANNED = sorted(
    [
        *(ROOT / "tutor" / "app").glob("*.py"),
        *(ROOT / "tutor" / "render").glob("*.py"),
        ROOT / "tutor" / "cli" / "main.py",
        ROOT / "tutor" / "cli" / "check_text.py",
    ]
)

# Words that may appear on screen untranslated. Each one with its reason.
ALLOWED_WORDS = {
    "attn-tutor": "the app's own name; the glossary keeps it in both languages",
    "attn-lab/": "the workspace folder, a path on disk (`attn-tutor list`)",
}

# Findings already reported to whoever owns the file, with the fix proposed. The scan still
# runs on those files; only these exact literals are tolerated, and only while they are there.
KNOWN_UNFIXED = {}

# A word: letters, digits and the characters of code tokens and paths.
WORD = re.compile(r"[A-Za-z_][A-Za-z0-9_./=+-]*")


@dataclass(frozen=True)
class Sink:
    """Where a call puts text on screen: positional indices (None = all) and keyword names."""

    positions: tuple[int, ...] | None = (0,)
    keywords: tuple[str, ...] = ()


SINKS: dict[str, Sink] = {
    # Rich and the app's own renderables
    "Text": Sink((0,), ("text",)),
    "assemble": Sink(None),  # Text.assemble: strings, or (text, style) pairs
    "append": Sink(
        (0,), ("text",)
    ),  # Text.append; list.append of a bare string is flagged too, on purpose
    "Wrapped": Sink((0,), ("text",)),
    "render_markdown": Sink((0,)),
    "Group": Sink(None),
    "Panel": Sink((0,), ("title", "subtitle")),
    "Rule": Sink((0,), ("title",)),
    "add_column": Sink((0,), ("header", "footer")),
    "add_row": Sink(None),
    # Textual
    "Static": Sink((0,), ("renderable", "content")),
    "Label": Sink((0,), ("renderable", "content")),
    "Button": Sink((0,), ("label",)),
    "Markdown": Sink((0,), ("markdown",)),
    "Option": Sink((0,), ("prompt",)),
    "update": Sink((0,), ("renderable", "content")),  # Static.update
    "notify": Sink((0,), ("message", "title")),
    "Binding": Sink((2,), ("description", "key_display", "tooltip")),
    # The command line
    "print": Sink(None),
    "UsageError": Sink(None),
    "error": Sink((0,), ("message",)),  # ArgumentParser.error
    "ArgumentParser": Sink((), ("prog", "usage", "description", "epilog")),
    "add_argument": Sink((), ("help", "version")),
    "add_parser": Sink((), ("help", "description", "epilog", "usage")),
    "add_subparsers": Sink((), ("title", "description", "help")),
    "add_argument_group": Sink((0, 1), ("title", "description")),
}
# Keywords that are visible text whatever the call (a heatmap's title, a widget's tooltip...).
VISIBLE_KEYWORDS = {
    "title",
    "subtitle",
    "sub_title",
    "border_title",
    "border_subtitle",
    "tooltip",
    "placeholder",
    "description",
    "help",
    "message",
    "label",
    "prompt",
    "version",
}
# Attributes whose value is shown: App.title, the app's notice line, widget borders.
VISIBLE_ATTRIBUTES = {"title", "sub_title", "notice", "tooltip", "border_title", "border_subtitle"}
# Renderers whose English defaults must always be overridden by the caller: name -> (position, keyword).
LOCALISED_ARGS = {
    "heatmap": [(None, "legend"), (None, "axis_labels")],
}
TRANSLATE = "t"  # tutor.text.i18n.t(key, lang, **params): the key is not text, the params are


def _name(func: ast.expr) -> str | None:
    if isinstance(func, ast.Name):
        return func.id
    if isinstance(func, ast.Attribute):
        return func.attr
    return None


def visible_strings(node: ast.AST, pairs: bool = False):
    """The string constants of an expression that end up in the text it evaluates to.

    Descends through f-strings (not their format specs), concatenation, `a or b`,
    `x if c else y` (not the condition), tuples and lists, and method calls on a
    literal (`", ".join(...)`, `"·".center(3)`). It stops at other calls (their
    result is not a literal: `t(...)`, `str(...)`), at subscripts' keys, at dicts,
    and at comparisons. With `pairs` (Text.assemble's arguments), a tuple is a
    (text, style) pair and only its first element is text.
    """
    if isinstance(node, ast.Constant):
        if isinstance(node.value, str):
            yield node
    elif isinstance(node, ast.JoinedStr):
        for part in node.values:
            if isinstance(part, ast.Constant):
                yield part
            elif isinstance(part, ast.FormattedValue):
                yield from visible_strings(part.value)
    elif isinstance(node, ast.BinOp):
        yield from visible_strings(node.left)
        yield from visible_strings(node.right)
    elif isinstance(node, ast.BoolOp):
        for value in node.values:
            yield from visible_strings(value, pairs)
    elif isinstance(node, ast.IfExp):
        yield from visible_strings(node.body, pairs)
        yield from visible_strings(node.orelse, pairs)
    elif pairs and isinstance(node, ast.Tuple):
        if node.elts:
            yield from visible_strings(node.elts[0])
    elif isinstance(node, (ast.Tuple, ast.List)):
        for element in node.elts:
            yield from visible_strings(element)
    elif isinstance(node, ast.Subscript):
        yield from visible_strings(node.value)  # "abc"[:2]; never the key of d["key"]
    elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute):
        yield from visible_strings(node.func.value)  # "x".center(3), ", ".join(...)
    elif isinstance(node, ast.Starred):
        yield from visible_strings(node.value)


def bad_words(text: str) -> list[str]:
    return [
        w
        for w in WORD.findall(text)
        if w not in ALLOWED_WORDS and w.rstrip(".:") not in ALLOWED_WORDS
    ]


@dataclass(frozen=True)
class Finding:
    path: str
    line: int
    where: str
    text: str

    def __str__(self) -> str:
        return f"{self.path}:{self.line}: {self.where}: {self.text!r}"


def scan_source(source: str, path: str = "<string>") -> list[Finding]:
    tree = ast.parse(source, filename=path)
    findings: list[Finding] = []

    def check(expr: ast.AST, where: str, style_pairs: bool = False) -> None:
        for const in visible_strings(expr, pairs=style_pairs):
            if bad_words(const.value):
                findings.append(Finding(path, const.lineno, where, const.value))

    for node in ast.walk(tree):
        if isinstance(node, ast.Call):
            name = _name(node.func)
            if name == TRANSLATE:
                for kw in node.keywords:
                    if kw.arg is not None:
                        check(kw.value, f"t(..., {kw.arg}=)")
                continue
            sink = SINKS.get(name)
            if sink is not None:
                for i, arg in enumerate(node.args):
                    if sink.positions is None or i in sink.positions:
                        check(arg, f"{name}(...) argument {i + 1}", style_pairs=name == "assemble")
            for kw in node.keywords:
                if kw.arg in VISIBLE_KEYWORDS or (sink is not None and kw.arg in sink.keywords):
                    check(kw.value, f"{name}({kw.arg}=)")
        elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            for target in targets:
                if (
                    isinstance(target, ast.Attribute)
                    and target.attr in VISIBLE_ATTRIBUTES
                    and node.value is not None
                ):
                    check(node.value, f".{target.attr} =")
    return findings


def unlocalised_calls(source: str, path: str = "<string>") -> list[str]:
    """Calls to heatmap() that leave an English default in place."""
    out = []
    for node in ast.walk(ast.parse(source, filename=path)):
        if isinstance(node, ast.Call) and _name(node.func) in LOCALISED_ARGS:
            given = {kw.arg for kw in node.keywords}
            for position, keyword in LOCALISED_ARGS[_name(node.func)]:
                if keyword not in given and (position is None or len(node.args) <= position):
                    out.append(f"{path}:{node.lineno}: {_name(node.func)}(...) without {keyword}=")
    return out


def _rel(path: Path) -> str:
    return str(path.relative_to(ROOT))


# ---------------------------------------------------------------------------- the real files


def test_the_scan_finds_the_files():
    names = {_rel(p) for p in SCANNED}
    assert {
        "tutor/app/app.py",
        "tutor/app/widgets.py",
        "tutor/render/verdicts.py",
        "tutor/cli/main.py",
        "tutor/cli/check_text.py",
    } <= names


@pytest.mark.parametrize("path", SCANNED, ids=_rel)
def test_no_user_visible_literal_bypasses_the_catalog(path):
    findings = scan_source(path.read_text(encoding="utf-8"), _rel(path))
    new = [f for f in findings if (f.path, f.text) not in KNOWN_UNFIXED]
    assert not new, "text shown without the catalog (put it in en.toml and zh.toml):\n" + "\n".join(
        map(str, new)
    )
    known = [f for f in findings if (f.path, f.text) in KNOWN_UNFIXED]
    if known:
        pytest.xfail("; ".join(f"{f}: {KNOWN_UNFIXED[f.path, f.text]}" for f in known))


def test_known_findings_are_still_there():
    """Once a reported literal is fixed, its KNOWN_UNFIXED entry must go, so it cannot come back."""
    found = {
        (f.path, f.text)
        for p in SCANNED
        for f in scan_source(p.read_text(encoding="utf-8"), _rel(p))
    }
    stale = set(KNOWN_UNFIXED) - found
    assert not stale, f"fixed, so remove from KNOWN_UNFIXED: {stale}"


@pytest.mark.parametrize("path", SCANNED, ids=_rel)
def test_renderers_get_localised_labels(path):
    """heatmap() has English defaults for tests; the UI must always pass its own."""
    if path.name == "heatmap.py":
        pytest.skip("the renderers' own modules define the defaults")
    bad = unlocalised_calls(path.read_text(encoding="utf-8"), _rel(path))
    assert not bad, "\n".join(bad)


def test_every_allowed_word_is_still_used():
    """A whitelist entry nothing needs any more is a hole: remove it."""
    used = set()
    for path in SCANNED:
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in ast.walk(tree):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                used |= {w.rstrip(".:") for w in WORD.findall(node.value)} | set(
                    WORD.findall(node.value)
                )
    assert set(ALLOWED_WORDS) <= used, set(ALLOWED_WORDS) - used


# ---------------------------------------------------------------------------- the scanner itself

FLAGGED = [
    'Text("Hello")',
    'Text.assemble(("Saved", "bold"), " · ", x)',
    'Text.assemble(("Saved", "bold") if n else "Not saved", x)',
    'Static("Ready")',
    'Wrapped(f"{n} steps passed", style="dim")',
    'self.notify("No more hints", timeout=2)',
    'app.notify(msg, title="Error")',
    'print("done")',
    'print(f"attn-tutor: {exc} failed")',
    'Binding("q", "quit", "Quit")',
    'Binding("q", "quit", description="Quit")',
    'table.add_column("Step", justify="right")',
    'table.add_row("total", str(n))',
    'Option("Next step", id="n")',
    'self.query_one(Static).update("Loading")',
    'text.append("  running", style="yellow")',
    'Text("  " + "running")',
    'Text(label or "none")',
    'Text("yes" if ok else "no")',
    't("cli.unreadable", lang, path=p, reason="is a directory")',
    'heatmap(m, title="weights", legend=l, axis_labels=a)',
    'self.title = "Tutor"',
    'p.add_argument("--x", help="the x")',
    'raise UsageError("bad lesson")',
    'Group(Text(""), "plain words")',
]

ALLOWED = [
    'Text(" · ")',
    'Text("…", style="dim")',
    'Text(t("ui.running", lang), style="yellow")',  # the key and the style are not text
    'Wrapped(t("ui.progress", lang, passed=p, total=n), style="bold red" if gone else "dim")',
    'Text(f"{v:.2f}")',  # a format spec is not text
    'Text(f"{name}  {title}")',
    'Text.assemble((lesson.id, "cyan"), " · ", title)',
    'Text.assemble((lead, "bold") if n == 0 else " " * hang, line)',
    'Text(d["label"])',  # a subscript's key is not text
    'heatmap(m, title=t("ui.ex2_heatmap", lang), legend=l, axis_labels=a)',
    'self.title = "attn-tutor"',
    'print(f"{l.id}  {title}  (attn-lab/{l.file_name})")',
    'Binding("n", "step(1)", id="next", show=False)',  # the action is not text
    'Text(("·" if cw < 3 else " · ").center(cw))',
    'Text(x, style="bold" if mode == "learner" else "")',  # a comparison is not text
    't("ui.hint", lang, n=i, total=len(hints))',
    'Syntax(code, "python", theme="monokai")',  # not a text sink: the code is the learner's own
]


@pytest.mark.parametrize("snippet", FLAGGED)
def test_scanner_flags(snippet):
    assert scan_source(snippet), f"not flagged: {snippet}"


@pytest.mark.parametrize("snippet", ALLOWED)
def test_scanner_allows(snippet):
    assert not scan_source(snippet), f"flagged: {scan_source(snippet)}"


@pytest.mark.parametrize(
    "snippet,expected",
    [
        ("heatmap(m, title=x)", 2),
        ("heatmap(m, legend=l, axis_labels=a)", 0),
    ],
)
def test_unlocalised_renderer_calls(snippet, expected):
    assert len(unlocalised_calls(snippet)) == expected
