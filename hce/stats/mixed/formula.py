"""lme4-syntax model formulas: parse ``y ~ fixed + (expr | group)`` and build design matrices.

This module is shared by the frequentist mixed models (:mod:`hce.stats.mixed`) and the
Bayesian models: both read a formula with :func:`parse_formula` and turn a DataFrame into
arrays with :func:`build_design`. It knows nothing about fitting.

Supported random-effects syntax (lme4, Bates et al. 2015, section 2.1):

============================  ==============================================================
``(1 | g)``                   random intercept per level of ``g``
``(1 | g:h)``                 random intercept per observed combination of ``g`` and ``h``
``(1 | g/h)``                 nested: expands to ``(1 | g) + (1 | g:h)``
``(1 | g) + (1 | h)``         crossed intercepts (two terms)
``(x | g)``, ``(1 + x | g)``  correlated random intercept and slope of ``x`` per ``g``
``(0 + x | g)``               random slope only
``(x || g)``                  uncorrelated intercept and slope: ``(1 | g) + (0 + x | g)``
``(1 | g) + (0 + x | g)``     the same, written out (several terms on one grouping factor)
============================  ==============================================================

``||`` expands as lme4 expands it (``expandDoubleVerts``): one term for the intercept and one
per slope expression, so ``(x + z || g)`` is ``(1 | g) + (0 + x | g) + (0 + z | g)``; a factor
slope such as ``(f || g)`` stays one correlated block of its columns, as in lme4. Two terms on
one grouping factor may not share a coefficient (``(x | g) + (1 | g)`` names the intercept
twice). Anything else inside a bar term (``-(1|g)``, ``(1|g):x``, an empty side) raises
:class:`hce.errors.FormulaError` naming the offending term.

:func:`build_design` refuses models the data cannot identify, with lme4's checks
(``lmerControl``'s ``check.nlev.gtr.1``, ``check.nobs.vs.nlev``, ``check.nobs.vs.nRE``) and
one more: a grouping factor with a single level, a random term with as many levels as
observations or with at least as many random effects as observations (its variance cannot be
separated from the residual), and two random intercepts that group the rows identically
(their variances cannot be told apart). The fixed-effects part is handed
to patsy unchanged, so it follows R/patsy formula rules (``a * b``, ``C(a)``, ``0 + x``).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

import numpy as np
import pandas as pd
import patsy

from hce._checks import plain, require_columns
from hce._vocabulary import keywords_checked
from hce._warnings import warn
from hce.errors import DataError, FormulaError

_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*$")
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_.]*")


@dataclass(frozen=True)
class RandomTerm:
    """One random-effects term ``(expr | g1:g2:...)``.

    Attributes
    ----------
    groups : tuple of str
        Grouping column(s); several mean their interaction (``g:h``).
    intercept : bool
        Whether the term has a random intercept.
    slopes : tuple of str
        Patsy expressions with random slopes (``("x",)`` for ``(x | g)``).
    written : str
        The bar term as the formula writes it (``"(x || g)"`` for both of its terms), for
        messages; not part of equality.

    """

    groups: tuple[str, ...]
    intercept: bool = True
    slopes: tuple[str, ...] = ()
    written: str = field(default="", compare=False)

    @property
    def group(self) -> str:
        """The grouping factor as lme4 names it (``"g:h"``)."""
        return ":".join(self.groups)

    @property
    def expr(self) -> str:
        """The left side of the bar as a patsy right-hand side (``"1 + x"``, ``"0 + x"``)."""
        return " + ".join(["1" if self.intercept else "0", *self.slopes])

    @property
    def intercept_only(self) -> bool:
        """True for ``(1 | g)``: a variance component with no slopes."""
        return self.intercept and not self.slopes

    def __str__(self) -> str:
        lhs = (" + ".join(self.slopes) or "1") if self.intercept else self.expr
        return f"({lhs} | {self.group})"


@dataclass(frozen=True)
class MixedFormula:
    """A parsed lme4 formula.

    Attributes
    ----------
    formula : str
        The formula as written.
    response : str
        Left side of ``~`` (a column name or a patsy expression such as ``np.log(y)``).
    fixed : str
        Fixed-effects right-hand side in patsy syntax (``"1"`` when only bars were given).
    random : tuple of RandomTerm
        Random terms in the order written, nested bars expanded outer first.

    """

    formula: str
    response: str
    fixed: str
    random: tuple[RandomTerm, ...] = field(default=())

    @property
    def fixed_formula(self) -> str:
        """``response ~ fixed``, ready for patsy or statsmodels."""
        return f"{self.response} ~ {self.fixed}"

    @property
    def term_names(self) -> tuple[str, ...]:
        """One name per random term, as lme4's ``VarCorr`` names them: the grouping factor,
        then ``g.1``, ``g.2`` for a second and third term on the same factor."""
        seen: dict[str, int] = {}
        names = []
        for term in self.random:
            k = seen.get(term.group, 0)
            seen[term.group] = k + 1
            names.append(term.group if k == 0 else f"{term.group}.{k}")
        return tuple(names)

    @property
    def grouping_factors(self) -> tuple[str, ...]:
        """Every grouping column, each once, in order of appearance."""
        return tuple(dict.fromkeys(g for term in self.random for g in term.groups))

    def __str__(self) -> str:
        bars = " + ".join(str(t) for t in self.random)
        return f"{self.response} ~ {self.fixed}" + (f" + {bars}" if bars else "")


@keywords_checked
def parse_formula(formula: str) -> MixedFormula:
    """Parse an lme4-style formula into response, fixed part and random terms.

    Parameters
    ----------
    formula : str
        For example ``"total ~ prompt * model + (1 | item_id) + (1 | item_id:prompt)"``.

    Returns
    -------
    MixedFormula
        ``response`` (str), ``fixed`` (patsy right-hand side), ``random`` (RandomTerm tuple).

    Raises
    ------
    FormulaError
        When there is not exactly one ``~`` or a bar term uses unsupported syntax; the
        message quotes the term.

    Examples
    --------
    >>> f = parse_formula("y ~ x + (1 | g/h) + (x | s)")
    >>> f.fixed, [str(t) for t in f.random]
    ('x', ['(1 | g)', '(1 | g:h)', '(x | s)'])
    >>> [str(t) for t in parse_formula("y ~ x + (x || g)").random]
    ['(1 | g)', '(0 + x | g)']
    >>> parse_formula("y ~ (x | g) + (1 | g)")
    Traceback (most recent call last):
    ...
    hce.errors.FormulaError: term '(1 | g)': the intercept already varies by g in (x | g); a coefficient can vary in one term per grouping factor

    """
    if not isinstance(formula, str):
        raise FormulaError(f"formula must be a string, got {type(formula).__name__}")
    sides = _split_top(formula, "~")
    if len(sides) != 2 or not sides[0].strip() or not sides[1].strip():
        raise FormulaError(f"formula {formula!r} must have the form 'response ~ terms'")
    response, rhs = sides[0].strip(), sides[1]
    fixed, random = [], []
    for chunk in (c.strip() for c in _split_top(rhs, "+")):
        if "|" not in chunk:
            if chunk:
                fixed.append(chunk)
            continue
        inner = chunk[1:-1] if chunk.startswith("(") and _closes_at_end(chunk) else None
        if inner is None:
            raise FormulaError(
                f"term {chunk!r}: a random-effects bar must stand alone in parentheses and be "
                "added with '+', as in (1 | g)"
            )
        for term in _parse_bar(chunk, inner):
            if term in random:
                raise FormulaError(f"term {chunk!r}: {term} appears twice in {formula!r}")
            _check_overlap(term, random)
            random.append(term)
    return MixedFormula(formula, response, " + ".join(fixed) or "1", tuple(random))


def _check_overlap(term: RandomTerm, earlier: list[RandomTerm]) -> None:
    """Two terms on one grouping factor must not both carry the intercept or a slope."""
    def coefficients(t: RandomTerm) -> set[str]:
        return ({"(Intercept)"} if t.intercept else set()) | set(t.slopes)

    mine = coefficients(term)
    for other in earlier:
        if other.groups != term.groups:
            continue
        shared = mine & coefficients(other)
        if shared:
            what = "the intercept" if "(Intercept)" in shared else f"the slope of {min(shared)}"
            raise FormulaError(
                f"term {term.written or str(term)!r}: {what} already varies by {term.group} in "
                f"{other.written or str(other)}; a coefficient can vary in one term per grouping "
                "factor"
            )


def _parse_bar(chunk: str, inner: str) -> list[RandomTerm]:
    double = _split_top(inner, "|", keep_double=False)
    if len(double) == 2 and inner.count("||") == 1:
        return _parse_double_bar(chunk, *double)
    if "||" in inner:
        raise FormulaError(f"term {chunk!r}: expected '(expr || group)'")
    parts = _split_top(inner, "|")
    if len(parts) != 2 or not parts[0].strip() or not parts[1].strip():
        raise FormulaError(f"term {chunk!r}: expected '(expr | group)'")
    lhs, rhs = parts[0].strip(), re.sub(r"\s+", "", parts[1])
    intercept, slopes = True, []
    pieces = [p.strip() for p in _split_top(re.sub(r"-\s*1(?![\w.])", "+ 0", lhs), "+")]
    if lhs.startswith("-"):  # "-1 + x" became "+ 0 + x": drop the empty first piece
        pieces = pieces[1:]
    for piece in pieces:
        if piece == "1":
            intercept = True
        elif piece == "0":
            intercept = False
        elif piece and "|" not in piece and "-" not in piece:
            slopes.append(piece)
        else:
            raise FormulaError(f"term {chunk!r}: cannot read {piece!r} on the left of the bar")
    if not intercept and not slopes:
        raise FormulaError(f"term {chunk!r}: the left of the bar has no intercept and no slope")
    if "/" in rhs and ":" in rhs:
        raise FormulaError(f"term {chunk!r}: mix of '/' and ':' in one grouping is not supported")
    if "/" in rhs:  # g/h/k means g, g:h, g:h:k
        names = rhs.split("/")
        groupings = [tuple(names[: i + 1]) for i in range(len(names))]
    else:
        groupings = [tuple(rhs.split(":"))]
    for name in (n for g in groupings for n in g):
        if not _NAME.match(name):
            raise FormulaError(
                f"term {chunk!r}: grouping factor {name!r} must be a plain column name"
            )
    return [RandomTerm(g, intercept, tuple(slopes), chunk) for g in groupings]


def _parse_double_bar(chunk: str, lhs: str, rhs: str) -> list[RandomTerm]:
    """``(1 + x + z || g)``: one term for the intercept and one per slope, uncorrelated."""
    if not lhs.strip() or not rhs.strip():
        raise FormulaError(f"term {chunk!r}: expected '(expr || group)'")
    single = _parse_bar(chunk, f"{lhs} | {rhs}")  # one correlated term per grouping
    out = []
    for term in single:
        parts = [(True, ())] * term.intercept + [(False, (x,)) for x in term.slopes]
        out += [RandomTerm(term.groups, i, sl, chunk) for i, sl in parts]
    return out


def _split_top(text: str, sep: str, keep_double: bool = True) -> list[str]:
    """Split at ``sep`` outside parentheses. For ``sep="|"``, ``||`` is skipped
    (``keep_double``) or is itself the separator (``keep_double=False``)."""
    out, depth, start, i = [], 0, 0, 0
    while i < len(text):
        ch = text[i]
        depth += ch == "("
        depth -= ch == ")"
        if depth == 0 and ch == sep:
            if sep == "|" and text[i : i + 2] == "||":
                if not keep_double:
                    out.append(text[start:i])
                    start = i + 2
                i += 2
                continue
            if sep == "|" and not keep_double:
                i += 1
                continue
            out.append(text[start:i])
            start = i + 1
        i += 1
    if depth != 0:
        raise FormulaError(f"unbalanced parentheses in {text.strip()!r}")
    out.append(text[start:])
    return out


def _closes_at_end(chunk: str) -> bool:
    """True when the '(' at position 0 is closed by the final character."""
    depth = 0
    for i, ch in enumerate(chunk):
        depth += ch == "("
        depth -= ch == ")"
        if depth == 0:
            return i == len(chunk) - 1
    return False


@dataclass(frozen=True)
class Grouping:
    """Integer codes of one random term's grouping factor.

    Attributes
    ----------
    codes : ndarray of int64
        Level index ``0 .. len(levels) - 1`` of each row.
    levels : pandas.Index
        Level labels (values of ``g``, or ``"a:b"`` strings for ``g:h``), sorted.
    Z : ndarray
        Rows x columns of the term's own design (``(Intercept)``, slopes).
    z_names : list of str
        Column names of ``Z``.

    """

    codes: np.ndarray
    levels: pd.Index
    Z: np.ndarray
    z_names: list[str]


@dataclass(frozen=True)
class Design:
    """Arrays for one formula on one DataFrame.

    Attributes
    ----------
    formula : MixedFormula
    data : pandas.DataFrame
        The rows used (rows with a missing value in a formula column removed).
    y : ndarray
        Response.
    X : ndarray
        Fixed-effects design (patsy coding, treatment contrasts by default).
    x_names : list of str
        Column names of ``X``; patsy's ``Intercept`` is renamed ``(Intercept)`` as in R.
    design_info : patsy.DesignInfo
        Encoding of ``X``; build the same columns for new rows with
        ``patsy.build_design_matrices([design_info], new_data)``.
    groupings : dict of str to Grouping
        One entry per random term, in formula order, keyed by
        :attr:`MixedFormula.term_names` (the grouping factor; ``g.1`` for a second term on
        ``g``, as lme4's ``VarCorr`` names it).

    """

    formula: MixedFormula
    data: pd.DataFrame
    y: np.ndarray
    X: np.ndarray
    x_names: list[str]
    design_info: patsy.DesignInfo
    groupings: dict[str, Grouping]


@keywords_checked
def build_design(
    formula: str | MixedFormula, data: pd.DataFrame, *, residual: bool = True
) -> Design:
    """Fixed-effects matrix, response and integer group codes for a mixed model.

    Parameters
    ----------
    formula : str or MixedFormula
        lme4-style formula, parsed with :func:`parse_formula` when a string.
    data : pandas.DataFrame
        Long format: one row per observation.
    residual : bool, default True
        Whether the model has a residual variance (a linear mixed model); False for ordinal
        and binary models, which may have as many random effects as observations (lme4's
        ``glmer`` checks).

    Returns
    -------
    Design
        ``y``, ``X``, ``x_names``, ``design_info``, and ``groupings`` (codes, levels and
        per-term design ``Z`` of each random term).

    Raises
    ------
    DataError
        A grouping column is missing, no complete rows remain, or the data cannot identify a
        random term (see ``check_identifiable``).
    FormulaError
        patsy cannot evaluate the fixed part (the message quotes patsy's).

    Warns
    -----
    UserWarning
        When rows with missing values in formula columns are dropped (says how many).

    Examples
    --------
    >>> df = pd.DataFrame({"y": [1.0, 2, 3, 4], "x": [0, 1, 0, 1], "g": list("aabb")})
    >>> d = build_design("y ~ x + (1 | g)", df)
    >>> d.x_names, d.groupings["g"].codes.tolist()
    (['(Intercept)', 'x'], [0, 0, 1, 1])

    """
    parsed = parse_formula(formula) if isinstance(formula, str) else formula
    require_columns(data, parsed.grouping_factors)
    data = _complete_rows(parsed, data)
    try:
        y_mat, x_mat = patsy.dmatrices(
            parsed.fixed_formula, data, NA_action="raise", return_type="matrix", eval_env=1
        )
    except patsy.PatsyError as err:
        raise FormulaError(f"fixed part {parsed.fixed_formula!r}: {err}") from err
    if y_mat.shape[1] != 1:
        raise FormulaError(f"response {parsed.response!r} must be one numeric column")
    groupings = {}
    for name, term in zip(parsed.term_names, parsed.random):
        codes, levels = _group_codes(data, term.groups)
        if term.intercept_only:
            z, z_names = np.ones((len(data), 1)), ["(Intercept)"]
        else:
            try:
                z_mat = patsy.dmatrix(term.expr, data, NA_action="raise", eval_env=1)
            except patsy.PatsyError as err:
                raise FormulaError(f"term {str(term)!r}: {err}") from err
            z, z_names = np.asarray(z_mat), _r_names(z_mat.design_info.column_names)
        groupings[name] = Grouping(codes, levels, z, z_names)
    check_identifiable(
        [(t.written or str(t), t.group, g.codes if t.intercept_only else None, len(g.levels),
          g.Z.shape[1]) for t, g in zip(parsed.random, groupings.values())],
        len(data),
        residual=residual,
    )  # fmt: skip
    return Design(
        parsed,
        data,
        np.asarray(y_mat)[:, 0],
        np.asarray(x_mat),
        _r_names(x_mat.design_info.column_names),
        x_mat.design_info,
        groupings,
    )


def check_identifiable(
    terms: list[tuple[str, str, np.ndarray | None, int, int]], n: int, *, residual: bool = True
) -> None:
    """Refuse random terms the data cannot identify, before any fitting.

    Parameters
    ----------
    terms : list of (term, group, codes, n_levels, n_coefficients)
        Each random term as written (``"(1 | item_id)"``), its grouping factor, the level
        code of each row for a random intercept (None for a term with slopes: it is not
        compared with the others), its number of levels and its number of coefficients per
        level (1 for an intercept, 2 for ``(x | g)``).
    n : int
        Observations.
    residual : bool, default True
        Whether the model has a residual variance. Without one (ordinal, binary) a term may
        have as many levels and random effects as observations, as lme4's ``glmer`` allows.

    Raises
    ------
    DataError
        Naming the term and the counts, when (lme4's ``lmerControl`` checks, all "stop" by
        default) a grouping factor has fewer than 2 levels (``check.nlev.gtr.1``), as many
        levels as observations (``check.nobs.vs.nlev``: each level is one observation, so its
        variance and the residual's are one number), or the term has at least as many
        random effects as there are observations (``check.nobs.vs.nRE``); or when two
        random intercepts group the rows identically (only their sum is identified).

    Examples
    --------
    >>> check_identifiable([("(1 | item_id)", "item_id", None, 40, 1)], 40)
    Traceback (most recent call last):
    ...
    hce.errors.DataError: term (1 | item_id): item_id has 40 levels for 40 observations, one observation per level, so its variance cannot be separated from the residual variance (lme4 refuses it too: each grouping factor needs fewer levels than observations)

    """
    # lme4's glmer (allow.n): with no residual, n random effects are still identified; levels
    # are observed ones, so without a residual a term always has no more levels than rows
    limit = n if residual else n + 1
    for term, group, _, n_levels, n_coef in terms:
        if n_levels < 2:
            raise DataError(
                f"term {term}: {group} has {n_levels} level in the {n} observations used; a "
                "random effect needs at least 2 levels to have a variance (lme4 refuses it too: "
                "grouping factors must have > 1 sampled level)"
            )
        if residual and n_levels >= n:
            raise DataError(
                f"term {term}: {group} has {n_levels} levels for {n} observations, one "
                "observation per level, so its variance cannot be separated from the residual "
                "variance (lme4 refuses it too: each grouping factor needs fewer levels than "
                "observations)"
            )
        if n_levels * n_coef >= limit:
            scale = "and the residual variance " if residual else ""
            rule = "" if residual else ", or equal it in a model without a residual"
            raise DataError(
                f"term {term}: {n_levels * n_coef} random effects ({n_levels} levels x {n_coef} "
                f"coefficients) for {n} observations; the random-effect variances {scale}cannot "
                "all be estimated (lme4 refuses it too: the number of observations must exceed "
                f"the number of random effects of each term{rule})"
            )
    intercepts = [t for t in terms if t[2] is not None]
    for i, (term_a, group_a, codes_a, levels_a, _) in enumerate(intercepts):
        for term_b, group_b, codes_b, levels_b, _ in intercepts[i + 1 :]:
            if levels_a == levels_b and _same_partition(codes_a, codes_b, levels_b):
                raise DataError(
                    f"terms {term_a} and {term_b}: {group_a} and {group_b} group the {n} "
                    f"observations identically ({levels_a} groups), so only the sum of their "
                    "variances is identified; drop one of the terms"
                )


def _same_partition(a: np.ndarray, b: np.ndarray, levels_b: int) -> bool:
    """True when the codes ``a`` and ``b`` (same number of levels) split the rows alike."""
    pairs = np.unique(a.astype(np.int64) * levels_b + b)
    return len(pairs) == int(a.max()) + 1


def _complete_rows(parsed: MixedFormula, data: pd.DataFrame) -> pd.DataFrame:
    """Drop rows missing a value in any column the formula names, with a warning."""
    text = parsed.formula
    used = [c for c in data.columns if isinstance(c, str) and c in set(_IDENTIFIER.findall(text))]
    keep = data[used].notna().all(axis=1)
    if not keep.any():
        raise DataError(f"no row has values in every formula column {used}")
    if not keep.all():
        warn(f"dropped {int((~keep).sum())} of {len(data)} rows with missing values in {used}")
    data = _drop_unused_levels(data.loc[keep], [c for c in used if c != parsed.response])
    # patsy examines text columns value by value; as categoricals it reads the categories
    text = [
        c
        for c in used
        if not pd.api.types.is_numeric_dtype(data[c]) and not pd.api.types.is_bool_dtype(data[c])
    ]
    if text:
        data = data.assign(**{c: pd.Categorical(data[c]) for c in text})
    return data


def require_random(parsed: MixedFormula) -> None:
    """Refuse a formula without a random term: a mixed model of it would be an ordinary
    regression, which ``lmer``, ``glmer`` and ``clmm`` do not fit."""
    if not parsed.random:
        raise FormulaError(
            f"formula {parsed.formula!r} has no random term, so it is no mixed model: use "
            "statsmodels OLS/GLM, or add (1|item) (a random intercept per item); "
            "statsmodels.formula.api.ols, .glm and OrderedModel fit models without random effects"
        )


def _drop_unused_levels(data: pd.DataFrame, columns: list[str]) -> pd.DataFrame:
    """Categorical predictors and grouping factors without the levels no row uses, with a
    note: an unused level would be a column of zeros in ``X`` (a singular fit) or a group
    with no data; R's ``lmer``, ``glmer`` and ``clmm`` fit the model without it."""
    dropped = {}
    for c in columns:
        if isinstance(data[c].dtype, pd.CategoricalDtype):
            unused = data[c].cat.categories.difference(data[c].dropna().unique(), sort=False)
            if len(unused):
                dropped[c] = data[c].cat.remove_unused_categories()
                warn(
                    f"column {c!r}: dropped {len(unused)} unused categorical level(s) "
                    f"{[plain(v) for v in unused[:5]]} (no row used has them), as R drops them"
                )
    return data.assign(**dropped) if dropped else data


def _group_codes(data: pd.DataFrame, groups: tuple[str, ...]) -> tuple[np.ndarray, pd.Index]:
    """Codes and sorted labels of one grouping column, or of the observed combinations
    of several (labelled ``"a:b"``, ordered by the levels of each column in turn).
    """
    per_column = [pd.factorize(data[g], sort=True) for g in groups]
    if len(groups) == 1:
        codes, levels = per_column[0]
        return codes.astype(np.int64), pd.Index(levels)
    shape = tuple(len(levels) for _, levels in per_column)
    combined = np.ravel_multi_index([codes for codes, _ in per_column], shape)
    codes, uniques = pd.factorize(combined, sort=True)
    parts = np.unravel_index(uniques, shape)
    labels = [
        ":".join(map(str, combo))
        for combo in zip(*(lv[p] for (_, lv), p in zip(per_column, parts)))
    ]
    return codes.astype(np.int64), pd.Index(labels)


def _r_names(names: list[str]) -> list[str]:
    return ["(Intercept)" if n == "Intercept" else n for n in names]
