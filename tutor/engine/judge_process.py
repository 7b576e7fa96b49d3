"""The judge process's main: forked by the worker before any learner code runs, it reads
requests and child data from its socket and answers each with a verdict (tutor.engine.judge)."""

from __future__ import annotations

import json
import os
import socket
import struct

from tutor.engine import protocol
from tutor.engine.framing import recv_frame, recv_raw
from tutor.paths import mutant_cache_dir


def judge_main(sock: socket.socket, modules: dict, own_keys: dict) -> None:
    import sys

    import torch

    from tutor.engine.judge import Judge, unjudged
    from tutor.kit.source_tools import PARSE_RECURSION_LIMIT

    torch.set_num_threads(1)
    # Any file the child compiled (at child.RECURSION_LIMIT) parses here too, in the kit's
    # parse and in a lesson's checks alike.
    sys.setrecursionlimit(PARSE_RECURSION_LIMIT)
    judge = Judge(modules, own_keys, mutant_cache_dir())
    while True:
        try:
            req = protocol.JudgeRequest.from_json(recv_frame(sock))
            payload = recv_raw(sock)
        except EOFError:
            os._exit(0)
        # Whatever a child's data makes of the judge, it answers: a verdict that says it could
        # not judge this step, never its own death (that would cost the steps queued behind).
        try:
            result = judge.verdict(req.lesson, req.step, payload, req.source, req.views, req.wait)
            reply = protocol.JudgeReply.of(req.job, result).to_json()
            data = json.dumps(reply).encode()
        except Exception as exc:
            reply = protocol.JudgeReply(req.job, unjudged(req.step, exc)).to_json()
            data = json.dumps(reply).encode()
        sock.sendall(struct.pack("!I", len(data)) + data)
