"""What a step's mark says, in the app and in `attn-tutor list`: one rule for every lesson. Pure.

- a checked step: its verdict (pass, fail, ...);
- a step with questions (a reflection, lab-02's exercises): passed once every question has an
  answer, to do before; visiting it or running its code says nothing about the answers;
- an experiment without questions: how its run on the learner's code went (it counts for nothing).
"""

from __future__ import annotations

from collections.abc import Mapping

from tutor.model.lesson import Step


def question_count(step: Step) -> int:
    return max((len(v) for v in step.questions.values()), default=0)


def answered_count(step: Step, answers: Mapping[int, str]) -> int:
    """How many of the step's questions have an answer that is not blank."""
    return sum(1 for i, a in answers.items() if i < question_count(step) and a.strip())


def step_status(step: Step, run_status: str | None, answers: Mapping[int, str]) -> str | None:
    """The status a step's mark shows. run_status: its last result (None: never run)."""
    if step.checked or not step.questions:
        return run_status
    return "pass" if answered_count(step, answers) == question_count(step) else "todo"
