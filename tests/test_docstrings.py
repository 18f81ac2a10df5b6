"""Issue 36, item 1: no docstring contradicts its code.

Every public name of :mod:`hce`, :mod:`hce.stats`, :mod:`hce.study`, :mod:`hce.report` and
:mod:`hce.collect` is parsed with numpydoc and held to its signature:

* functions and public methods: the Parameters section names the signature's arguments, in
  order, no more and no fewer; a Returns (or Yields) section unless the function returns None;
  an Examples section (functions; methods may lean on their class's);
* classes: every constructor argument is documented under Parameters or Attributes, every
  public method and property has a docstring, and an Examples section;
* the estimators and tests of :mod:`hce.stats`: a References section (the paper or R function);
* the shared arguments (``error``, ``random_state``) say what :data:`hce._docstrings.FRAGMENTS`
  says, written once and put in place by :func:`hce._docstrings.fill_doc`.

The failure message lists every problem, one line each (``name: what is missing``), so a branch
that adds a public name sees at once what its docstring lacks.
"""

from __future__ import annotations

import importlib
import inspect
import re
import textwrap
import warnings

import sys
from pathlib import Path

import pytest
from numpydoc.docscrape import ClassDoc, FunctionDoc, NumpyDocString

from hce._docstrings import FRAGMENTS

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "docs" / "_ext"))
from hce_api import public_signature  # noqa: E402

MODULES = ("hce", "hce.stats", "hce.study", "hce.report", "hce.collect")

#: Public functions of hce.stats that estimate nothing and test nothing (no References needed),
#: each with what it is instead.
NOT_ESTIMATORS: dict[str, str] = {
    "annotator_pairs": "reshapes annotations into pairs",
    "binarize_likert": "recodes a scale",
    "build_design": "builds model matrices from a formula",
    "code_frequencies": "counts codes per condition",
    "model_family": "names the family of a model name",
    "confidence_table": "tabulates confidences",
    "count_sentences": "counts sentences",
    "edit_counts_from_matches": "counts matched sentences",
    "edit_counts_table": "tabulates edit counts",
    "item_spread": "the SD/range of each item's repeated scores, a descriptive table",
    "majority_vote": "aggregates votes",
    "mean_score_ensemble": "aggregates scores",
    "normalize_likert": "rescales a scale",
    "parse_formula": "parses a formula",
    "sentence_table": "splits texts into a sentence table",
    "split_sentences": "splits a text",
    "spread_summary": "describes item_spread's table",
    "vote_stability": "describes how votes settle over attempts",
    "uncertain_routing": "routes items on a threshold",
    "simulated_log": "simulates a log with known truth",
}

#: Shared arguments whose text lives once in hce._docstrings.FRAGMENTS (argument: fragment).
#: A function may add what is its own in lines under the shared text.
SHARED = {"error": "error", "random_state": "random_state", "confidence": "confidence", "n_boot": "n_boot"}
#: Where a shared argument means something else, with what (name: argument -> meaning).
SHARED_OTHER = {
    "hce.stats.BayesResult.ppc": {"random_state": "None reuses the fit's seed",
                                  "confidence": "the mass of a posterior (credible) interval"},
    "hce.stats.BayesResult.plot_ppc": {"random_state": "as ppc"},
    **{f"hce.stats.BayesResult.{m}": {"confidence": "the mass of a posterior (credible) interval"}
       for m in ("summary", "expected", "expected_pairs", "noise", "noise_pairs", "items")},
    "hce.stats.simulated_log": {"random_state": "default 0: example data, the same log on every call"},
}


def public_objects() -> dict[str, object]:
    """Every public function and class of MODULES, under the first name it is exported by."""
    seen, found = set(), {}
    for module_name in MODULES:
        module = importlib.import_module(module_name)
        for name in module.__all__:
            obj = getattr(module, name)
            if (inspect.isfunction(obj) or inspect.isclass(obj)) and id(obj) not in seen:
                seen.add(id(obj))
                found[f"{module_name}.{name}"] = obj
    return found


def _documented(doc: NumpyDocString, sections=("Parameters", "Other Parameters")) -> list[str]:
    return [name.strip() for section in sections for names, _, _ in doc[section] for name in names.split(",")]


def _signature(func, *, skip_private: bool = False) -> list[str]:
    stars = {inspect.Parameter.VAR_POSITIONAL: "*", inspect.Parameter.VAR_KEYWORD: "**"}
    names = [stars.get(p.kind, "") + p.name for p in inspect.signature(func).parameters.values()]
    names = [n for n in names if n not in ("self", "cls")]
    return [n for n in names if not (skip_private and n.startswith("_"))]


def _returns_value(func) -> bool:
    annotation = inspect.signature(func).return_annotation
    return annotation not in (None, "None")


def _parse(kind, obj, name: str, problems: list[str]):
    with warnings.catch_warnings(record=True) as caught:  # numpydoc warns of unknown sections
        warnings.simplefilter("always")
        doc = kind(obj, config={"show_class_members": False}) if kind is ClassDoc else kind(obj)
    problems += [f"{name}: {w.message}".split(" in the docstring of")[0] for w in caught]
    return doc


def function_problems(name: str, func, *, examples: bool = True) -> list[str]:
    """What ``func``'s docstring lacks or gets wrong, one string each."""
    if not (func.__doc__ or "").strip():
        return [f"{name}: no docstring"]
    problems: list[str] = []
    doc = _parse(FunctionDoc, func, name, problems)
    documented, signature = _documented(doc), _signature(func)
    if missing := [p for p in signature if p not in documented]:
        problems.append(f"{name}: Parameters lacks {missing}")
    if unknown := [p for p in documented if p not in signature]:
        problems.append(f"{name}: Parameters documents {unknown}, which the signature does not take")
    if not missing and not unknown and documented != signature:
        problems.append(f"{name}: Parameters in the order {documented}, the signature's is {signature}")
    if _returns_value(func) and not (doc["Returns"] or doc["Yields"]):
        problems.append(f"{name}: no Returns section")
    if examples and not doc["Examples"]:
        problems.append(f"{name}: no Examples section")
    for argument, fragment in SHARED.items():
        # an entry grouping several arguments refers to another function's ("As in ...")
        text = next(("\n".join(d) for names, _, d in doc["Parameters"] if names == argument), None)
        if argument in SHARED_OTHER.get(name, {}):
            continue
        if text is not None and not text.strip().startswith(_fragment_description(fragment)):
            problems.append(f"{name}: {argument} must read as the shared text: write %({fragment})s in its place, "
                            f"under @fill_doc (hce._docstrings)")
    return problems


def _fragment_description(fragment: str) -> str:
    lines = FRAGMENTS[fragment].splitlines()
    return textwrap.dedent("\n".join(lines[1:])).strip()


def class_problems(name: str, cls: type) -> list[str]:
    """What a class's docstring lacks: its arguments, Examples, and each public member's docstring."""
    if not (cls.__doc__ or "").strip():
        return [f"{name}: no docstring"]
    if issubclass(cls, BaseException):
        return []  # an error's docstring says when it is raised; it takes a message
    problems: list[str] = []
    doc = _parse(ClassDoc, cls, name, problems)
    # a subclass's docstring need not repeat the fields its hce base class documents
    documented = [p for base in cls.__mro__ if base.__module__.startswith("hce") for p in
                  _documented(ClassDoc(base, config={"show_class_members": False}), ("Parameters", "Other Parameters", "Attributes"))]
    if missing := [p for p in _signature(cls, skip_private=True) if p not in documented]:
        problems.append(f"{name}: neither Parameters nor Attributes documents {missing}")
    if not doc["Examples"]:
        problems.append(f"{name}: no Examples section")
    for member, value in vars(cls).items():
        if member.startswith("_"):
            continue
        if isinstance(value, property):
            if not (value.__doc__ or "").strip():
                problems.append(f"{name}.{member}: a property without a docstring")
        elif isinstance(value, (staticmethod, classmethod)) or inspect.isfunction(value):
            func = value.__func__ if isinstance(value, (staticmethod, classmethod)) else value
            problems += function_problems(f"{name}.{member}", func, examples=False)
    return problems


def references_problems(name: str, func) -> list[str]:
    short = name.rpartition(".")[2]
    if not name.startswith("hce.stats.") or short in NOT_ESTIMATORS or not inspect.isfunction(func):
        return []
    if FunctionDoc(func)["References"]:
        return []
    return [f"{name}: no References section (an estimator or test cites its paper or R function; "
            f"else list it in NOT_ESTIMATORS with what it is)"]


def all_problems() -> list[str]:
    problems = []
    for name, obj in public_objects().items():
        problems += class_problems(name, obj) if inspect.isclass(obj) else function_problems(name, obj)
        problems += references_problems(name, obj)
    return problems


def test_the_walk_sees_every_public_layer():
    names = public_objects()
    assert {"hce.read_log", "hce.stats.icc", "hce.stats.LmerResult", "hce.study.experiment2",
            "hce.report.report", "hce.collect.run"} <= set(names)


def test_every_public_docstring_matches_its_code():
    problems = all_problems()
    assert not problems, (f"{len(problems)} docstring problem(s) (numpydoc sections; see tests/test_docstrings.py):\n"
                          + "\n".join(problems))


@pytest.mark.parametrize("fragment", sorted(set(SHARED.values())))
def test_each_shared_argument_is_written_once(fragment):
    assert FRAGMENTS[fragment].startswith(f"{fragment} :"), "a shared argument fragment starts with its name"


def test_class_pages_hide_private_fields():
    """Item 2: a result class's page shows no ``_beta``-like constructor argument."""
    shown = {}
    for name, obj in public_objects().items():
        if inspect.isclass(obj):
            try:
                signature = str(inspect.signature(obj))
            except ValueError:  # an exception class: no signature of its own
                continue
            changed = public_signature(None, "class", name, obj, {}, signature, None)
            shown[name] = changed[0] if changed else signature
    assert "_beta" not in shown["hce.stats.LmerResult"] and "design" in shown["hce.stats.LmerResult"]
    leaks = {name: s for name, s in shown.items() if s and "(_" in s.replace(", _", "(_")}
    assert not leaks, leaks


def test_public_docstrings_name_their_sources_in_words():
    """Issue 36, item 6: the API pages cite the paper or the protocol, not the project's own
    file names for them ("seed 004, Table 3")."""
    shorthand = re.compile(r"[Ss]eed 00\d")
    found = []
    for name, obj in public_objects().items():
        members = vars(obj).items() if inspect.isclass(obj) else ()
        for where, doc in [(name, obj.__doc__), *((f"{name}.{k}", getattr(v, "__doc__", None)) for k, v in members
                                                   if not k.startswith("_"))]:
            found += [f"{where}: {m.group(0)!r}" for m in shorthand.finditer(doc or "")]
    for module in MODULES:
        summary = (importlib.import_module(module).__doc__ or "").split("\n\n")[0]
        found += [f"{module} (module): {m.group(0)!r}" for m in shorthand.finditer(summary)]
    assert not found, "\n".join(found)


def test_shared_arguments_state_the_signatures_default():
    """``%(confidence)s`` and ``%(n_boot)s`` take the default from the signature (fill_doc), so
    ``cfa``'s 0.9 and ``efa``'s 0 resamples are stated as the code has them."""
    wrong = []
    for name, obj in public_objects().items():
        functions = [(name, obj)] if inspect.isfunction(obj) else [
            (f"{name}.{k}", v) for k, v in vars(obj).items() if inspect.isfunction(v) and not k.startswith("_")]
        for where, func in functions:
            parameters = inspect.signature(func).parameters
            for names, kind, _ in FunctionDoc(func)["Parameters"]:
                if names in ("confidence", "n_boot") and "default" in kind:
                    stated = kind.split("default", 1)[1].strip()
                    default = parameters[names].default
                    if stated != str(default) and not (isinstance(default, float) and stated == f"{default:.2f}"):
                        wrong.append(f"{where}: {names} documented '{kind}', the signature's default is {parameters[names].default}")
    assert not wrong, "\n".join(wrong)


def test_fixed_strings_name_their_sources_in_words():
    """Issue 36, item 6: text hce puts in results, reports and errors says what it cites ("the
    EditJudge paper's strict agreement"), never the project's file names for its sources
    ("seed 004"); the PRD's numbered success metrics are named so only in the PRD study (hce.study)."""
    import ast

    package = Path(__file__).resolve().parents[1] / "hce"
    found = []
    for path in sorted(package.rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docstrings = {id(n.body[0].value) for n in ast.walk(tree)
                      if isinstance(n, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
                      and n.body and isinstance(n.body[0], ast.Expr) and isinstance(n.body[0].value, ast.Constant)}
        study = path.is_relative_to(package / "study")
        shorthand = re.compile(r"[Ss]eeds?[ /]00\d" + ("" if study else r"|Success Metric \d"))
        found += [f"{path.relative_to(package.parent)}:{n.lineno}: {m.group(0)!r}" for n in ast.walk(tree)
                  if isinstance(n, ast.Constant) and isinstance(n.value, str) and id(n) not in docstrings
                  for m in shorthand.finditer(n.value)]
    assert not found, "\n".join(found)
