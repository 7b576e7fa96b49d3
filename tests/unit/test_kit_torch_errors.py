"""The kit's reading of PyTorch's shape errors (tutor.kit.torch_errors), on errors PyTorch
really raises: if its wording changes, these fail before a lesson's diagnosis goes quiet."""

from __future__ import annotations

import pytest
import torch

from tutor.kit import torch_error_kind


def message(fn) -> str:
    with pytest.raises(RuntimeError) as raised:
        fn()
    return str(raised.value)


def test_a_cat_on_the_wrong_axis_is_joined():
    a, b = torch.zeros(2, 3, 4), torch.zeros(2, 1, 4)
    assert torch_error_kind(message(lambda: torch.cat([a, b], dim=2))) == "joined"


def test_a_view_the_elements_do_not_fill_is_reshaped():
    assert torch_error_kind(message(lambda: torch.zeros(2, 3).view(4, 2))) == "reshaped"


def test_products_and_broadcasts_that_do_not_fit_are_sizes():
    a, b = torch.zeros(2, 3, 4), torch.zeros(2, 5, 4)
    assert torch_error_kind(message(lambda: a @ b)) == "sizes"
    assert torch_error_kind(message(lambda: a + b)) == "sizes"
    assert torch_error_kind(message(lambda: torch.zeros(3, 4) @ torch.zeros(5, 2))) == "sizes"


def test_anything_else_is_no_kind():
    assert torch_error_kind("division by zero") is None
    assert torch_error_kind("") is None


def test_a_state_error_is_said_by_its_kind_at_its_last_line():
    from tutor.kit import msg, state_error_likely

    def error(detail: str) -> dict:
        return {"kind": "RuntimeError", "detail": detail, "frames": [{"line": 3}, {"line": 7}]}

    joined = message(lambda: torch.cat([torch.zeros(2, 3), torch.zeros(2, 4)], dim=0))
    said = state_error_likely(error(joined), axis=2)
    assert said == msg("likely.state_error_joined", line=7, axis=2)
    sizes = message(lambda: torch.zeros(2, 3) @ torch.zeros(4, 2))
    assert state_error_likely(error(sizes), axis=1)["key"] == "likely.state_error_sizes"
    other = state_error_likely({"detail": "no", "frames": []}, axis=2)
    assert other == msg("likely.state_error", line="?", axis=2)
    mine = state_error_likely(error(joined), axis=2, keys={"joined": "likely.mine"})
    assert mine["key"] == "likely.mine"
