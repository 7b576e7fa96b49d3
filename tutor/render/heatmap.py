"""A causal attention-weight matrix as a terminal heatmap (pure Rich).

Row i is query i, column j is key j. The layout is chosen at render time from
the width the console offers: small T gets wide cells with the value printed
(readable without colour); larger T a dense grid, either half blocks `▀` (two
rows per line, square pixels, when the terminal has 256+ colours) or shade
glyphs ` ░▒▓█` (16 colours, NO_COLOR). A hidden cell (the causal future,
column > row, unless the lesson names other regions: a window, padding) is a
dim dotted pattern, not a colour, so it reads as "masked" at a glance; a
non-zero weight there (a leak) and NaN/inf are drawn loudly. Colours scale
over the allowed cells only (vmin = 0 as in the lab, vmax = their maximum), and
yours and the reference share one scale (the larger maximum), so switching
between them compares like with like. Without full colour a shade glyph beside
each printed value carries it too. No torch, no textual: plain lists of floats.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Mapping, Sequence

from rich.cells import cell_len
from rich.color import Color
from rich.console import Console, ConsoleOptions, RenderResult
from rich.style import Style
from rich.text import Text

LEAK_EPS = 1e-6  # |w| above this in a hidden cell counts as a leak
DIFF_FLOOR = 0.05  # smallest colour range in diff mode, so float noise stays pale
MODES = ("learner", "reference", "diff")
DEFAULT_LEGEND = {
    "learner": "weights (yours)",
    "reference": "weights (reference)",
    "diff": "yours − reference",
    "masked": "masked future",
    "leak": "future weight ≠ 0",
    "nan": "not a number, or infinite",
}

# matplotlib's viridis sampled at 10 evenly spaced points (the R viridis(10) palette).
_VIRIDIS = [
    (68, 1, 84),
    (72, 40, 120),
    (62, 74, 137),
    (49, 104, 142),
    (38, 130, 142),
    (31, 158, 137),
    (53, 183, 121),
    (109, 205, 89),
    (180, 222, 44),
    (253, 231, 37),
]
# Diverging, dark at 0 and lighter with |x| (like Crameri's "berlin"): blue below,
# red above. On a dark terminal a perfect match recedes and differences stand out.
_DIVERGING = [(158, 202, 255), (55, 120, 200), (38, 38, 38), (200, 60, 50), (255, 180, 160)]
SHADES = " ░▒▓█"
RAMP = "▁▂▃▄▅▆▇█"

# Explicit RGB, not ANSI names: terminals and Textual themes remap the 16 ANSI
# colours (their "white" may be grey), which would spoil contrast.
BLACK, WHITE = "#000000", "#ffffff"
MASKED = Style(color="#6c6c6c")
LEAK = Style(bold=True, color=WHITE, bgcolor="#d70000")
NAN = Style(bold=True, color=WHITE, bgcolor="#af00d7")


def _interp(table: Sequence[tuple[int, int, int]], x: float) -> tuple[int, int, int]:
    x = min(max(x, 0.0), 1.0) * (len(table) - 1)
    i = min(int(x), len(table) - 2)
    f = x - i
    a, b = table[i], table[i + 1]
    return tuple(round(a[k] + (b[k] - a[k]) * f) for k in range(3))  # type: ignore[return-value]


def viridis(x: float) -> tuple[int, int, int]:
    """Viridis colour for x in [0, 1] (clamped)."""
    return _interp(_VIRIDIS, x)


def diverging(x: float) -> tuple[int, int, int]:
    """Blue–dark–red colour for x in [-1, 1] (clamped); 0 is a dark grey."""
    return _interp(_DIVERGING, (x + 1) / 2)


def shade_glyph(value: float, vmax: float) -> str:
    """A glyph whose ink grows with |value|/vmax: a cue that survives NO_COLOR.
    Exactly 0 is blank; any non-zero value shows at least ░."""
    if not math.isfinite(value):
        return "?"
    ratio = abs(value) / vmax if vmax > 0 else 0.0
    if ratio <= 1e-12:
        return SHADES[0]
    return SHADES[1 + min(3, int(ratio * 4))]


def _contrast(rgb: tuple[int, int, int]) -> str:
    """Black or white text, whichever reads better on `rgb` (WCAG luminance)."""

    def lin(c: int) -> float:
        s = c / 255
        return s / 12.92 if s <= 0.04045 else ((s + 0.055) / 1.055) ** 2.4

    lum = 0.2126 * lin(rgb[0]) + 0.7152 * lin(rgb[1]) + 0.0722 * lin(rgb[2])
    return BLACK if lum > 0.18 else WHITE


def fmt_value(v: float, signed: bool = False) -> str:
    """At most 4 characters: .37, 1.0, -.05, +.12 (signed), 12, NaN, inf."""
    if math.isnan(v):
        return "NaN"
    if math.isinf(v):
        return "inf" if v > 0 else "-inf"
    a = abs(v)
    if round(a, 2) < 1:
        body = f"{a:.2f}"[1:]
    elif a < 9.95:
        body = f"{a:.1f}"
    elif a < 999.5:
        body = f"{a:.0f}"
    else:
        body = f"{a:.0e}".replace("e+0", "e").replace("e+", "e")
    if round(a, 2) == 0:
        return body
    return ("-" if v < 0 else "+" if signed else "") + body


def _hidden_cells(hidden: list[list[bool]] | None, rows: int, cols: int) -> list[list[bool]]:
    """Which cells no query may see: the lesson's regions where given in the map's shape, else
    the causal future (column > row)."""
    if (
        isinstance(hidden, list)
        and len(hidden) == rows
        and all(isinstance(r, list) and len(r) == cols for r in hidden)
    ):
        return [[bool(x) for x in r] for r in hidden]
    return [[j > i for j in range(cols)] for i in range(rows)]


def _as_matrix(rows: Iterable[Iterable[float | None]]) -> list[list[float]]:
    """Plain floats; None becomes NaN and ragged rows are padded with NaN."""
    out = [[math.nan if x is None else float(x) for x in row] for row in rows]
    cols = max((len(r) for r in out), default=0)
    return [r + [math.nan] * (cols - len(r)) for r in out]


class Heatmap:
    """Renderable; see `heatmap()`."""

    def __init__(
        self,
        values: list[list[float]],
        mode: str,
        title: str,
        axis_labels: tuple[str, str],
        show_values: bool | None,
        color_system_hint: str | None,
        legend: Mapping[str, str],
        scale_with: list[list[float]] | None = None,
        hidden: list[list[bool]] | None = None,
    ) -> None:
        self.values = values
        self.mode = mode
        self.title = title
        self.axis_labels = axis_labels
        self.show_values = show_values
        self.hint = color_system_hint
        self.legend = legend
        self.rows = len(values)
        self.cols = len(values[0]) if values else 0
        self.hidden = _hidden_cells(hidden, self.rows, self.cols)
        allowed = [
            v
            for m in [values, *([scale_with] if scale_with else [])]
            for i, r in enumerate(m)
            for j, v in enumerate(r)
            if not self.hidden[i][j] and math.isfinite(v)
        ]  # the hidden cells are not drawn with the map
        if mode == "diff":
            r = max((abs(v) for v in allowed), default=0.0)
            self.vmin, self.vmax = -max(r, DIFF_FLOOR), max(r, DIFF_FLOOR)
        else:
            self.vmin = min(0.0, min(allowed, default=0.0))  # the seed: vmin=0
            self.vmax = max(allowed, default=1.0)
            if self.vmax <= self.vmin:
                self.vmax = self.vmin + 1.0

    # -- colours -------------------------------------------------------------
    def _rgb(self, v: float) -> tuple[int, int, int]:
        if self.mode == "diff":
            return diverging(v / self.vmax)
        return viridis((v - self.vmin) / (self.vmax - self.vmin))

    def _colour_mode(self, console: Console) -> str:
        """ "none", "standard" or "full": what the terminal can show."""
        system = self.hint if self.hint is not None else console.color_system
        if system in (None, "none", "mono", "no_color") or console.no_color:
            return "none"
        return "standard" if system in ("standard", "windows") else "full"

    def _kind(self, i: int, j: int) -> str:
        v = self.values[i][j]
        if not math.isfinite(v):
            return "nan"
        if self.hidden[i][j]:
            return "leak" if abs(v) > LEAK_EPS else "masked"
        return "value"

    # -- cells ---------------------------------------------------------------
    def _cell(self, i: int, j: int, cw: int, with_value: bool, colours: str) -> Text:
        """One cell of the "values" (with_value) or "glyphs" layout."""
        v, kind = self.values[i][j], self._kind(i, j)
        signed = self.mode == "diff"
        if kind == "masked":
            return Text(("·" if cw < 3 else " · ").center(cw)[:cw], MASKED)
        if kind == "nan":
            label = fmt_value(v) if with_value and cw >= 3 else "?"
            return Text(label.center(cw)[:cw], NAN)
        if kind == "leak":
            label = "!" + fmt_value(v, signed) if with_value else "!"
            label = label if cell_len(label) <= cw else "!"
            return Text(label.center(cw), LEAK)
        base = 0.0 if signed else self.vmin
        if not with_value:  # shade glyphs: the layout for terminals without full colour
            return Text(shade_glyph(v - base, self.vmax - base) * cw)
        # Right-aligned in 4 characters: a column of +.12, -.05 and .00 lines up at the point.
        number = fmt_value(v, signed).rjust(4)
        if colours != "full":
            # 16-colour palettes differ per terminal: a guessed background could hide the
            # digits, so they are printed plain, with a shade glyph to carry the value.
            return Text((number + shade_glyph(v - base, self.vmax - base)).center(cw)[:cw])
        text = number.center(cw)
        rgb = self._rgb(v)
        return Text(text, Style(color=_contrast(rgb), bgcolor=Color.from_rgb(*rgb)))

    # -- layout --------------------------------------------------------------
    def __rich_console__(self, console: Console, options: ConsoleOptions) -> RenderResult:
        width = options.max_width
        colours = self._colour_mode(console)
        lines = self.lines(width, colours)
        for line in lines:
            line.no_wrap = True
            line.truncate(width, overflow="crop")
            yield line

    def lines(self, width: int, colours: str = "full") -> list[Text]:
        """The heatmap as lines of at most `width` cells. Layouts: "values"
        (cells with printed numbers), "halves" (dense, two rows per line with
        ▀, needs colour), "glyphs" (dense, shade glyphs, any terminal)."""
        rows, cols = self.rows, self.cols
        tick_w = len(str(max(rows, cols, 1) - 1))
        gutter = tick_w + 1
        value_cw = next((cw for cw in (6, 5, 4) if gutter + cols * cw <= width), 0)
        if self.show_values is not False and value_cw:
            layout, cw, step = "values", value_cw, 1
        else:
            # ▀ halves keep cells square and the grid half as tall, but carry
            # no glyph: without colour, fall back to shade glyphs.
            layout = "halves" if colours == "full" else "glyphs"
            cw = 2 if gutter + 2 * cols <= width else 1
            step = next(
                s
                for s in (1, 2, 4, 5, 8, 10, 16, 20, 25, 32, 50, 64, 100, 10**9)
                if s * cw >= tick_w + 1 + (cw == 1)
            )
        n_cols = min(cols, max(width - gutter, 1) // cw)  # crop when even 1 cell is too wide
        n_rows = rows if n_cols == cols else min(rows, n_cols)

        out: list[Text] = []
        if self.title:
            out.append(Text(self.title, style="bold"))
        out.extend(self._label_lines(gutter, width))

        ticks = Text(" " * gutter)
        pos = 0
        for j in range(0, n_cols, step):
            label = str(j).center(cw) if layout == "values" else str(j)
            ticks.append(" " * (j * cw - pos))
            ticks.append(label, "dim")
            pos = j * cw + len(label)
        out.append(ticks)

        if layout == "halves":
            row_step = step if step % 2 == 0 else 2 * step
            for i in range(0, n_rows, 2):
                label = str(i) if i % row_step == 0 else ""
                line = Text(label.rjust(tick_w) + " ", style="dim")
                for j in range(n_cols):
                    line.append_text(self._half_cell(i, j, cw, n_rows))
                out.append(line)
        else:
            for i in range(n_rows):
                label = str(i) if layout == "values" or i % step == 0 else ""
                line = Text(label.rjust(tick_w) + " ", style="dim")
                for j in range(n_cols):
                    line.append_text(self._cell(i, j, cw, layout == "values", colours))
                out.append(line)

        out.extend(self._legend_lines(n_rows, n_cols, rows, cols, layout, colours, width))
        return out

    def _half_colour(self, i: int, j: int) -> Color | None:
        """Colour of one half cell; None = masked (drawn as a dot, not a colour)."""
        kind = self._kind(i, j)
        if kind == "masked":
            return None
        if kind in ("leak", "nan"):
            return (LEAK if kind == "leak" else NAN).bgcolor
        return Color.from_rgb(*self._rgb(self.values[i][j]))

    def _half_cell(self, i: int, j: int, cw: int, n_rows: int) -> Text:
        upper = self._half_colour(i, j)
        lower = self._half_colour(i + 1, j) if i + 1 < n_rows else None
        if upper is None and lower is None:
            return Text("·".ljust(cw), MASKED)
        if upper is None:
            return Text("▄" * cw, Style(color=lower))
        return Text("▀" * cw, Style(color=upper, bgcolor=lower))

    def _label_lines(self, gutter: int, width: int) -> list[Text]:
        key_label, query_label = self.axis_labels
        # "query ↓" sits above the row ticks, "key →" above the columns.
        start = max(gutter, cell_len(query_label) + 2)
        if start + cell_len(key_label) <= width:
            line = Text(query_label, style="italic")
            line.append(" " * (start - cell_len(query_label)))
            line.append(key_label, style="italic")
            return [line]
        return [Text(" " * gutter + key_label, style="italic"), Text(query_label, style="italic")]

    def _legend_lines(
        self, n_rows: int, n_cols: int, rows: int, cols: int, layout: str, colours: str, width: int
    ) -> list[Text]:
        legend = self.legend
        lo, hi = (
            (f"{self.vmin:+.2f}", f"{self.vmax:+.2f}")
            if self.mode == "diff"
            else (f"{self.vmin:.2f}", f"{self.vmax:.2f}")
        )
        scale = Text(lo + " ")
        if (
            layout == "glyphs" or colours != "full"
        ):  # the key to the glyphs, by size (diff: by |value|)
            scale.append("█▓▒░ ░▒▓█" if self.mode == "diff" else SHADES[1:])
        elif self.mode == "diff":
            for k in range(9):
                scale.append("█", Style(color=Color.from_rgb(*diverging(k / 4 - 1))))
        else:
            for k, ch in enumerate(RAMP):
                scale.append(ch, Style(color=Color.from_rgb(*viridis((k + 0.5) / len(RAMP)))))
        scale.append(" " + hi)
        out = [scale]
        name = legend[self.mode]
        if cell_len(scale.plain) + 2 + cell_len(name) <= width:
            scale.append("  " + name, style="bold")
        else:
            out.append(Text(name, style="bold"))

        kinds = {self._kind(i, j) for i in range(n_rows) for j in range(n_cols)}
        # The legend's sample of a non-finite cell is what such a cell shows: NaN, inf or -inf
        # when values are printed, ? in the dense layouts.
        odd = next(
            (
                fmt_value(self.values[i][j])
                for i in range(n_rows)
                for j in range(n_cols)
                if self._kind(i, j) == "nan"
            ),
            "?",
        )
        nan_sample = f" {odd} " if layout == "values" else " ? "
        # The keys on as few lines as fit, breaking only between keys: none is cut at the edge.
        keys: list[Text] = []
        for kind, sample, style in (
            ("masked", " · ", MASKED),
            ("leak", " ! ", LEAK),
            ("nan", nan_sample, NAN),
        ):
            if kind in kinds:
                key = Text()
                key.append(sample, style)  # a span: the words after it stay plain
                key.append(" " + legend[kind])
                keys.append(key)
        line = Text()
        for key in keys:
            if line and cell_len(line.plain) + 3 + cell_len(key.plain) > width:
                out.append(line)
                line = Text()
            if line:
                line.append("   ")
            line.append_text(key)
        if line:
            out.append(line)
        if n_rows < rows or n_cols < cols:
            out.append(Text(f"[0:{n_rows}, 0:{n_cols}] / {rows}×{cols}", style="dim"))
        return out


def heatmap(
    matrix: Iterable[Iterable[float | None]],
    *,
    reference: Iterable[Iterable[float | None]] | None = None,
    mode: str = "learner",
    title: str = "",
    axis_labels: tuple[str, str] = ("key position →", "query position ↓"),
    show_values: bool | None = None,
    color_system_hint: str | None = None,
    legend: Mapping[str, str] | None = None,
    hidden: list[list[bool]] | None = None,
) -> Heatmap:
    """A renderable heatmap of a T×T weight matrix (row = query, column = key).

    mode "learner" draws `matrix`, "reference" draws `reference` (or `matrix`
    if none is given), "diff" draws matrix − reference on a diverging scale.
    axis_labels = (keys across, queries down), already localised. show_values:
    None = print values when the grid fits, False = never. color_system_hint
    overrides the console's colour system ("none", "standard", "256",
    "truecolor"), e.g. for a Textual app running under NO_COLOR. legend maps
    "learner"/"reference"/"diff"/"masked"/"leak"/"nan" to localised words.
    hidden: T×T, True where the key is hidden from the query (the lesson's regions: a window,
    padding); None, or a matrix of another shape, is the causal future.
    """
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
    values = _as_matrix(matrix)
    other = None  # the matrix whose scale this one shares
    if mode == "learner" and reference is not None:
        other = _as_matrix(reference)
    elif mode == "reference" and reference is not None:
        values, other = _as_matrix(reference), values
    elif mode == "diff":
        if reference is None:
            raise ValueError("diff mode needs a reference matrix")
        ref = _as_matrix(reference)
        if len(ref) != len(values) or (ref and len(ref[0]) != len(values[0])):
            raise ValueError("matrix and reference differ in shape")
        values = [
            [a - b for a, b in zip(r1, r2, strict=False)]
            for r1, r2 in zip(values, ref, strict=False)
        ]
    return Heatmap(
        values,
        mode,
        title,
        axis_labels,
        show_values,
        color_system_hint,
        {**DEFAULT_LEGEND, **(legend or {})},
        scale_with=other,
        hidden=hidden,
    )
