"""The app's answers to a step's questions: the answer box, and the answers file read again and
merged into, so that edits made in the file are never lost.
"""

from __future__ import annotations

import time

from tutor.app.panels import PanelsApp
from tutor.text.i18n import t


class AnswersApp(PanelsApp):
    def open_answer(self, index: int) -> None:
        from tutor.app.answer import AnswerScreen  # TextArea: imported when first asked for

        step = self.step
        questions = step.questions.get(self.lang, ())
        if index >= len(questions):
            return
        self.reread_answers()  # the learner may have edited the file since
        # An answer that could not be saved is offered again, against what the file held then.
        if (step.id, index) in self.unsaved:
            text, base = self.unsaved[(step.id, index)]
        else:
            text = base = self.answers.get(step.id, {}).get(index, "")
        self.push_screen(
            AnswerScreen(index + 1, questions[index], text, self.lang),
            lambda new: self.save_answer(step.id, index, new, base),
        )

    def reread_answers(self) -> None:
        """The answers as the file holds them now: the learner may edit it in their editor.
        Read, not watched: a plain read also sees edits made on NFS, where no event comes."""
        self.answers_checked = time.monotonic()
        answers = self.read_answers()
        for (step, index), (text, _) in self.unsaved.items():
            answers.setdefault(step, {})[index] = text
        if answers != self.answers:
            self.answers = answers
            self.render_main()
            self.render_steps()  # a step's mark says whether its questions are answered

    def save_answer(self, step: str, index: int, text: str | None, base: str) -> None:
        """The answer box closed: merge its text into the file (Store.save_answer keeps what the
        learner wrote there meanwhile; if both changed this answer, both versions go in)."""
        if text is None:
            return
        lang = self.lang

        def both(theirs: str, mine: str) -> str:
            return t("ui.answer_both", lang, file=theirs.strip("\n"), app=mine.strip("\n"))

        try:
            saved = self.store.save_answer(
                self.answer_sheet(), step, index, text, base=base, both=both
            )
        except (OSError, ValueError) as exc:
            self.unsaved[(step, index)] = (text, base)
            self.answers.setdefault(step, {})[index] = text
            self.notify(
                t("ui.os_error", lang, error=getattr(exc, "strerror", None) or exc),
                severity="error",
            )
            self.render_main()
            self.render_steps()
            return
        self.unsaved.pop((step, index), None)
        self.answers = saved.answers
        for (s, i), (unsaved, _) in self.unsaved.items():
            self.answers.setdefault(s, {})[i] = unsaved
        self.answers_checked = time.monotonic()
        if saved.kept_both:
            self.notify(
                t("ui.answer_kept_both", lang, n=index + 1, path=saved.path.name),
                severity="warning",
                timeout=8,
            )
        elif saved.written:
            self.notify(t("ui.answer_saved", lang, path=saved.path.name), timeout=2)
        self.render_main()
        self.render_steps()
