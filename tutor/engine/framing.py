"""Frames between the worker and its judge (a socket pair): a length, then JSON; a child's
payload follows its request as raw bytes, passed on unparsed."""

from __future__ import annotations

import json
import socket
import struct


def send_frame(sock: socket.socket, obj, raw: bytes | None = None) -> None:
    """A JSON object, and after it, if given, raw bytes (a child's payload, passed on unparsed)."""
    data = json.dumps(obj).encode()
    parts = [struct.pack("!I", len(data)), data]
    if raw is not None:
        parts += [struct.pack("!I", len(raw)), raw]
    sock.sendall(b"".join(parts))


def recv_exact(sock: socket.socket, n: int) -> bytes:
    chunks = []
    while n:
        chunk = sock.recv(n)
        if not chunk:
            raise EOFError
        chunks.append(chunk)
        n -= len(chunk)
    return b"".join(chunks)


def recv_raw(sock: socket.socket) -> bytes:
    (n,) = struct.unpack("!I", recv_exact(sock, 4))
    return recv_exact(sock, n)


def recv_frame(sock: socket.socket):
    return json.loads(recv_raw(sock))
