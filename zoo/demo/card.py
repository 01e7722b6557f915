"""The card summary at the top of every demo page: what the model does, under which licence, from what."""

from __future__ import annotations

import html

from zoo.registry import ModelEntry


def card_summary(entry: ModelEntry, source: str | None = None) -> str:
    """Markdown: the entry's name and task, then licence, base model, paper and where the weights came from."""
    paper = f"[arXiv:{entry.paper}](https://arxiv.org/abs/{entry.paper})" if entry.paper else "none"
    licence = entry.license + (f" (code: {entry.code_license})" if entry.code_license else "")
    # entries' texts may hold angle brackets ("a <colour> square"): shown as written, not read as HTML
    rows = [("task", html.escape(entry.task)), ("licence", html.escape(licence)),
            ("base", html.escape(entry.base_model)), ("paper", paper), ("kind", entry.kind)]  # fmt: skip
    if source:
        rows.append(("weights", html.escape(source)))
    facts = " · ".join(f"**{key}** {value}" for key, value in rows)
    return f"# {entry.name}\n\n{facts}\n"
