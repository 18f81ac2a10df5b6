"""Every default is stated in its parameter's text, not only in the rendered signature (issue 49, item 3).

A reader of the API page or of ``help()`` sees the parameter's description; 44 of 89 non-None
defaults of the statistics were stated only in the signature (``friedman``'s ``score="sd"``,
``wilcoxon_paired``'s ``score="mae"``, ``binarize_likert``'s ``threshold=4``).
"""

from __future__ import annotations

import inspect

from numpydoc.docscrape import FunctionDoc

import hce.report
import hce.stats


def default_text(value: object) -> str:
    """A default as the docstrings write it: ``"sd"``, ``0.95``, ``True``, ``()``, :func:`name`."""
    if callable(value):
        return f":func:`{value.__name__}`"
    return f'"{value}"' if isinstance(value, str) else repr(value)


def _forms(value: object) -> set[str]:
    forms = {default_text(value), repr(value), str(value)}
    if isinstance(value, str):
        forms |= {f"'{value}'", f"``{value}``"}
    if callable(value):
        forms.add(value.__name__)
    if isinstance(value, float):
        forms.add(f"{value:g}")
    if isinstance(value, tuple):
        forms |= {repr(list(value)), "()" if not value else str(list(value))}
    return forms


def _public_functions():
    for module in (hce.stats, hce.report):
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.isfunction(obj) or (callable(obj) and not inspect.isclass(obj)):
                yield obj, f"{module.__name__}.{name}"


def documented_defaults_missing() -> list[tuple[object, str, str, object]]:
    """(function, name, parameter, default) for each non-None default its parameter's text does not state."""
    missing = []
    for obj, name in _public_functions():
        entries = {}
        for p in FunctionDoc(obj)["Parameters"]:
            for n in p.name.split(","):
                entries[n.strip().lstrip("*")] = p.type + " " + " ".join(p.desc)
        for p in inspect.signature(obj).parameters.values():
            if p.default is inspect.Parameter.empty or p.default is None:
                continue
            text = entries.get(p.name, "")
            if not any(form in text for form in _forms(p.default)):
                missing.append((obj, name, p.name, p.default))
    return missing


def test_every_default_is_in_the_parameter_text():
    missing = [f"{name}({param}={default_text(default)})" for _, name, param, default in documented_defaults_missing()]
    assert not missing, f"{len(missing)} default(s) stated only in the signature: {missing[:20]}"
