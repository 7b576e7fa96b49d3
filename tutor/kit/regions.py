"""Properties judged over regions: attention weights with named hidden regions, leakage over
every position of each hidden region, and a module's state before and after forward."""

from __future__ import annotations

from dataclasses import dataclass

import torch

from tutor.kit.finite import require_finite
from tutor.kit.judge_tools import (
    Verdict,
    close,  # noqa: F401
    max_error,
    msg,
    row_place,
    rows_sum_to_one,
    shape_str,
)

LEAK_LIMIT = 1e-6  # LM3-L3's self-check 2: `good < 1e-6`


def future_region(T_q: int, T_k: int | None = None) -> torch.Tensor:
    """(T_q, T_k) bool, True where key j comes after query i (queries are the last T_q of the
    T_k positions): the causal future, a hidden region for judge_leakage."""
    T_k = T_q if T_k is None else T_k
    i = torch.arange(T_q).unsqueeze(1) + (T_k - T_q)
    return torch.arange(T_k).unsqueeze(0) > i


@dataclass(frozen=True)
class Region:
    """A part of the weights that no query may attend to: its name as a message (region.future,
    region.window, region.padding, or the lesson's own), a (T_q, T_k) bool mask (True where key
    j is hidden from query i), the check that judges it and that check's message: {row} {col}
    {got} {likely}, and {region} where `named` (a message of its own may name the region itself)."""

    name: dict
    hidden: torch.Tensor
    check_id: str
    key: str = "check.hidden_weight"
    named: bool = True


def causal_future(T_q: int, T_k: int | None = None) -> Region:
    """The causal future as a Region: check future-is-zero, with its own message."""
    hidden = future_region(T_q, T_k)
    return Region(msg("region.future"), hidden, "future-is-zero", "check.future", named=False)


def hidden_cells(regions: list[Region]) -> list[list[bool]]:
    """Every region's hidden cells in one (T_q, T_k) matrix of bools: a heatmap's or a weights
    entry's `hidden`, so that the map draws the lesson's regions masked, not the causal future."""
    if not regions:
        raise ValueError("hidden_cells needs at least one region")
    hidden = torch.zeros(regions[0].hidden.shape, dtype=torch.bool)
    for region in regions:
        hidden |= region.hidden.bool()
    return hidden.tolist()


def judge_attention_weights(
    v: Verdict, w: torch.Tensor, regions: list[Region], *, what: str, likely=None, tiny_likely=None
) -> None:
    """Attention weights w (…, T_q, T_k) as a softmax over the visible keys makes them: finite,
    each row summing to 1 (rows_sum_to_one), and exactly 0 in every hidden region, each region
    judged by its own check. tiny_likely, where given, is the diagnosis when every hidden weight
    is below 1e-6: a large negative fill in place of -inf. likely: a message or a callable."""
    require_finite(v, what, w, likely=likely)
    ok = rows_sum_to_one(w)
    if not ok.all():
        where = tuple(int(i) for i in (~ok).nonzero()[0])
        v.require(
            "rows-sum-to-1",
            False,
            "check.rows_sum",
            row=where[-1],
            where=row_place(where[:-1]),
            got=float(w.double().sum(-1)[where]),
            likely=likely,
        )
    v.expect("rows-sum-to-1", True)
    for region in regions:
        if tuple(region.hidden.shape) != tuple(w.shape[-2:]):
            shapes = f"{tuple(region.hidden.shape)} for weights {tuple(w.shape)}"
            raise ValueError(f"a region of shape {shapes}")
        leaked = (w != 0) & region.hidden
        if leaked.any():
            where = tuple(int(i) for i in leaked.nonzero()[0])
            tiny = float(w.masked_select(leaked).abs().max()) < 1e-6
            v.require(
                region.check_id,
                False,
                region.key,
                row=where[-2],
                col=where[-1],
                got=float(w[where]),
                **({"region": region.name} if region.named else {}),
                likely=tiny_likely if tiny and tiny_likely is not None else likely,
            )
        v.expect(region.check_id, True)


def leak_map(base, moved, query_axis: int = 1) -> torch.Tensor | None:
    """M[i, j]: how far output i (along query_axis) moved when input position j changed, the
    largest change over every other axis. moved: the outputs for each change, as a list or
    stacked along dim 0 (probe_leak_map); None unless each is a tensor of base's shape."""
    if not isinstance(base, torch.Tensor) or base.dim() <= query_axis:
        return None
    if isinstance(moved, torch.Tensor):  # probe_kit.probe_leak_map's stacked copies
        if moved.dim() != base.dim() or moved.shape[0] != base.shape[0] * base.shape[query_axis]:
            return None
        moved = list(moved.split(base.shape[0]))
    if not moved or any(not isinstance(m, torch.Tensor) or m.shape != base.shape for m in moved):
        return None
    with torch.no_grad():
        diff = (torch.stack(moved).double() - base.double()).abs()  # (changes, *base.shape)
        diff = torch.nan_to_num(diff, nan=float("inf"))
        others = tuple(d for d in range(1, diff.dim()) if d != query_axis + 1)
        return (diff.amax(dim=others) if others else diff).T.contiguous()


def judge_leak_map(
    v: Verdict,
    base,
    moved,
    regions: list[Region] | list[tuple[dict, torch.Tensor]],
    *,
    query_axis: int = 1,
    limit: float = LEAK_LIMIT,
    likely=None,
    check_id: str = "no-leak",
) -> None:
    """No hidden input moves any output: base, the output on x; moved, the outputs with each
    input position changed in turn (probe_kit.probe_leak_map's, or a list); regions, each a
    Region (causal_future(T), say) or a pair (its name as a message, (T_q, T_k) bool: True
    where key j is hidden from query i), e.g. (msg("region.future"), future_region(T)).
    Every cell of every region is judged, not a few positions: the first region whose largest
    movement reaches limit fails, at its worst cell. likely: a message, or a callable giving one."""
    got = leak_map(base, moved, query_axis)
    if got is None:
        return  # the shape and finiteness checks before this one say why
    for each in regions:
        region, hidden = (each.name, each.hidden) if isinstance(each, Region) else each
        if tuple(hidden.shape) != tuple(got.shape):
            raise ValueError(f"region of shape {tuple(hidden.shape)} for a map {tuple(got.shape)}")
        inside = got.masked_fill(~hidden, 0.0)
        top = float(inside.max()) if inside.numel() else 0.0
        if not top < limit:
            flat = int(inside.argmax())
            i, j = divmod(flat, got.shape[1])
            v.require(
                check_id,
                False,
                "check.leak_region",
                key=j,
                query=i,
                got=top,
                region=region,
                limit=f"{limit:g}",
                likely=likely or msg("likely.leak_region"),
            )
    v.expect(check_id, True)


# ---------------------------------------------------------------- module state


def state_unchanged(
    v: Verdict, before, after, *, check_id: str = "state-unchanged", likely=None
) -> bool:
    """forward left the module as it was: before and after, probe_kit.module_state of the same
    module around the calls, hold the same names, each with the same dtype, shape and values.
    Outputs alone miss a buffer registered in forward, or a bool mask made an additive float
    one: a checkpoint then fails to load, or loads into a mask that no longer masks."""
    if not isinstance(before, dict) or not isinstance(after, dict):
        return True  # the calls around it failed, and say so
    likely = likely or msg("likely.module_state")
    for name in sorted(set(before) ^ set(after)):
        gone = msg("state.added" if name in after else "state.removed", name=name.lstrip("#"))
        v.expect(check_id, False, "check.module_state_keys", change=gone, likely=likely)
        return False
    for name in sorted(before):
        a, b = before[name], after[name]
        if not isinstance(a, torch.Tensor) or not isinstance(b, torch.Tensor):
            continue
        change: dict | None = None
        if a.dtype != b.dtype:
            change = msg("state.dtype", before=_dtype(a), after=_dtype(b))
        elif a.shape != b.shape:
            change = msg("state.shape", before=shape_str(a.shape), after=shape_str(b.shape))
        elif not torch.equal(a, b):
            err = max_error(a, b)[0] if a.dtype.is_floating_point else 1.0
            change = msg("state.values", err=f"{err:.3g}")
        if change is not None:
            v.expect(
                check_id,
                False,
                "check.module_state_entry",
                name=name.lstrip("#"),
                change=change,
                likely=likely,
            )
            return False
    v.expect(check_id, True)
    return True


def _dtype(t: torch.Tensor) -> str:
    return str(t.dtype).removeprefix("torch.")
