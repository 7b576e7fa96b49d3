"""Tools for a lesson's probes: they run in the child and call the learner's code.

A probe gets fresh inputs, calls the learner's functions through ProbeContext.call
and returns what came back as plain values and tensors. It judges nothing.
"""

from __future__ import annotations

import contextlib
import copy
import traceback

import torch
import torch.nn as nn
from torch.overrides import TorchFunctionMode

from tutor.engine.codec import _as_plain, _device, _no_torch_function, _shape
from tutor.engine.codec import _detach as _c_detach
from tutor.engine.origin import foreign_origin, look_through
from tutor.kit import fixed_dropout
from tutor.kit.borrowed import (
    FOREIGN_LABEL,
    _Borrowed,
    _getframe,
    _gettrace,
    _reaches,
    _settrace,
    _thread_settrace,
)

_SOFTMAX_OUT: list[torch.Tensor | None] = []
# A softmax output larger than this (elements) is not kept for the views: they draw the lab's
# sizes, and a copy of every softmax at T = 2,048 would cost the learner's run 16 MB a call.
VIEW_SOFTMAX_MAX = 1 << 16
_traps_installed = False
# Captured before any learner code runs: a patched torch.no_grad or Tensor.clone cannot reach the harness.
_no_grad = torch.no_grad
_enable_grad = torch.enable_grad
_detach = torch.Tensor.detach
_clone = torch.Tensor.clone
_numel = torch.Tensor.numel
_KERNEL_CALLS: set[str] = set()  # also filled by the class-level traps below
# True while a step with StepSpec.own_formula calls learner code: a kernel then raises at once
# (flex_attention spends seconds before its operator runs, for a result nobody will judge).
_STOPPING = [False]


def _kernel_called(label: str) -> None:
    _KERNEL_CALLS.add(label)
    if _STOPPING[0]:
        raise ForbiddenKernel([label])


class NameMissing(Exception):
    def __init__(self, name: str):
        super().__init__(name)
        self.name = name


class ForeignCode(Exception):
    """A step's function or class that the learner's file did not make (see origin.py)."""

    def __init__(self, name: str, origin: str):
        super().__init__(name)
        self.name = name
        self.origin = origin


class ForbiddenKernel(BaseException):
    """Learner code ran a library kernel in a step that must not (StepSpec.own_formula): the
    probe ends. A BaseException, so that a probe's own `except Exception` lets it through."""

    def __init__(self, kernels: list[str]):
        super().__init__(", ".join(kernels))
        self.kernels = kernels


class LearnerRaised(Exception):
    def __init__(self, failure: dict, todo: bool):
        super().__init__(failure.get("detail", ""))
        self.failure = failure
        self.todo = todo


_OOM_TEXTS = ("can't allocate memory", "not enough memory", "Cannot allocate memory")


def is_out_of_memory(exc: BaseException) -> bool:
    if isinstance(exc, MemoryError):
        return True
    if not isinstance(exc, RuntimeError):
        return False
    try:  # torch's allocator raises RuntimeError; str() of a learner's subclass may raise
        text = str(exc)
    except BaseException:
        return False
    return any(t in text for t in _OOM_TEXTS)


def _kernel_label(name: str) -> str | None:
    """The library kernel a torch function or operator of this name is, if any."""
    name = name.lower()
    if "scaled_dot_product" in name:
        return "F.scaled_dot_product_attention"
    if "multi_head_attention" in name:
        return "nn.MultiheadAttention"
    if "flex_attention" in name:
        return "flex_attention"
    return None


_SOFTMAX_NAMES = {"softmax", "_softmax", "_safe_softmax"}
_DROPOUT_NAMES = {"dropout", "dropout_", "native_dropout"}
_KINDS: dict = {}  # func -> ("kernel", label) | ("softmax",) | ("dropout",) | None


def _kind(func):
    try:
        return _KINDS[func]
    except (KeyError, TypeError):
        pass
    name = str(getattr(func, "__name__", "") or "")
    if not name or name.startswith("<"):
        name = str(func)
    base = (
        name.rsplit(".", 2)[0] if name.startswith("aten.") else name
    )  # aten.softmax.int → aten.softmax
    base = base.removeprefix("aten.")
    label = _kernel_label(name)
    kind = (
        ("kernel", label)
        if label
        else ("softmax",)
        if base in _SOFTMAX_NAMES
        else ("dropout",)
        if base in _DROPOUT_NAMES
        else None
    )
    with contextlib.suppress(TypeError):
        _KINDS[func] = kind
    return kind


class Watch(TorchFunctionMode):
    """Active around every call of learner code. A torch function mode sees every torch function
    and operator called from Python, however it is reached (torch.*, F.*, Tensor methods,
    torch._C._VariableFunctions, torch._VF, torch.ops): the library kernels are recorded, softmax
    outputs kept for the heatmap, and, when asked, dropout replaced by fixed_dropout. Nothing is
    patched, so functions compiled with torch.jit.script still compile."""

    def __init__(self, dropout: bool = False, softmax: bool = True):
        super().__init__()
        self.stand_in = dropout
        self.softmax = softmax  # keep softmax outputs (only the views draw them)
        self.dropouts: list[dict] = []  # what each dropout call was given, for the judge

    def __torch_function__(self, func, types, args=(), kwargs=None):
        # Every torch call of learner code comes here (about 2,000 in lm3-l3's multi-head
        # probe): the common case, a function of no interest, first and without a call.
        try:
            kind = _KINDS[func]
        except (KeyError, TypeError):
            kind = _kind(func)
        if kind is None:
            return func(*args, **kwargs) if kwargs else func(*args)
        kwargs = kwargs or {}
        if kind[0] == "kernel":
            _kernel_called(kind[1])
            return func(*args, **kwargs)
        if kind[0] == "dropout" and self.stand_in and args and isinstance(args[0], torch.Tensor):
            return self._dropout(func, args, kwargs)
        out = func(*args, **kwargs)
        if kind[0] == "softmax" and self.softmax and isinstance(out, torch.Tensor):
            small = _numel(out) <= VIEW_SOFTMAX_MAX
            _SOFTMAX_OUT.append(_clone(_detach(out)) if small else None)
            del _SOFTMAX_OUT[:-4]
        return out

    def _dropout(self, func, args, kwargs):
        x = args[0]
        p = args[1] if len(args) > 1 else kwargs.get("p", 0.5)
        training = args[2] if len(args) > 2 else kwargs.get("training", kwargs.get("train", True))
        inplace = (args[3] if len(args) > 3 else kwargs.get("inplace", False)) or str(
            getattr(func, "__name__", "")
        ).endswith("_")
        p, training = float(p), bool(training)
        axes = weight_axes(x) if training and p > 0 else None
        self.dropouts.append(
            {"shape": list(x.shape), "p": p, "training": training, "weights": axes is not None}
        )
        out = fixed_dropout.apply(x, p, axes or (-2, -1)) if training else x
        if inplace and out is not x:
            with _no_grad():
                x.copy_(out)
            out = x
        if "native_dropout" in str(getattr(func, "__name__", "")):
            return out, torch.ones_like(x, dtype=torch.bool)
        return out


def weight_axes(x: torch.Tensor) -> tuple[int, int] | None:
    """(query axis, key axis) when x holds attention weights, in any layout: finite, in
    [0, 1], summing to 1 along the key axis (the last one first); the query axis is the one
    before it when the causal future is zero there (or nowhere else), else the one other axis
    where it is. None when x is not weights."""
    with _no_grad():
        if x.dim() < 2 or x.numel() == 0 or not bool(torch.isfinite(x).all()):
            return None
        if bool((x < 0).any()) or bool((x > 1 + 1e-6).any()):
            return None
        n = x.dim()
        keys = [a for a in (n - 1, *range(n - 1)) if x.shape[a] > 1 and _sums_to_one(x, a)]
        if not keys:
            return None
        ka = keys[0]
        before = (ka - 1) % n
        if _zero_future(x, before, ka):
            return before, ka
        causal = [a for a in range(n) if a not in (ka, before) and _zero_future(x, a, ka)]
        return (causal[0] if len(causal) == 1 else before), ka


def _sums_to_one(x: torch.Tensor, axis: int) -> bool:
    sums = x.double().sum(axis)
    return bool(torch.allclose(sums, torch.ones((), dtype=torch.float64), atol=1e-4))


def _zero_future(x: torch.Tensor, qa: int, ka: int) -> bool:
    """Whether x is 0 wherever key j comes after query i (the last T_q of T_k positions)."""
    T_q, T_k = x.shape[qa], x.shape[ka]
    if T_q > T_k or T_k < 2:
        return False
    moved = x.movedim((qa, ka), (-2, -1))
    hidden = torch.arange(T_k) > (torch.arange(T_q) + (T_k - T_q)).unsqueeze(1)
    return bool(hidden.any()) and not bool(moved[..., hidden].any())


def _trap(owner, attr: str, label: str) -> None:
    original = getattr(owner, attr)

    def trapped(*args, **kwargs):
        _kernel_called(label)
        return original(*args, **kwargs)

    look_through(trapped, original)
    setattr(owner, attr, trapped)


def install_traps() -> None:
    """What the torch function mode cannot see: an nn.MultiheadAttention built (its forward may
    take a fused path in C++) and flex_attention's operator, a higher-order op."""
    global _traps_installed
    if _traps_installed:
        return
    _traps_installed = True
    _trap(nn.MultiheadAttention, "forward", "nn.MultiheadAttention")
    _trap(nn.MultiheadAttention, "__init__", "nn.MultiheadAttention")
    _trap_flex_attention()


def _trap_flex_attention() -> None:
    try:
        import torch.nn.attention.flex_attention as flex
        from torch._higher_order_ops.flex_attention import FlexAttentionHOP
    except ImportError:
        return
    _trap(flex, "flex_attention", "flex_attention")  # what a file imports, before its operator
    original = FlexAttentionHOP.__call__

    def calling(self, *args, **kwargs):
        _kernel_called("flex_attention")
        return original(self, *args, **kwargs)

    look_through(calling, original)
    FlexAttentionHOP.__call__ = calling  # type: ignore[method-assign]


def scripted_kernels(module, root) -> set[str]:
    """Kernels called inside TorchScript, which runs below Python where no mode sees it: read
    from the compiled code of each scripted (or traced) function that root reaches by name
    (through the file's own functions and classes, and the dicts, lists and tuples they name)."""
    found: set[str] = set()
    seen: set[int] = set()
    stack = [root]
    # Not vars(): the child notes each name a probe reads of the learner's module, and a read
    # of its __dict__ makes every name read (tutor/workspace/unchanged.py). This walk follows
    # the names code names, as the app's fingerprint of a step does.
    names = object.__getattribute__(module, "__dict__")
    while stack and len(seen) < 500:
        obj = stack.pop()
        if id(obj) in seen:
            continue
        seen.add(id(obj))
        if isinstance(obj, (torch.jit.ScriptFunction, torch.jit.ScriptModule)):
            try:
                code = str(obj.code)
            except Exception:
                continue
            for word in code.replace("(", " ").replace(".", " ").split():
                label = _kernel_label(word)
                if label:
                    found.add(label)
            continue
        if type(obj) is dict:  # a compiled kernel kept in a container: {"k": traced}
            stack.extend(list(dict.values(obj))[:100])
            continue
        if type(obj) in (list, tuple):
            stack.extend(list(obj)[:100])
            continue
        codes: list = []
        if isinstance(obj, type):
            codes = [getattr(f, "__code__", None) for f in vars(obj).values()]
        else:
            codes = [getattr(obj, "__code__", None)]
        while codes:
            code = codes.pop()
            if code is None:
                continue
            codes.extend(c for c in code.co_consts if hasattr(c, "co_names"))
            stack.extend(names[n] for n in code.co_names if n in names)
    return found


def graph_kernels(t) -> set[str]:
    """Kernels found in the autograd graph behind a tensor: every path to an operator, compiled
    or not, leaves its node there when gradients are on."""
    found: set[str] = set()
    seen: set[int] = set()
    stack = [getattr(t, "grad_fn", None)]
    while stack and len(seen) < 5000:
        node = stack.pop()
        if node is None or id(node) in seen:
            continue
        seen.add(id(node))
        label = _kernel_label(
            type(node)
            .__name__.replace("ScaledDotProduct", "scaled_dot_product")
            .replace("MultiHeadAttention", "multi_head_attention")
        )
        if label:
            found.add(label)
        stack.extend(n for n, _ in getattr(node, "next_functions", ()))
    return found


def token_changes(x: torch.Tensor, delta: torch.Tensor, axis: int = 1):
    """x with each position j along axis changed in turn (delta added): the inputs a leakage
    map is made from. delta has x's shape without that axis."""
    for j in range(x.shape[axis]):
        changed = _clone(_detach(x))
        changed.select(axis, j).add_(delta)
        yield changed


def probe_leak_map(
    ctx: ProbeContext,
    fn,
    x: torch.Tensor,
    delta: torch.Tensor,
    *rest,
    axis: int = 1,
    pick=None,
    **how,
) -> dict:
    """fn(x', *rest) for every x' of token_changes(x, delta, axis), in one ctx.call(**how) whose
    value is the outputs stacked along dim 0, for judge_kit.judge_leak_map; pick(value) takes
    the output from what fn returns (out of an (out, weights) pair), in the child. Each x' has
    x's own shape (a function compiled for it is not compiled again); one call for them all
    keeps the harness's cost per call out of a map of T calls."""
    changes = list(token_changes(x, delta, axis))

    def every_change(*args):
        outs = []
        for changed in changes:
            _SOFTMAX_OUT.clear()  # as at the start of a call of its own: compiled code guards on it
            # Each call gets its own copy of the other inputs: code that changes one in place
            # would otherwise feed the next call another input, which reads as a leak.
            fresh = [_clone(_detach(a)) if isinstance(a, torch.Tensor) else a for a in args]
            outs.append(fn(changed, *fresh))
        return [pick(o) for o in outs] if pick else outs

    call = ctx.call(every_change, *rest, **how)
    if "error" in call:
        return call
    # Stacked here, outside the call: an op the learner's code never ran, seen by the watch,
    # would make a torch.compile'd function compile again (its guards see the watch's table).
    call["value"] = _stacked(call["value"])
    return call


def _stacked(outs) -> torch.Tensor | None:
    """The outputs as one plain tensor, or None: a tensor subclass's own __torch_function__ or
    shape is never consulted (it may raise or lie; the step's own checks judge its values)."""
    try:
        with _no_grad(), _no_torch_function():
            plain = [_as_plain(_c_detach(o), torch.Tensor) for o in outs]
            if not plain or any(_shape(p) != _shape(plain[0]) for p in plain):
                return None
            # Only CPU tensors: the first op on a meta tensor imports torch's meta kernels (~1 s).
            if any(_device(p).type != "cpu" for p in plain):
                return None
            return torch.cat(plain, 0)
    except Exception:
        return None


def module_state(module: nn.Module) -> dict[str, torch.Tensor]:
    """A copy of everything a module holds as tensors: its state_dict (what a checkpoint saves)
    and its parameters and buffers, a non-persistent buffer too; for judge_kit.state_unchanged.
    Keyed by name, "#name" for what is not in the state_dict."""
    with _no_grad():
        saved = {name: _clone(_detach(t)) for name, t in module.state_dict().items()}
        for name, t in [*module.named_parameters(), *module.named_buffers()]:
            if name not in saved and isinstance(t, torch.Tensor):
                saved["#" + name] = _clone(_detach(t))
    return saved


def clone_args(args):
    if isinstance(args, torch.Tensor):
        return _clone(_detach(args))
    if isinstance(args, (tuple, list)):
        return type(args)(clone_args(a) for a in args)
    return copy.copy(args)


class ProbeContext:
    def __init__(
        self,
        module,
        filename: str,
        source: str,
        codes: frozenset[int] | None = None,
        checks_file: str | None = None,
    ):
        self.module = module
        self.filename = filename
        self.source = source
        self.codes = (
            codes  # ids of the code objects compiled from the learner's file (origin.code_ids)
        )
        self.kernels: set[str] = set()
        self.params: dict = {}  # an experiment's settings, chosen in the app (set by the child)
        # The checks' file, whose functions learner code may not run (kit/borrowed.py): named by
        # the child, not found from the stack, where a step's probe may be the kit's own code.
        # The watch needs both it and codes.
        self.checks_file = checks_file
        # False when nobody will look at the step's views (`check`, `grade`): a probe may skip
        # calls whose outputs only feed them. A verdict must never depend on those.
        self.views = True
        self.stop_at_kernel = False  # StepSpec.own_formula is set (by the child)
        self.reads: set[str] = set()  # names of the file the step read (the child's record)

    def get(self, name: str):
        """The learner's function or class, checked on the very object the probe then uses (a
        module-level __getattr__ could hand out another the next time)."""
        value = getattr(self.module, name, None)
        if value is None or not callable(value):
            raise NameMissing(name)
        if self.codes is not None:
            origin = foreign_origin(value, self.codes)
            if origin is not None:
                if origin == self.filename or origin.endswith(
                    f"({self.filename})"
                ):  # compiled at run time under its name
                    origin = f"exec(compile(..., {self.filename!r}))"
                raise ForeignCode(name, origin)
        self.kernels |= scripted_kernels(self.module, value)
        return value

    def defines(self, name: str) -> bool:
        """Whether the file itself defines name (its namespace, not a module __getattr__). Noted
        as a name the step read, as get() notes one (the app's fingerprint of the step)."""
        self.reads.add(name)
        return name in object.__getattribute__(self.module, "__dict__")

    def optional(self, name: str):
        """As get, but None when the file has no such function: for code a step can do without
        (an exercise the tutor runs itself in a file written before the starter asked for it)."""
        try:
            return self.get(name)
        except NameMissing:
            return None

    def failure(self, exc: BaseException) -> dict:
        from tutor.engine.learner_code import describe_exception

        return describe_exception(exc, self.filename, self.source)

    def call(self, fn, *args, primary: bool = False, grad: bool = False, dropout: bool = False):
        """Call learner code on copies of args, under Watch.

        Returns {"value", "args", "softmax"} on success, {"error": failure} otherwise: softmax,
        the last softmax's output, for the views; None when self.views is False.
        grad: with gradients on, as in training (else under no_grad); dropout: torch's dropout
        replaced by fixed_dropout, and the result has "dropouts", what each dropout call got.
        A primary call (the notebook's own sizes) that raises ends the probe: the
        step is then `todo` (NotImplementedError) or `error`.
        """
        args = clone_args(args)
        _KERNEL_CALLS.clear()
        _SOFTMAX_OUT.clear()
        watch = Watch(dropout, softmax=self.views)
        borrowed = None
        if self.codes is not None and self.checks_file and _reaches(self.source, self.filename):
            borrowed = _Borrowed(self.checks_file, self.codes, _getframe(0))
        previous = _gettrace()
        try:
            with _enable_grad() if grad else _no_grad(), watch:
                if borrowed is not None:
                    _settrace(borrowed)
                    _thread_settrace(borrowed)  # threads the learner's code starts, too
                _STOPPING[0] = self.stop_at_kernel
                try:
                    value = fn(*args)
                finally:
                    _STOPPING[0] = False
                    if borrowed is not None:
                        removed = _gettrace() is not borrowed
                        _settrace(previous)
                        _thread_settrace(None)
                        if removed:  # learner code took the watch off: what it ran is unknown
                            borrowed.found.add("sys.settrace")
        except ForbiddenKernel:
            raise
        except BaseException as exc:  # SystemExit too: the learner's code is at fault
            # The learner's frames may hold what hit the memory limit: free it before describing.
            traceback.clear_frames(exc.__traceback__)
            failure = self.failure(exc)
            if primary:
                raise LearnerRaised(failure, todo=isinstance(exc, NotImplementedError)) from None
            return {"error": failure}
        finally:
            called = set(_KERNEL_CALLS)
            if borrowed is not None:
                called |= {f"{name} ({FOREIGN_LABEL})" for name in borrowed.found}
            self.kernels |= called
            if called and self.stop_at_kernel:  # before a raise or a result of that call
                raise ForbiddenKernel(sorted(self.kernels)) from None
        softmax = _SOFTMAX_OUT[-1] if _SOFTMAX_OUT else None
        result = {"value": value, "args": args, "softmax": softmax}
        if dropout:
            result["dropouts"] = watch.dropouts[:16]
        return result
