"""The content-level editJudge of seed 004 as pure functions: prompt in, parsed match out.

:func:`render_matcher_prompt` builds the chat messages for one reference sentence and one
draft; :func:`parse_matcher_reply` turns the model's reply into log columns (``match``,
``error_flag``, ``error_message``) without ever raising. No network here: the runner sends the messages, and
:func:`hce.stats.editf1.edit_counts_from_matches` counts the results.
"""

from __future__ import annotations

import re
from typing import Any

from hce.collect.design.prompts import Messages

NO_MATCH = "NO MATCH"

SYSTEM_PROMPT = (
    "You compare a sentence written by an expert clinician with a draft reply to the same "
    "patient message. Find the content of the draft that matches the sentence: the expert "
    "clinician would not have to rewrite this content in order to achieve the same meaning "
    "as their given sentence. Copy that content from the draft exactly, character for "
    f'character, and output nothing else. If no content of the draft matches, output "{NO_MATCH}".'
)

_FENCE = re.compile(r"^```[a-zA-Z]*\s*|\s*```$")
_QUOTES = "\"'\u201c\u201d\u2018\u2019`"


def _result(match: str | None, error: str | None = None) -> dict[str, Any]:
    return {"match": match, "error_flag": error is not None, "error_message": error}


def render_matcher_prompt(sentence: str, draft: str) -> Messages:
    """Chat messages asking for the draft content that matches one reference sentence.

    The wording of the instruction is the matching criterion seed 004 gave its annotators
    (Appendix C.1).

    Parameters
    ----------
    sentence : str
        One sentence of the expert-written response.
    draft : str
        The whole drafted response.

    Returns
    -------
    list of dict
        ``[{"role": "system", ...}, {"role": "user", ...}]`` for an OpenAI-compatible
        chat completion.

    Examples
    --------
    >>> msgs = render_matcher_prompt("Any fever?", "Do you have a fever? Rest well.")
    >>> [m["role"] for m in msgs]
    ['system', 'user']
    """
    user = f"Clinician sentence:\n{sentence.strip()}\n\nDraft response:\n{draft.strip()}\n\nMatching content:"
    return [{"role": "system", "content": SYSTEM_PROMPT}, {"role": "user", "content": user}]


def parse_matcher_reply(reply: str | None, draft: str) -> dict[str, Any]:
    """Parse a matcher reply into a span of ``draft`` or "no match"; never raises.

    Code fences, surrounding quotes and a leading ``Matching content:`` are stripped. The
    span must occur in the draft, verbatim or differing only in case and spacing; the
    draft's own text is returned so it can be removed from the draft (Algorithm 1 line 10).

    Parameters
    ----------
    reply : str or None
        The model's reply text.
    draft : str
        The draft the reply should quote.

    Returns
    -------
    dict
        ``match``: the span as it appears in the draft, or None for "NO MATCH" and for
        errors; ``error_flag``: True when the reply is unusable (empty, or not a span of the
        draft); ``error_message``: why, else None. The same convention as
        :mod:`hce.collect.call.parse`.

    Examples
    --------
    >>> parse_matcher_reply('"do you have a  fever?"', "Do you have a fever? Rest well.")
    {'match': 'Do you have a fever?', 'error_flag': False, 'error_message': None}
    >>> parse_matcher_reply("NO MATCH.", "Rest well.")["match"] is None
    True
    >>> parse_matcher_reply("Take ibuprofen.", "Rest well.")["error_flag"]
    True
    """
    if not isinstance(reply, str) or not reply.strip():
        return _result(None, "empty reply")
    text = _FENCE.sub("", reply.strip()).strip()
    text = re.sub(r"^matching content\s*:\s*", "", text, flags=re.IGNORECASE).strip()
    text = text.strip(_QUOTES).strip()
    if re.fullmatch(r"no[ _-]?match\W*", text, flags=re.IGNORECASE):
        return _result(None)
    draft = draft if isinstance(draft, str) else ""
    if text and text in draft:
        return _result(text)
    words = text.split()
    found = re.search(r"\s+".join(map(re.escape, words)), draft, flags=re.IGNORECASE) if words else None
    if found:
        return _result(found.group(0))
    shown = text if len(text) <= 80 else text[:77] + "..."
    return _result(None, f"reply is not a span of the draft: {shown!r}")
