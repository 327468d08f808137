"""Prompt templates of the LLM patcher and the regenerate baseline, kept as data (``*.md``).

Templates use ``string.Template`` placeholders (``$name``), which leave the braces of code
and JSON alone.
"""

from __future__ import annotations

import os
from string import Template

HERE = os.path.dirname(os.path.abspath(__file__))


def template(name: str) -> Template:
    """The template ``agents/prompts/<name>.md``.

    Raises:
        FileNotFoundError: no such template.
    """
    with open(os.path.join(HERE, f"{name}.md")) as f:
        return Template(f.read())
