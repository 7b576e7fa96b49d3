"""docs/gradescope/setup.sh (issue #29, 4): torch==2.13.0 is installed before the tutor, so that
the tutor's own requirement cannot pull a CUDA build; the README section it cites exists.
Run with stand-ins for apt-get, python3 and pip that record what they are asked."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SETUP = ROOT / "docs" / "gradescope" / "setup.sh"

FAKE_PYTHON = """#!/usr/bin/env bash
# python3 -m venv DIR: a venv whose pip and attn-tutor write their arguments to the log.
[ "$1" = -m ] && [ "$2" = venv ] || exit 1
mkdir -p "$3/bin"
for tool in pip attn-tutor; do
  printf '#!/usr/bin/env bash\\necho "%s $*" >> "$FAKE_LOG"\\n' "$tool" > "$3/bin/$tool"
  chmod +x "$3/bin/$tool"
done
"""


def _run_setup(tmp_path: Path, **env) -> list[str]:
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "python3").write_text(FAKE_PYTHON)
    (bin_dir / "apt-get").write_text('#!/usr/bin/env bash\necho "apt-get $*" >> "$FAKE_LOG"\n')
    for tool in bin_dir.iterdir():
        tool.chmod(0o755)
    log = tmp_path / "log"
    proc = subprocess.run(
        ["bash", str(SETUP)],
        env=dict(
            os.environ,
            PATH=f"{bin_dir}:{os.environ['PATH']}",
            AUTOGRADER_ROOT=str(tmp_path / "autograder"),
            FAKE_LOG=str(log),
            **env,
        ),
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    return log.read_text().splitlines()


def test_torch_is_pinned_and_installed_before_the_tutor(tmp_path):
    installs = [line for line in _run_setup(tmp_path) if line.startswith("pip install")]
    torch = [i for i, line in enumerate(installs) if re.search(r"\btorch==2\.13\.0\b", line)]
    tutor = [i for i, line in enumerate(installs) if line.rstrip().endswith("/source/attn-tutor")]
    assert torch and tutor and torch[0] < tutor[0], installs
    assert "--index-url" not in installs[torch[0]]  # none unless asked


def test_a_cpu_wheel_index_can_be_given(tmp_path):
    installs = [line for line in _run_setup(tmp_path, ATTN_TORCH_INDEX="file:///wheels/cpu")]
    assert any("--index-url file:///wheels/cpu torch==2.13.0" in line for line in installs)


def test_the_readme_section_it_cites_exists():
    cited = re.findall(r'README, "([^"]+)"', SETUP.read_text())
    assert cited
    headings = {
        line.lstrip("#").strip()
        for line in (ROOT / "README.md").read_text().splitlines()
        if line.startswith("#")
    }
    assert set(cited) <= headings, (cited, headings)
