"""Word counts of a manuscript's abstract and main text, as journals count them.

Example
-------
>>> from hce.report.manuscript.model import Manuscript, Heading, Paragraph, Number, Placeholder
>>> doc = Manuscript("T", [
...     Heading(1, "Abstract"), Paragraph(["ICC was ", Number("0.91", "t.csv#row=a;col=b"), "."], role="abstract"),
...     Heading(1, "Introduction"), Paragraph([Placeholder("why it matters")]),
...     Paragraph(["Judges vary (P = .01)."]),
... ])
>>> word_counts(doc)
{'abstract_words': 3, 'main_words': 4}
"""

from __future__ import annotations

import re

from hce.errors import HceError
from hce.report.manuscript.files import lines
from hce.report.manuscript.model import (
    Bullets,
    Heading,
    Manuscript,
    Number,
    Paragraph,
    Placeholder,
)

_WORD = re.compile(r"\w")
ROLES = ("body", "abstract", "note")
#: Headings (any level) whose blocks are references, not main text.
REFERENCE_HEADINGS = ("references", "bibliography")


def word_counts(doc: Manuscript) -> dict[str, int]:
    """``abstract_words`` and ``main_words`` of a manuscript.

    A word is a run of non-space characters with a letter or digit in it (``P = .01`` is two
    words, the lone ``=`` none; a :class:`~hce.report.manuscript.model.Number` printed as
    ``0.41 [0.20, 0.60]`` is three). Placeholders are not counted: they are text still to be
    written.

    The abstract is every paragraph and bullet item of role ``"abstract"``. The main text, as
    JAMA counts it, is every paragraph and bullet item of role ``"body"``; so not the title,
    authors, headings, abstract, notes (role ``"note"``: Key Points, statements), tables with
    their captions and notes, figure captions, nor anything under a heading named References or
    Bibliography (until the next heading of the same or a higher level).

    Examples
    --------
    >>> from hce.report.manuscript.model import Manuscript, Heading, Paragraph
    >>> doc = Manuscript("T", [Paragraph(["One two three."]), Heading(1, "References"), Paragraph(["Smith J."])])
    >>> word_counts(doc)
    {'abstract_words': 0, 'main_words': 3}
    """
    counts = {"abstract": 0, "body": 0}
    references_level = None  # level of the References heading we are under, if any
    for i, block in enumerate(doc.blocks):
        if isinstance(block, Heading):
            if references_level is not None and block.level <= references_level:
                references_level = None
            if block.text.strip().lower() in REFERENCE_HEADINGS:
                references_level = block.level
            continue
        if not isinstance(block, (Paragraph, Bullets)):
            continue
        if block.role not in ROLES:
            raise HceError(f"block {i} ({type(block).__name__}): role {block.role!r} is not one of {', '.join(ROLES)}")
        if references_level is not None or block.role not in counts:
            continue
        for parts in lines(block):
            # a placeholder is a gap: "vary [[AUTHOR: ...]]." leaves "vary" and a lone "."
            text = "".join(p.text if isinstance(p, Number) else " " if isinstance(p, Placeholder) else p for p in parts)
            counts[block.role] += sum(1 for word in text.split() if _WORD.search(word))
    return {"abstract_words": counts["abstract"], "main_words": counts["body"]}
