"""The memory of attention's (…, T, T) score tensors: the formula a lesson's table shows beside
what the learner's own layer really builds, measured in the child. Generic over the layer: a
lesson gives how to build one for a length T; the view (memory_view) is in the engine's words."""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import torch
from torch.overrides import TorchFunctionMode

from tutor.kit.judge_tools import msg
from tutor.model.view_items import bar, heading, keys, note, table

DTYPES = {"float32": torch.float32, "bfloat16": torch.bfloat16, "float16": torch.float16}
DTYPE_BYTES = {"float32": 4, "bfloat16": 2, "float16": 2}
D_OUT = 768  # the width q, k and v are counted at by default (GPT-2 small's)


def chosen_settings(
    defaults: Mapping[str, Any],
    params: Mapping[str, Any] | None,
    allowed: Mapping[str, Sequence | Mapping] | None = None,
) -> dict[str, Any]:
    """The settings a run uses: lesson.toml's defaults, then the ones the app sent that the step
    declares; a value outside allowed[id] falls back to its default (a stale or forged choice
    must not crash the probe, e.g. a dtype torch does not have)."""
    s = dict(defaults)
    s.update({k: v for k, v in (params or {}).items() if k in defaults})
    for key, values in (allowed or {}).items():
        if s.get(key) not in values:
            s[key] = defaults[key]
    return s


def seq_lens(t_min: int, t_max: int) -> list[int]:
    """The lengths a memory table shows: t_min doubled up to t_max, so each row is ×4 the last."""
    out, n = [], t_min
    while n <= t_max:
        out.append(n)
        n *= 2
    return out


def memory_rows(
    lens: Sequence[int], heads: int = 12, batch: int = 1, bytes_per: int = 4, d_out: int = D_OUT
) -> list[dict]:
    """One dict per T, as a lab's loop prints it: scores = batch·heads·T², MB = scores·bytes/1e6
    (decimal megabytes). q, k and v are (batch, T, d_out) each: linear in T, and independent of
    the number of heads, which only splits d_out."""
    rows = []
    for t in lens:
        scores = batch * heads * t * t
        qkv = 3 * batch * t * d_out * bytes_per
        rows.append(
            {
                "T": t,
                "scores": scores,
                "bytes": scores * bytes_per,
                "mb": scores * bytes_per / 1e6,
                "qkv_mb": qkv / 1e6,
                "ratio": scores * bytes_per / qkv,
            }
        )
    return rows


class SquareTensors(TorchFunctionMode):
    """Records the largest (…, T, T) tensor any torch function produces: the score tensor the
    learner's code really builds, whatever its route. A function mode, so nothing is patched
    (torch.jit.script still compiles)."""

    def __init__(self, T: int) -> None:
        super().__init__()
        self.T = T
        self.bytes = 0

    def __torch_function__(self, func, types, args=(), kwargs=None):
        out = func(*args, **(kwargs or {}))
        if isinstance(out, torch.Tensor) and out.dim() >= 2 and out.shape[-2:] == (self.T, self.T):
            self.bytes = max(self.bytes, out.numel() * out.element_size())
        return out


def measure_score_memory(
    ctx: Any,
    build: Callable[[int], torch.nn.Module],
    lens: Sequence[int],
    *,
    width: int,
    batch: int,
    dtype: torch.dtype,
    count: Callable[[int], int],
    limit: int,
    budget: float,
    seed: int = 3,
) -> dict[int, int | None]:
    """In a probe: the largest (…, T, T) tensor the learner's layer builds at each T, in bytes
    (None where none came), the layer built by build(T) (cast to dtype, eval mode) and called on
    random (batch, T, width) input. It stops at the first length whose count(T) score elements
    pass limit, after budget seconds, or at the first call that raises: the formula's columns
    need none of it, so a layer that fails only leaves the measured column short."""
    measured: dict[int, int | None] = {}
    deadline = time.monotonic() + budget
    g = torch.Generator().manual_seed(seed)
    for T in lens:
        if count(T) > limit or time.monotonic() > deadline:
            break
        made = ctx.call(lambda T=T: build(T).to(dtype).eval())
        if "error" in made:
            break
        x = torch.randn(batch, T, width, generator=g).to(dtype)
        with SquareTensors(T) as seen:
            run = ctx.call(made["value"], x)
        if "error" in run:
            break
        measured[T] = seen.bytes or None
    return measured


def memory_table(rows: Sequence[dict], measured: Mapping[int, int | None], columns: list) -> dict:
    """The memory table's item: per row T, the score elements, their MB, q/k/v's MB, the ratio,
    the MB the learner's layer built ("—" where not measured) and a bar of the scores' MB.
    columns: the seven headers (the lesson's texts; the bar's is usually "")."""
    top = max(r["mb"] for r in rows)
    cells = [
        [
            str(r["T"]),
            f"{r['scores']:,}",
            f"{r['mb']:.1f}",
            f"{r['qkv_mb']:.1f}",
            f"{r['ratio']:.1f}×",
            "—" if measured.get(r["T"]) is None else f"{measured[r['T']] / 1e6:.1f}",  # type: ignore[operator]
            bar(r["mb"], top, "cyan", 6),
        ]
        for r in rows
    ]
    return table(columns, cells, align=["right"] * 6 + ["left"])


def memory_growth(rows: Sequence[dict]) -> dict[str, Any]:
    """How much the scores and q/k/v grew from the first row to the last: a note's params
    (t1, t2, scores, qkv), the factors as whole numbers."""
    first, last = rows[0], rows[-1]
    return {
        "t1": first["T"],
        "t2": last["T"],
        "scores": f"{last['mb'] / first['mb']:.0f}",
        "qkv": f"{last['qkv_mb'] / first['qkv_mb']:.0f}",
    }


MEMORY_COLUMNS = (
    "visual.memory_T",
    "visual.memory_scores",
    "visual.memory_mb",
    "visual.memory_qkv",
    "visual.memory_ratio",
    "visual.memory_measured",
)


def memory_view(
    settings: Mapping[str, Any],
    measured: Mapping[int, int | None],
    *,
    layer: str,
    d_out: int = D_OUT,
) -> list:
    """A memory step's view, in the engine's words: a heading, the settings line, the table of
    memory_rows at the settings (range (t_min, t_max), heads, batch, dtype a key of DTYPE_BYTES)
    beside what the learner's own layer built at each T (measured, from measure_score_memory),
    how much the scores and q/k/v grew, and what each column means (layer: the class the
    learner wrote, d_out: the width q, k and v are counted at)."""
    rows = memory_rows(
        seq_lens(*settings["range"]),
        heads=settings["heads"],
        batch=settings["batch"],
        bytes_per=DTYPE_BYTES[settings["dtype"]],
        d_out=d_out,
    )
    about = {k: settings[k] for k in ("heads", "batch", "dtype")}
    return [
        heading(msg("visual.memory_title")),
        keys(),
        memory_table(rows, measured, [*(msg(k) for k in MEMORY_COLUMNS), ""]),
        note(msg("visual.memory_growth", **memory_growth(rows))),
        note(msg("visual.memory_measured_note", layer=layer, d_out=d_out, **about)),
    ]
