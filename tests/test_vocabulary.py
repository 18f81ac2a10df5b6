"""Issue 26, item 1: every public function speaks the one vocabulary of :mod:`hce._vocabulary`.

The signatures of every public function of :mod:`hce.stats`, and of :mod:`hce.study` and
:mod:`hce.report` that take data, are read with :func:`inspect.signature` and held to the
glossary: no retired argument name, ``data`` first and every later argument keyword-only,
``random_state`` defaulting to None, one bootstrap count (``n_boot``) with one default, the
interval level called ``confidence``. Retired names raise a TypeError naming the new one;
result frames bound ``estimate`` with ``ci_low``/``ci_high`` and ``effect_size`` with
``effect_ci_low``/``effect_ci_high``; every warning class derives from HceWarning.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
import warnings
from collections.abc import Mapping
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import hce
import hce.report as hr
import hce.stats as hs
import hce.study as hst
from hce import _vocabulary as vocab
from hce.errors import HceWarning
from hce.report.cost import cost_summary

#: Names a function's data argument goes by: a frame, or an attempt log given as a path too.
DATA_NAMES = ("data", "log", "logs", "codes")


def _public_functions() -> dict[str, object]:
    functions = {name: getattr(hs, name) for name in hs.__all__ if inspect.isfunction(getattr(hs, name))}
    for module in (hst, hr):
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.isfunction(obj) and next(iter(inspect.signature(obj).parameters), None) in DATA_NAMES:
                functions[f"{module.__name__}.{name}"] = obj
    functions["cost_summary"] = cost_summary
    # the public methods of hce.stats' result classes (d_study draws intervals too)
    for name in hs.__all__:
        cls = getattr(hs, name)
        if inspect.isclass(cls):
            for attr, method in vars(cls).items():
                if inspect.isfunction(method) and not attr.startswith("_"):
                    functions[f"{name}.{attr}"] = method
    return functions


FUNCTIONS = _public_functions()
#: The layers whose public functions the typo message and the defaults rule cover: all of them.
MODULES = ("hce", "hce.stats", "hce.study", "hce.report", "hce.collect")


def _every_public_function() -> dict[str, object]:
    """Every public function of MODULES, under the first name it is exported by (``hce.read_log``)."""
    found, seen = {}, set()
    for module_name in MODULES:
        module = importlib.import_module(module_name)
        for name in module.__all__:
            obj = getattr(module, name)
            if inspect.isfunction(obj) and id(obj) not in seen:
                seen.add(id(obj))
                found[f"{module_name}.{name}"] = obj
    return found


EVERY = _every_public_function()


def _short(name: str) -> str:
    return name.rpartition(".")[2]


def test_the_walk_sees_every_kind_of_public_function():
    assert {"icc", "friedman", "lmer", "hce.study.experiment2", "hce.report.report", "VarianceComponents.d_study"} <= set(FUNCTIONS)
    assert len(FUNCTIONS) > 100


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_no_retired_argument_names(name):
    parameters = inspect.signature(FUNCTIONS[name]).parameters
    retired = {p: vocab.RETIRED[p] for p in parameters if p in vocab.RETIRED and (_short(name), p) not in vocab.REUSED}
    assert not retired, f"{name} takes retired name(s): {retired} (old -> new, hce._vocabulary.RETIRED)"


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_data_first_then_keyword_only_arguments(name):
    parameters = list(inspect.signature(FUNCTIONS[name]).parameters.values())
    if parameters and parameters[0].name == "self":
        return  # a method of a result: its data is the result itself
    names = [p.name for p in parameters]
    data = next((n for n in names if n in DATA_NAMES), None)
    if data is None:
        return  # numbers or strings in (power, p_adjust, split_sentences): nothing to put first
    # statsmodels' and lme4's order for a model: formula, then data
    expected = 1 if names[0] == "formula" else 0
    assert names.index(data) == expected, f"{name}: {data!r} must come first (after formula), got {names}"
    after = parameters[expected + 1:]
    positional = [p.name for p in after if p.kind not in (p.KEYWORD_ONLY, p.VAR_KEYWORD)]
    assert not positional, f"{name}: {positional} must be keyword-only (after {data!r})"


@pytest.mark.parametrize("name", sorted(FUNCTIONS))
def test_seeds_intervals_and_resample_counts_use_one_name_and_one_default(name):
    parameters = inspect.signature(FUNCTIONS[name]).parameters
    short = _short(name)
    if "random_state" in parameters:
        want = vocab.RANDOM_STATE_OTHER.get(short, (None,))[0]
        assert parameters["random_state"].default == want, f"{name}: random_state must default to {want}"
    if "n_boot" in parameters:
        default = parameters["n_boot"].default
        if short in vocab.N_BOOT_OPT_IN:
            assert default == 0, f"{name}: an opt-in bootstrap defaults to n_boot=0"
        else:
            want = vocab.N_BOOT_OTHER.get(short, (vocab.N_BOOT_DEFAULT,))[0]
            assert default == want, f"{name}: n_boot defaults to {default}, the vocabulary says {want}"
    if "n_sim" in parameters:
        assert short in vocab.N_SIM_DEFAULTS, f"{name}: state n_sim's default in hce._vocabulary.N_SIM_DEFAULTS"
        assert parameters["n_sim"].default == vocab.N_SIM_DEFAULTS[short][0], name
    counts = [p for p in parameters if p.startswith("n_") and any(w in p for w in ("boot", "sim", "iter", "resample", "rep"))]
    assert set(counts) <= {"n_boot", "n_sim"}, f"{name}: resample counts are n_boot (bootstrap) or n_sim, got {counts}"
    boots = [p for p in parameters if "boot" in p and p != "n_boot"]
    assert set(boots) <= set(vocab.OTHER_BOOT_COUNTS.get(short, ())), f"{name}: a second bootstrap count {boots}"
    if "confidence" in parameters:
        want = vocab.CONFIDENCE_OTHER.get(short, (vocab.CONFIDENCE_DEFAULT,))[0]
        assert parameters["confidence"].default == want, f"{name}: confidence defaults to {want}"
    assert not {"conf_level", "ci_level", "ci", "level_ci", "interval_method"} & set(parameters), name
    if "by" in parameters and parameters["by"].default is not inspect.Parameter.empty:
        default = parameters["by"].default
        assert default == () or short in vocab.BY_OTHER, f"{name}: by defaults to (), got {default!r}"


def test_the_vocabulary_names_every_canonical_argument_once():
    assert not set(vocab.ARGUMENTS) & set(vocab.RETIRED)
    assert set(vocab.RETIRED.values()) <= set(vocab.ARGUMENTS)


def test_every_rename_is_in_the_vocabulary():
    # What @renamed refuses is what the glossary lists: RETIRED, or RENAMED_ELSEWHERE naming the function.
    for name, function in FUNCTIONS.items():
        for old, new in getattr(function, "__renamed__", {}).items():
            if vocab.RETIRED.get(old) != new:
                assert old in vocab.RENAMED_ELSEWHERE and f"`{new}`" in vocab.RENAMED_ELSEWHERE[old], (name, old, new)
                assert _short(name) in vocab.RENAMED_ELSEWHERE[old], (name, old, new)


@pytest.mark.parametrize("name", sorted(n for n, f in FUNCTIONS.items() if getattr(f, "__renamed__", None)))
def test_a_retired_name_raises_a_type_error_naming_the_new_one(name):
    function = FUNCTIONS[name]
    parameters = inspect.signature(function).parameters
    forwards = any(p.kind == p.VAR_KEYWORD for p in parameters.values())  # brier_score: to calibration_metrics
    for old, new in function.__renamed__.items():
        assert old not in parameters
        assert new in parameters or forwards, f"{name}: renamed {old!r} to {new!r}, which it lacks"
        with pytest.raises(TypeError, match=rf"no longer takes '{old}': use {new}="):
            function(**{old: "x"})
    if next(iter(parameters)) in DATA_NAMES and any(p.kind == p.KEYWORD_ONLY for p in parameters.values()):
        with pytest.raises(TypeError, match=r"takes \w+ by position and the rest by keyword"):
            function(pd.DataFrame(), "x")  # the old positional call of a column argument


def test_every_warning_class_derives_from_hce_warning():
    for module in pkgutil.walk_packages(hce.__path__, "hce."):
        importlib.import_module(module.name)
    warnings = {cls for cls in _subclasses(Warning) if cls.__module__.startswith("hce")}
    assert len(warnings) >= 8  # the walk found them
    assert not [cls.__name__ for cls in warnings if not issubclass(cls, HceWarning)]


def _subclasses(cls: type) -> set[type]:
    found = set()
    for sub in cls.__subclasses__():
        found |= {sub} | _subclasses(sub)
    return found


def _column_sets(path: Path) -> list[tuple[int, set[str]]]:
    """The string keys of every dict literal and ``dict(...)``/``.assign(...)`` call in a file."""
    out = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Dict):
            keys = {k.value for k in node.keys if isinstance(k, ast.Constant) and isinstance(k.value, str)}
        elif isinstance(node, ast.Call) and getattr(node.func, "id", getattr(node.func, "attr", "")) in ("dict", "assign", "update"):
            keys = {k.arg for k in node.keywords if k.arg}
        else:
            continue
        out.append((node.lineno, keys))
    return out


@pytest.mark.parametrize("layer", ["stats", "study", "report"])
def test_result_columns_bound_their_own_point(layer):
    low, high = vocab.ESTIMATE_COLUMNS[1:]
    problems = []
    for path in sorted((Path(hce.__file__).parent / layer).rglob("*.py")):
        for line, keys in _column_sets(path):
            where = f"{path.relative_to(Path(hce.__file__).parent)}:{line}"
            if "effect_size" in keys and {low, high} & keys and "estimate" not in keys:
                problems.append(f"{where}: an effect size's interval is {vocab.EFFECT_COLUMNS[1:]}")
            if set(vocab.RETIRED_COLUMNS) & keys:
                problems.append(f"{where}: retired column(s) {sorted(set(vocab.RETIRED_COLUMNS) & keys)}")
    assert not problems, "\n".join(problems)


def _registry():
    """The dirty-input test's registry: how to call each public statistic on a clean frame."""
    import importlib.util
    import sys

    path = Path(__file__).parent / "stats" / "test_dirty_input.py"
    spec = importlib.util.spec_from_file_location("_dirty_input_registry", path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # dataclasses look their module up while the class is made
    spec.loader.exec_module(module)
    return module


def _frames(result: object, path: str, depth: int = 0):
    """Every DataFrame inside a result (a frame, an AnalysisResult's tables, a result's fields)."""
    if depth > 3 or result is None or isinstance(result, (str, bytes, type)) or callable(result):
        return
    if isinstance(result, pd.DataFrame):
        yield path, result
        return
    if isinstance(result, Mapping):
        items = result.items()
    elif hasattr(result, "__dict__"):
        items = ((k, v) for k, v in vars(result).items() if not k.startswith("_"))
    else:
        return
    for key, value in items:
        yield from _frames(value, f"{path}/{key}", depth + 1)


def test_result_frames_bound_estimate_or_effect_size():
    registry = _registry()
    problems = []
    for name, case in registry.CASES.items():
        if name in registry.HEAVY:
            continue
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            result = case.call(case.build(np.random.default_rng(0)))
        for where, frame in _frames(result, name):
            columns = set(map(str, frame.columns))
            if set(vocab.RETIRED_LABELS) & columns and name not in vocab.LABEL_OTHER:
                problems.append(f"{where}: the label column is {vocab.LABEL_COLUMN!r}, got {sorted(set(vocab.RETIRED_LABELS) & columns)}")
            if set(vocab.RETIRED_COLUMNS + vocab.RETIRED_COUNTS) & columns:
                problems.append(f"{where}: retired column(s) {sorted(set(vocab.RETIRED_COLUMNS + vocab.RETIRED_COUNTS) & columns)}")
            if set(vocab.ESTIMATE_COLUMNS[1:]) & columns:
                point = vocab.INTERVAL_OF.get(name, "estimate")
                if point not in columns:
                    problems.append(f"{where}: ci_low/ci_high without {point!r}")
            if "effect_size" in columns and not set(vocab.EFFECT_COLUMNS) <= columns:
                problems.append(f"{where}: effect_size without {vocab.EFFECT_COLUMNS[1:]}")
    assert not problems, "\n".join(problems)


def _typo(word: str) -> str:
    """A one-letter slip: the last letter doubled (``score`` -> ``scoree``)."""
    return word + word[-1]


def test_the_walk_sees_every_public_function():
    """The typo and defaults tests below cover every layer's public functions, not a sample."""
    assert {"hce.read_log", "hce.stats.friedman", "hce.study.run_study", "hce.report.report",
            "hce.collect.run", "hce.collect.run_async"} <= set(EVERY)
    assert len(EVERY) > 120


@pytest.mark.parametrize("name", sorted(EVERY))
def test_a_keyword_typo_names_the_function_and_the_keyword_meant(name):
    """Issue 36: ``friedman(dv=...)`` says friedman() and score=, as icc's retired names do; so does
    every public function of every layer (``hce.read_log(formatt=...)``, ``hce.collect.run(logg=...)``)."""
    import asyncio

    function = EVERY[name]
    parameters = [p for p in inspect.signature(function).parameters.values() if p.kind is not p.VAR_KEYWORD]
    keywords = [p for p in parameters if p.kind is p.KEYWORD_ONLY] or parameters[1:] or parameters
    if not keywords:  # nothing to misspell: Python names the function
        with pytest.raises(TypeError, match=rf"^{_short(name)}\(\) got an unexpected keyword argument 'x'"):
            function(x=None)
        return
    meant = keywords[0].name
    with pytest.raises(TypeError, match=rf"^{_short(name)}\(\) got an unexpected keyword argument "
                                        rf"'{_typo(meant)}'; did you mean {meant}=\?"):
        called = function(**{_typo(meant): None})
        if inspect.iscoroutinefunction(function):  # the check runs when the coroutine starts
            asyncio.run(called)


@pytest.mark.parametrize(("name", "given", "meant"), [("friedman", "dv", "score"), ("posthoc", "padjust", "p_adjust_method"),
                                                       ("expected_calibration_error", "nbins", "n_bins")])
def test_the_names_users_bring_from_pingouin_and_statsmodels_are_translated(name, given, meant):
    with pytest.raises(TypeError, match=rf"{name}\(\) got an unexpected keyword argument '{given}'; did you mean {meant}="):
        FUNCTIONS[name](pd.DataFrame(), **{given: 1})


COLUMN_ARGUMENTS = ("item", "rater", "score", "truth", "condition")


def test_column_defaults_follow_the_one_rule():
    """Issue 36: a column argument is required, or defaults to the name a table hce makes gives
    the column (hce._vocabulary.TABLES), or is an older default listed with its table in
    DEFAULTS_KEPT. ``kruskal_wallis(spread)`` then reads ``sd`` as ``mann_whitney(spread)`` does."""
    table_names = {a: {names[a] for _, names in vocab.TABLES.values() if a in names} for a in COLUMN_ARGUMENTS}
    problems = []
    for name, function in {**EVERY, **FUNCTIONS}.items():
        for p in inspect.signature(function).parameters.values():
            if p.name in COLUMN_ARGUMENTS and isinstance(p.default, str):
                if p.default not in table_names[p.name] and (_short(name), p.name) not in vocab.DEFAULTS_KEPT:
                    problems.append(f"{name}: {p.name}={p.default!r} is no table's name (hce._vocabulary.TABLES): "
                                    f"make it required, or None read from the table (default_column)")
    assert not problems, "\n".join(problems)


def test_kruskal_wallis_reads_item_spreads_table_as_mann_whitney_does():
    log = hs.simulated_log(n_items=8, n_attempts=4, noise={"A": 0.2, "B": 0.6}, random_state=1)
    spread = hs.item_spread(log)
    out = hs.kruskal_wallis(spread, random_state=0)
    assert out["n"].iloc[0] == len(spread)  # the SDs, one per item x condition
    # H on two groups is the square of the Mann-Whitney z without continuity correction
    u = hs.mann_whitney(spread, continuity=False)
    assert out["p_value"].iloc[0] == pytest.approx(u["p_value"].iloc[0], rel=1e-9)
    assert hs.kruskal_wallis(log, random_state=0)["n"].iloc[0] == log["total"].notna().sum()  # a log: its totals


def test_a_table_hce_does_not_know_needs_the_column_named():
    with pytest.raises(TypeError, match=r"score= is required"):
        hs.kruskal_wallis(pd.DataFrame({"condition_id": ["a", "b"], "x": [1.0, 2.0]}))


def test_every_statistic_returns_a_frame_a_result_object_or_says_why_not():
    """Issue 36: one rule for what a statistic returns (hce._vocabulary, RESULT_CLASSES)."""
    problems = []
    for name in hs.__all__:
        function = getattr(hs, name)
        if not inspect.isfunction(function):
            continue
        returns = str(inspect.signature(function).return_annotation)
        fits = (returns in ("pd.DataFrame", "DataFrame") or returns in vocab.RESULT_CLASSES
                or (returns in ("pd.Series", "Series") and name in vocab.ROW_RECODERS) or name in vocab.RETURNS_OTHER)
        if not fits:
            problems.append(f"{name} returns {returns}: a DataFrame, a result object or an entry in RETURNS_OTHER")
    assert not problems, "\n".join(problems)
