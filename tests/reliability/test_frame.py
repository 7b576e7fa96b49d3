"""The result frame (codec.FrameReader): only bytes carrying the job's token count, wherever
they start and however the pipe splits them; anything before is set aside as text."""

from __future__ import annotations

import os

from tutor.engine.codec import MAGIC, FrameReader, pack_frame


def feed_in_pieces(reader: FrameReader, data: bytes, size: int) -> None:
    for i in range(0, len(data), size):
        reader.feed(data[i : i + size])


def test_frame_after_junk_and_forgeries_split_anywhere():
    token = os.urandom(16)
    forged = pack_frame(os.urandom(16), b'{"outputs": "forged"}')  # a frame with another token
    junk = b"Fatal Python error: ...\n" + forged + MAGIC + b"half a head"
    real = pack_frame(token, b'{"outputs": "real"}')
    for size in (1, 3, 7, 64, 1 << 20):
        reader = FrameReader(token)
        feed_in_pieces(reader, junk + real + b"trailing writes are ignored", size)
        assert reader.payload == b'{"outputs": "real"}', size
        assert reader.before().startswith("Fatal Python error")


def test_no_frame_keeps_everything_as_text():
    reader = FrameReader(os.urandom(16))
    feed_in_pieces(reader, b'Stack (most recent call first):\n  File "f.py", line 3 in g\n', 5)
    assert reader.payload is None
    assert reader.before().endswith("line 3 in g\n")


def test_an_oversized_length_is_refused_without_buffering_it():
    token = os.urandom(16)
    reader = FrameReader(token)
    reader.feed(MAGIC + token + (1 << 62).to_bytes(8, "big") + b"x" * 100)
    assert reader.too_big and reader.payload is None
