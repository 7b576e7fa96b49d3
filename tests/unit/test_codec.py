"""A step's payload (tutor/engine/codec.py): JSON, then the tensors' bytes in one blob."""

from __future__ import annotations

import json

import pytest
import torch

from tutor.engine import codec


def round_trip(value):
    tree, blob = codec.encode(value)
    message, got_blob = codec.unpack_payload(codec.pack_payload({"outputs": tree}, blob))
    return codec.decode(message["outputs"], got_blob)


@pytest.mark.parametrize(
    "dtype",
    [
        torch.float32,
        torch.float64,
        torch.float16,
        torch.bfloat16,
        torch.int64,
        torch.int8,
        torch.uint8,
        torch.bool,
    ],
)
def test_tensors_come_back_equal_whatever_their_dtype(dtype):
    g = torch.Generator().manual_seed(1)
    # Odd sizes first, so that the later tensors start at offsets that need the 8-byte padding.
    values = [
        (torch.randn(3, generator=g) * 5).to(dtype),
        (torch.randn(2, 5, 7, generator=g) * 5).to(dtype),
    ]
    got = round_trip(values)
    assert isinstance(got, list) and len(got) == 2
    for want, came in zip(values, got, strict=False):
        assert came.dtype == dtype and came.shape == want.shape
        assert torch.equal(came, want)


def test_structure_views_and_empty_tensors():
    x = torch.arange(12.0).reshape(3, 4)
    value = {
        "pair": (x.T, x[1:, ::2]),
        "empty": torch.zeros(0, 4),
        "scalar": torch.tensor(2.5),
        "size": torch.Size([2, 3]),
        "nan": float("nan"),
        "text": "ok",
        "none": None,
    }
    got = round_trip(value)
    assert torch.equal(got["pair"][0], x.T) and torch.equal(got["pair"][1], x[1:, ::2])
    assert got["empty"].shape == (0, 4) and got["scalar"].item() == 2.5
    assert got["size"] == torch.Size([2, 3]) and isinstance(got["pair"], tuple)
    assert got["nan"] != got["nan"] and got["text"] == "ok" and got["none"] is None


def test_a_tensor_pointing_outside_the_blob_is_refused():
    tree, blob = codec.encode(torch.ones(4))
    with pytest.raises(ValueError):
        codec.decode(tree, blob[:8])
    tree["__tensor__"] = -8
    with pytest.raises(ValueError):
        codec.decode(tree, blob)


@pytest.mark.parametrize("payload", [b"", b"\x00\x00", b"\x00\x00\x01\x00{}", b"\x00\x00\x00\x02{"])
def test_bytes_that_are_not_a_payload_are_refused(payload):
    with pytest.raises(ValueError):
        codec.unpack_payload(payload)


def test_the_json_part_carries_no_tensor_bytes():
    tree, blob = codec.encode({"w": torch.ones(1000)})
    assert len(blob) == 4000
    assert len(json.dumps(tree)) < 100


class _Sealed(tuple):
    def __iter__(self):
        raise RuntimeError("no iter")

    def __getitem__(self, i):
        raise RuntimeError("no getitem")

    def __len__(self):
        return 99


class _SealedDict(dict):
    def items(self):
        return [("forged", 1)]

    def __iter__(self):
        raise RuntimeError("no iter")

    def __getitem__(self, key):
        raise RuntimeError("no getitem")


class _SealedList(list):
    def __iter__(self):
        return iter(["forged"])


def test_subclasses_of_tuple_list_and_dict_come_as_their_base_type_with_what_they_hold():
    import collections

    Pair = collections.namedtuple("Pair", "out weights")
    x = torch.arange(4.0)
    got = round_trip(
        {
            "pair": Pair(x, x * 2),
            "sealed": _Sealed((1, 2)),
            "list": _SealedList([3, 4]),
            "ordered": collections.OrderedDict(a=(1, 2)),
            "dict": _SealedDict(b=5),
        }
    )
    assert type(got["pair"]) is tuple and torch.equal(got["pair"][1], x * 2)
    assert got["sealed"] == (1, 2) and type(got["sealed"]) is tuple
    assert got["list"] == [3, 4] and type(got["list"]) is list
    assert got["ordered"] == {"a": (1, 2)} and type(got["ordered"]) is dict
    assert got["dict"] == {"b": 5}


def test_an_object_only_claiming_to_be_a_tuple_stays_opaque():
    class Liar:
        __class__ = property(lambda self: tuple)

    got = round_trip(Liar())
    assert isinstance(got, codec.Opaque)
