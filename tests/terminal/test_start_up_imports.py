"""What the UI process really imports, run as a learner runs it: the app in a real terminal,
and `attn-tutor check`. Neither ever loads torch or numpy; their worker does.

The static contracts (tests/unit/test_import_contracts.py) see this package's imports only; a
run also sees what Textual, Rich and watchfiles import, and imports made by name at run time.
Every import of every process is recorded by a finder that a sitecustomize module puts first
on sys.meta_path (the worker and its children inherit PYTHONPATH, so they record too).
"""

import json
import os
import pty
import shutil
import subprocess
import sys
import time
from pathlib import Path

from pty_kit import read_for

from tutor.text.i18n import t

ROOT = Path(__file__).resolve().parents[2]

RECORDER = '''
import os, sys

class _Recorder:
    """Writes "pid module" for each module a process looks for, then lets the others find it."""

    def find_spec(self, name, path=None, target=None):
        try:  # opened each time: the worker closes inherited descriptors and reuses the numbers
            fd = os.open(_LOG, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
            try:
                os.write(fd, f"{os.getpid()} {name}\\n".encode())
            finally:
                os.close(fd)
        except Exception:  # a sandboxed child may not write: the import goes on regardless
            pass
        return None

_LOG = os.environ.get("ATTN_TEST_IMPORT_LOG")
if _LOG:
    sys.meta_path.insert(0, _Recorder())
'''


def recording_env(tmp_path: Path) -> dict:
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(RECORDER)
    return dict(
        os.environ,
        PYTHONPATH=f"{hook}{os.pathsep}{ROOT}",
        ATTN_TEST_IMPORT_LOG=str(tmp_path / "imports.log"),
        TERM="xterm-256color",
        LANG="C.UTF-8",
    )


def imports_by_process(tmp_path: Path) -> dict[int, set[str]]:
    found: dict[int, set[str]] = {}
    for line in (tmp_path / "imports.log").read_text().splitlines():
        pid, name = line.split(" ", 1)
        found.setdefault(int(pid), set()).add(name)
    return found


def packages(names: set[str]) -> set[str]:
    return {n.split(".")[0] for n in names}


def workspace(tmp_path: Path) -> Path:
    work = tmp_path / "work"
    (work / "attn-lab").mkdir(parents=True)
    shutil.copy(
        ROOT / "reference" / "lm3_l3.py", work / "attn-lab" / "lm3_l3.py"
    )  # every step passes
    return work


def test_the_app_never_imports_torch_or_numpy(tmp_path):
    work, env = workspace(tmp_path), recording_env(tmp_path)
    pid, fd = pty.fork()
    if pid == 0:  # the child: the real app in a real terminal
        os.chdir(work)
        os.execve(sys.executable, [sys.executable, "-m", "tutor", "--lang", "en"], env)
    try:
        done = t(
            "ui.progress", "en", passed=4, total=4
        ).encode()  # the progress line once all passed
        screen, deadline = b"", time.monotonic() + 60
        while done not in screen and time.monotonic() < deadline:
            screen += read_for(fd, 0.2)
        assert done in screen, "the app never showed the verdicts"
        # What is imported on demand: the heatmap, help, the reset confirmation, the other
        # language, every step, an answer editor.
        for key in [
            b"w",
            b"d",
            b"?",
            b"\x1b",
            b"R",
            b"\x1b",
            b"l",
            b"l",
            b"n",
            b"n",
            b"n",
            b"n",
            b"n",
            b"1",
            b"\x1b",
        ]:
            os.write(fd, key)
            read_for(fd, 0.3)
        os.write(fd, b"q")
        read_for(fd, 5)
        _, status = os.waitpid(pid, 0)
    finally:
        os.close(fd)
    assert os.waitstatus_to_exitcode(status) == 0
    seen = imports_by_process(tmp_path)
    ui = seen.pop(pid)
    assert {
        "tutor.app.app",
        "tutor.app.help",
        "tutor.app.confirm",
        "tutor.app.answer",
        "tutor.render.heatmap",
        "tutor.engine.client",
        "tutor.workspace.watch",
    } <= ui  # all of it ran
    assert "textual" in packages(ui) and "watchfiles" in packages(ui)
    assert "torch" not in packages(ui)
    assert "numpy" not in packages(ui)
    # The recorder does see torch and numpy where they are imported: in the worker.
    assert any({"torch", "numpy"} <= packages(names) for names in seen.values()), sorted(seen)


def test_the_check_command_never_imports_torch_or_numpy(tmp_path):
    work, env = workspace(tmp_path), recording_env(tmp_path)
    proc = subprocess.Popen(
        [sys.executable, "-m", "tutor", "check", "--json"],
        cwd=work,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == 0, err
    report = json.loads(out)
    assert report["passed"] == report["total"] == 4
    seen = imports_by_process(tmp_path)
    cli = seen.pop(proc.pid)
    assert {"tutor.cli.main", "tutor.engine.client", "tutor.text.verdict_text"} <= cli
    assert "torch" not in packages(cli)
    assert "numpy" not in packages(cli)
    assert any({"torch", "numpy"} <= packages(names) for names in seen.values()), sorted(seen)
