"""Model families: which model names one provider's models share, for self-preference (issue 47).

Both the simulated judge (``hce.sim.biases``, planting a self-preference) and
:func:`hce.stats.probe_effect` (measuring it) group model names this one way.
"""

from __future__ import annotations

import re

from hce._vocabulary import keywords_checked

#: Model-name patterns (``re.match``, lower case) -> the family a self-preference test groups them in.
FAMILY_PATTERNS: tuple[tuple[str, str], ...] = (
    (r"(gpt|o\d|chatgpt|text-davinci|openai)", "openai"),
    (r"(claude|anthropic)", "anthropic"),
    (r"(gemini|gemma|palm|google)", "google"),
    (r"(llama|meta)", "meta"),
    (r"(mistral|mixtral|ministral|codestral)", "mistral"),
    (r"(qwen|qwq)", "qwen"),
    (r"deepseek", "deepseek"),
)


@keywords_checked
def model_family(model: object) -> str:
    """The family of a model name, for self-preference: ``gpt-4o`` and ``o3`` are both ``openai``.

    A name no pattern of ``FAMILY_PATTERNS`` matches is its own family (its text before the
    first ``-``, ``:``, ``_`` or ``.``: ``acme-7b`` is ``acme``).

    Parameters
    ----------
    model : str
        A model name, with or without a provider prefix (``ollama/llama3``).

    Returns
    -------
    str
        The family's name.

    Examples
    --------
    >>> from hce.stats import model_family
    >>> model_family("gpt-4o-2024-08-06"), model_family("o4-mini"), model_family("claude-3-5-sonnet")
    ('openai', 'openai', 'anthropic')
    >>> model_family("ollama/llama3.1:8b"), model_family("acme-7b")
    ('meta', 'acme')
    """
    name = str(model).strip().lower().rsplit("/", 1)[-1]
    for pattern, family in FAMILY_PATTERNS:
        if re.match(pattern, name):
            return family
    return re.split(r"[-:_.\s]", name, maxsplit=1)[0] or name
