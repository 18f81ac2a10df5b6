"""Type III hypothesis matrices of a fixed-effects design, as lmerTest builds them.

For each term of a treatment-coded design ``X`` lmerTest (``get_contrasts_type3`` and
``extract_contrasts_type3`` in R/contrast_utils.R) writes the columns of the full
dummy coding ``rdX`` (every level of every factor of a term, the intercept) in ``X``'s
coefficients, ``L = (X^+ rdX)'``; then, from the highest-order terms down, it replaces a
term's columns of ``L`` by their residuals on the columns of the terms that contain it
(same factors and more, same numeric covariates), and reads the term's hypothesis off the
rows of ``L`` that are ``X``'s own columns. The result tests each term averaged over the
levels of the others with equal weights, whatever the cell counts. A model with one term
(or one column) gets the Type I (sequential) hypotheses of lmerTest's
``get_contrasts_type1``: rows of the transposed unit lower factor of ``X'X`` from Doolittle's
elimination.

References
----------
Kuznetsova, A., Brockhoff, P. B., & Christensen, R. H. B. (2017). lmerTest package: Tests in
linear mixed effects models. Journal of Statistical Software, 82(13), 1-26.
Goodnight, J. H. (1980). Tests of hypotheses in fixed effects linear models. Communications
in Statistics - Theory and Methods, 9(2), 167-180.
"""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import patsy

from hce.errors import FormulaError


def type3_hypotheses(
    x: np.ndarray, design_info: patsy.DesignInfo, data: pd.DataFrame, formula: str
) -> dict[str, np.ndarray]:
    """One hypothesis matrix (rows: contrasts, columns: ``X``'s coefficients) per term
    except the intercept, keyed by the term's label (``a``, ``a:b``), in R's order: by
    degree, then as written in ``formula`` (patsy puts terms with a numeric factor last)."""
    written = patsy.ModelDesc.from_formula(formula).rhs_termlist
    order = [_label(t) for t in sorted((t for t in written if t.factors), key=lambda t: len(t.factors))]
    hypotheses = _hypotheses(x, design_info, data)
    return {label: hypotheses[label] for label in sorted(hypotheses, key=order.index)}


def _hypotheses(x, design_info, data) -> dict[str, np.ndarray]:
    terms = [t for t in design_info.terms if t.factors]
    if x.shape[1] <= 1 or len(terms) <= 1:
        return _type1(x, design_info)
    x_t, info_t = _treatment_design(design_info, data)
    hypotheses = _type3_treatment(x_t, info_t, data)
    if x_t.shape != x.shape or not np.allclose(x_t, x):
        # another coding (C(a, Sum)): the same hypotheses in x's coefficients, as lmerTest maps
        # them, L ginv(X_treatment) X
        mapping = _zapsmall(np.linalg.lstsq(x_t, x, rcond=None)[0])
        hypotheses = [hyp @ mapping for hyp in hypotheses]
    return {_label(t): hyp for t, hyp in zip(terms, hypotheses)}


def _type3_treatment(x, design_info, data) -> list[np.ndarray]:
    """lmerTest's ``extract_contrasts_type3`` on a treatment-coded design."""
    terms = [t for t in design_info.terms if t.factors]
    numeric = {f for f, info in design_info.factor_infos.items() if info.type == "numerical"}
    full = [_full_coding(term, design_info, data) for term in design_info.terms]
    rd_x = np.column_stack(full)
    starts = np.cumsum([0] + [m.shape[1] for m in full])
    ell = _zapsmall(np.linalg.lstsq(x, rd_x, rcond=None)[0].T)
    cols = {t: np.arange(s.start, s.stop) for t, s in design_info.term_slices.items()}
    for term in sorted(terms, key=lambda t: len(t.factors), reverse=True):  # stable, as R's order()
        contains = [
            t for t in terms
            if set(term.factors) < set(t.factors) and set(term.factors) & numeric == set(t.factors) & numeric
        ]  # fmt: skip
        if contains:
            basis = ell[:, np.concatenate([cols[t] for t in contains])]
            target = ell[:, cols[term]]
            coef = np.linalg.lstsq(basis, target, rcond=None)[0]
            ell[:, cols[term]] = _zapsmall(target - basis @ coef)
    ell = ell[_own_rows(x, rd_x, starts, design_info)]
    out = []
    for term in terms:
        hyp = ell[:, cols[term]].T
        out.append(hyp[np.abs(hyp).sum(axis=1) > 1e-8])
    return out


def _treatment_design(design_info: patsy.DesignInfo, data: pd.DataFrame):
    """The same terms with every factor in treatment coding (``C(a, Sum)`` read as ``C(a)``)."""
    terms = [
        patsy.Term([patsy.EvalFactor(_CODING.sub(r"C(\1)", f.code)) for f in t.factors])
        for t in design_info.terms
    ]
    x_t = patsy.dmatrix(patsy.ModelDesc([], terms), data, NA_action="raise")
    return np.asarray(x_t), x_t.design_info


def _type1(x: np.ndarray, design_info: patsy.DesignInfo) -> dict[str, np.ndarray]:
    upper = doolittle(x.T @ x).T if x.shape[1] > 1 else np.ones((1, 1))
    return {
        _label(t): upper[np.arange(s.start, s.stop)]
        for t, s in design_info.term_slices.items()
        if t.factors
    }


def doolittle(a: np.ndarray, eps: float = 1e-6) -> np.ndarray:
    """Unit lower-triangular ``L`` of Doolittle's ``A = L U`` without pivoting, entries below
    ``eps`` zeroed and a column whose pivot is below ``eps`` set to 0 (lmerTest's
    ``doolittle``)."""
    n = len(a)
    lower, upper = np.eye(n), np.zeros((n, n))
    for i in range(n):
        upper[i] = a[i] - lower[i, :i] @ upper[:i]
        if i + 1 < n:
            col = a[i + 1 :, i] - lower[i + 1 :, :i] @ upper[:i, i]
            lower[i + 1 :, i] = 0.0 if abs(upper[i, i]) < eps else col / upper[i, i]
    lower[np.abs(lower) < eps] = 0.0
    return lower


def _full_coding(term: patsy.Term, design_info: patsy.DesignInfo, data: pd.DataFrame) -> np.ndarray:
    """The term's columns with every level of each factor (R's ``model.matrix(~ 0 + term)``)."""
    out = np.ones((len(data), 1))
    for factor in term.factors:
        own = np.asarray(patsy.dmatrix(patsy.ModelDesc([], [patsy.Term([factor])]), data, NA_action="raise"))
        out = (out[:, :, None] * own[:, None, :]).reshape(len(data), -1)
    return out


def _own_rows(x, rd_x, starts, design_info) -> np.ndarray:
    """For each column of ``X``, the column of ``rdX`` (within the same term) equal to it."""
    rows = []
    for k, (term, s) in enumerate(design_info.term_slices.items()):
        block = rd_x[:, starts[k] : starts[k + 1]]
        for j in range(s.start, s.stop):
            hit = np.flatnonzero(np.all(np.isclose(block, x[:, [j]]), axis=0))
            if not hit.size:
                raise FormulaError(
                    f"anova: column {design_info.column_names[j]!r} is not a treatment-coded "
                    "dummy; Type III tables need treatment contrasts (the default coding)"
                )
            rows.append(starts[k] + hit[0])
    return np.array(rows)


_CODING = re.compile(r"^C\(\s*([^,()]+?)\s*,.*\)$")


def _label(term: patsy.Term) -> str:
    return ":".join(f.code for f in term.factors)


def _zapsmall(a: np.ndarray, digits: int = 7) -> np.ndarray:
    """R's ``zapsmall``: round to ``digits`` significant digits of the largest entry."""
    top = np.max(np.abs(a)) if a.size else 0.0
    return np.round(a, max(0, digits - int(np.ceil(np.log10(top)))) if top > 0 else digits)
