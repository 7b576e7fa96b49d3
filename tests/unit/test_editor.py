"""`e` opens the learner's file at the current step's function, in the way each editor takes a line."""

from pathlib import Path

import pytest

from tutor.workspace.editor import editor_command, function_line

SOURCE = "import torch\n\n\ndef causal_attention(x):\n    pass\n\n\nclass CausalMultiHeadAttention:\n    pass\n"
FILE = Path("/w/attn-lab/lm3_l3.py")


def test_the_line_is_the_steps_first_definition():
    assert function_line(SOURCE, ("causal_attention",)) == 4
    assert function_line(SOURCE, ("CausalMultiHeadAttention",)) == 8
    assert function_line(SOURCE, ()) is None and function_line("def (:", ("f",)) is None


@pytest.mark.parametrize(
    "editor, argv",
    [
        ("vim", ["vim", "+8", str(FILE)]),
        ("/usr/bin/nano -w", ["/usr/bin/nano", "-w", "+8", str(FILE)]),
        ("emacsclient -t", ["emacsclient", "-t", "+8", str(FILE)]),
        ("code --wait", ["code", "--wait", "-g", f"{FILE}:8"]),
        ("subl -w", ["subl", "-w", f"{FILE}:8"]),
        ("ed", ["ed", str(FILE)]),  # unknown: the file only
    ],
)
def test_each_editor_gets_the_line_its_way(editor, argv):
    assert editor_command(editor, FILE, 8) == argv


def test_without_a_line_the_file_opens_at_its_top():
    assert editor_command("vim", FILE, None) == ["vim", str(FILE)]
