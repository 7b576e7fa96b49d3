"""What the experiment and reflection steps show, from the data the worker sent. Pure Rich."""

from __future__ import annotations

from rich.console import Console, ConsoleOptions, Group, RenderableType, RenderResult
from rich.table import Table
from rich.text import Text

from ..i18n import t
from .doc import render_markdown
from .heatmap import heatmap
from .memory import bar, memory_rows, memory_table
from .wrap import Wrapped

BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}
HEADS = (1, 2, 4, 8, 12, 16)
BATCHES = (1, 2, 4, 8)
DTYPES = ("float32", "bfloat16", "float16")
RANGES = ((64, 1024), (128, 2048), (256, 4096), (512, 8192))
DEFAULT_MEMORY = {"heads": 12, "batch": 1, "dtype": "float32", "t_min": 64, "t_max": 1024}


def next_setting(settings: dict, which: str) -> dict:
    """The memory screen's keys: each cycles one setting."""
    s = dict(settings)
    if which == "heads":
        s["heads"] = HEADS[(HEADS.index(s["heads"]) + 1) % len(HEADS)] if s["heads"] in HEADS else 12
    elif which == "batch":
        s["batch"] = BATCHES[(BATCHES.index(s["batch"]) + 1) % len(BATCHES)] if s["batch"] in BATCHES else 1
    elif which == "dtype":
        s["dtype"] = DTYPES[(DTYPES.index(s["dtype"]) + 1) % len(DTYPES)]
    elif which == "range":
        pairs = [r for r in RANGES]
        current = (s["t_min"], s["t_max"])
        s["t_min"], s["t_max"] = pairs[(pairs.index(current) + 1) % len(pairs)] if current in pairs else RANGES[0]
    return s


def seq_lens(t_min: int, t_max: int) -> list[int]:
    out, n = [], t_min
    while n <= t_max:
        out.append(n)
        n *= 2
    return out


def memory_view(settings: dict, measured: dict[int, int | None] | None, lang: str) -> RenderableType:
    s = {**DEFAULT_MEMORY, **settings}
    rows = memory_rows(seq_lens(s["t_min"], s["t_max"]), heads=s["heads"], batch=s["batch"],
                       bytes_per=BYTES[s["dtype"]])
    labels = {k: t(f"ui.memory_{k}", lang) for k in ("T", "scores", "mb", "qkv", "ratio", "measured", "bar")}
    table = memory_table(rows, labels, measured=measured if measured is not None else {}, bar_width=6,
                         with_qkv=True)
    head = Wrapped(t("ui.memory_title", lang), style="bold")
    line = Wrapped(t("ui.memory_settings", lang, heads=s["heads"], batch=s["batch"], dtype=s["dtype"],
                  t_min=s["t_min"], t_max=s["t_max"]))
    keys = Wrapped(t("ui.memory_keys", lang), style="dim")
    last, first = rows[-1], rows[0]
    growth = Wrapped(t("ui.memory_growth", lang, t1=first["T"], t2=last["T"],
                    scores=f"{last['mb'] / first['mb']:.0f}", qkv=f"{last['qkv_mb'] / first['qkv_mb']:.0f}"))
    note = render_markdown(t("ui.memory_measured_note", lang))
    return Group(head, line, keys, Text(""), table, Text(""), growth, note)


def reflect_view(questions, answers: dict[int, str], show_model: bool, models, numbers: dict | None,
                 lang: str) -> RenderableType:
    parts: list[RenderableType] = [Wrapped(t("ui.reflect_keys", lang), style="dim")]
    for i, question in enumerate(questions):
        parts.append(Text(""))
        parts.append(render_markdown(f"**{i + 1}.** {question}"))
        answer = answers.get(i, "").strip()
        if answer:
            parts.append(Wrapped(t("ui.your_answer", lang), style="bold green"))
            parts.append(Text(answer))
            if show_model and i < len(models):
                parts.append(Wrapped(t("ui.model_answer", lang), style="bold cyan"))
                parts.append(render_markdown(models[i]))
        else:
            parts.append(Wrapped(t("ui.no_answer", lang, n=i + 1), style="dim"))
    # Question 4's numbers are its answer: shown once the learner has answered it, or asks.
    if numbers and numbers.get("head_dim") is not None and (show_model or answers.get(3, "").strip()):
        parts.append(Text(""))
        parts.append(render_markdown(t("ui.reflect_numbers", lang, head_dim=numbers["head_dim"],
                                       qkv=f"{numbers['qkv']:,}", total=f"{numbers['total']:,}")))
    return Group(*parts)


class SideBySide:
    """Two renderables next to each other when there is room, else one under the other."""

    def __init__(self, left: RenderableType, right: RenderableType, min_width: int = 84):
        self.left, self.right, self.min_width = left, right, min_width

    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        if options.max_width >= self.min_width:
            grid = Table.grid(padding=(0, 2))
            grid.add_column(ratio=1)
            grid.add_column(ratio=1)
            grid.add_row(self.left, self.right)
            yield grid
        else:
            yield self.left
            yield Text("")
            yield self.right


def _floats(m):
    return [[float("nan") if v is None else v for v in row] for row in m]


def weights_pair(maps: list[dict], lang: str, color_hint: str | None) -> RenderableType:
    """The seed's plot, head 0, with head 1 beside it: the learner's own weights."""
    shown = []
    for entry in maps[:2]:
        title = t(entry["label"]["key"], lang, **entry["label"]["params"])
        matrix = entry.get("learner") or entry["reference"]
        shown.append(heatmap(_floats(matrix), title=title, color_system_hint=color_hint,
                             axis_labels=(t("ui.axis_keys", lang), t("ui.axis_queries", lang)),
                             legend={k: t(f"ui.legend_{k}", lang) for k in ("learner", "reference", "diff", "masked", "leak", "nan")}))
    if len(shown) == 2:
        return SideBySide(*shown)
    return Group(*shown)


def exercises_view(data: dict, variant: str, lang: str, color_hint: str | None) -> RenderableType:
    parts: list[RenderableType] = []
    legend = {k: t(f"ui.legend_{k}", lang) for k in ("learner", "reference", "diff", "masked", "leak", "nan")}
    axes = (t("ui.axis_keys", lang), t("ui.axis_queries", lang))
    # 1. the scale keeps the softmax from saturating as head_dim grows
    parts.append(Wrapped(t("ui.ex1_title", lang), style="bold"))
    table = Table(box=None, header_style="bold", pad_edge=False)
    table.add_column("head_dim", justify="right")
    table.add_column(t("ui.ex1_with", lang), justify="right")
    table.add_column("", no_wrap=True)
    table.add_column(t("ui.ex1_without", lang), justify="right")
    table.add_column("", no_wrap=True)
    top = max([e[k] for e in data.get("entropy", []) for k in ("with", "without") if e[k] is not None] or [1.0])
    for e in data.get("entropy", []):
        fmt = lambda v: "—" if v is None else f"{v:.2f}"  # noqa: E731
        table.add_row(str(e["hd"]), fmt(e["with"]), Text(bar(e["with"] or 0, top, 8), style="green"),
                      fmt(e["without"]), Text(bar(e["without"] or 0, top, 8), style="red"))
    parts += [table, render_markdown(t("ui.ex1_note", lang)), Text("")]
    # 2. diagonal=0: the first query has nothing left to attend to
    parts.append(Wrapped(t("ui.ex2_title", lang), style="bold"))
    if "diagonal" in data:
        parts.append(heatmap(_floats(data["diagonal"]), title=t("ui.ex2_heatmap", lang), axis_labels=axes,
                             color_system_hint=color_hint, legend=legend))
        rows = data.get("diagonal_nan_rows", [])
        parts.append(render_markdown(t("ui.ex2_nan" if rows else "ui.ex2_no_nan", lang,
                                       rows=", ".join(map(str, rows)))))
    else:
        parts.append(Wrapped(t("ui.weights_waiting", lang), style="dim"))
    parts.append(Text(""))
    # 3. one head's Q changed: its pattern moves, the other head's does not
    parts.append(Wrapped(t("ui.ex3_title", lang), style="bold"))
    parts.append(Wrapped(t("ui.ex3_keys", lang, variant=t(f"ui.ex3_{variant}", lang)), style="dim"))
    heads = data.get("heads", {})
    if "before" in heads and variant in heads:
        for h in range(min(2, len(heads["before"]))):
            before = heatmap(_floats(heads["before"][h]), title=t("ui.ex3_before", lang, h=h), axis_labels=axes,
                             color_system_hint=color_hint, legend=legend)
            after = heatmap(_floats(heads[variant][h]), title=t("ui.ex3_after", lang, h=h), axis_labels=axes,
                            color_system_hint=color_hint, legend=legend)
            parts.append(SideBySide(before, after))
            parts.append(Text(""))
        parts.append(render_markdown(t("ui.ex3_note", lang)))
    else:
        parts.append(Wrapped(t("ui.weights_waiting", lang), style="dim"))
    return Group(*parts)
