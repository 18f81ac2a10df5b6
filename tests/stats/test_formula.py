"""lme4 formula parsing and design matrices (hce.stats.mixed.formula).

Expected expansions follow lme4's documented syntax (Bates et al. 2015, J Stat Softw 67(1),
Table 2): ``(1|g/h)`` is ``(1|g) + (1|g:h)``, ``(x|g)`` is ``(1 + x|g)``.
"""

import numpy as np
import pandas as pd
import pytest

from hce.errors import DataError, FormulaError
from hce.stats.mixed.formula import RandomTerm, build_design, parse_formula


@pytest.mark.parametrize(
    ("formula", "fixed", "terms"),
    [
        ("y ~ 1 + (1|g)", "1", [RandomTerm(("g",))]),
        ("y ~ (1 | g)", "1", [RandomTerm(("g",))]),
        ("y ~ a * b + (1|g/h)", "a * b", [RandomTerm(("g",)), RandomTerm(("g", "h"))]),
        (
            "y ~ a + (1|g/h/k)",
            "a",
            [RandomTerm(("g",)), RandomTerm(("g", "h")), RandomTerm(("g", "h", "k"))],
        ),
        ("y ~ a + (1|g:h) + (1|k)", "a", [RandomTerm(("g", "h")), RandomTerm(("k",))]),
        ("y ~ x + (x|g)", "x", [RandomTerm(("g",), True, ("x",))]),
        ("y ~ x + (1 + x | g)", "x", [RandomTerm(("g",), True, ("x",))]),
        ("y ~ x + (0 + x | g)", "x", [RandomTerm(("g",), False, ("x",))]),
        ("y ~ x + (-1 + x | g)", "x", [RandomTerm(("g",), False, ("x",))]),
        ("y ~ C(a, Sum) + I(x**2) - 1", "C(a, Sum) + I(x**2) - 1", []),
    ],
)
def test_parse_expands_lme4_syntax(formula, fixed, terms):
    parsed = parse_formula(formula)
    assert parsed.response == "y"
    assert parsed.fixed == fixed
    assert list(parsed.random) == terms


def test_parse_names_and_patsy_strings():
    parsed = parse_formula(
        "np.log(total) ~ prompt * model + (1 | item_id/prompt) + (days | subject)"
    )
    assert parsed.response == "np.log(total)"
    assert parsed.fixed_formula == "np.log(total) ~ prompt * model"
    assert [t.group for t in parsed.random] == ["item_id", "item_id:prompt", "subject"]
    assert [t.expr for t in parsed.random] == ["1", "1", "1 + days"]
    assert parsed.grouping_factors == ("item_id", "prompt", "subject")
    assert str(parsed.random[2]) == "(days | subject)"


@pytest.mark.parametrize(
    ("formula", "names"),
    [
        ("y ~ (x || )", r"'\(x \|\| \)'.*expr \|\| group"),
        ("y ~ (x | g) + (1 | g)", r"'\(1 \| g\)'.*intercept already varies by g in \(x \| g\)"),
        ("y ~ (x || g) + (0 + x | g)", r"appears twice"),
        ("y ~ (x + z || g) + (0 + z + w | g)", r"slope of z already varies by g in \(x \+ z \|\| g\)"),
        ("y ~ x - (1|g)", r"'x - \(1\|g\)'"),
        ("y ~ (1|g):x", r"'\(1\|g\):x'"),
        ("y ~ (|g)", r"'\(\|g\)'"),
        ("y ~ (1|g/h:k)", r"'\(1\|g/h:k\)'"),
        ("y ~ (1|g+h)", r"'g\+h'"),
        ("y ~ (0|g)", r"'\(0\|g\)'.*no intercept and no slope"),
        ("y ~ (1|g) + (1|g)", r"appears twice"),
        ("y ~ (1|g", r"unbalanced"),
        ("y ~", r"response ~ terms"),
        ("y ~ a ~ b", r"response ~ terms"),
    ],
)
def test_unsupported_terms_are_named(formula, names):
    with pytest.raises(FormulaError, match=names):
        parse_formula(formula)


def test_build_design_codes_slopes_and_interactions():
    df = pd.DataFrame(
        {
            "y": [1.0, 2.0, 3.0, 4.0, 5.0, 6.0],
            "x": [0.0, 1.0, 2.0, 0.0, 1.0, 2.0],
            "g": ["b", "b", "b", "a", "a", "a"],
            "h": ["u", "v", "u", "v", "u", "v"],
            "p": ["p1", "p2", "p1", "p2", "p1", "p2"],
        }
    )
    d = build_design("y ~ p + (x | g) + (1 | g:h)", df)
    np.testing.assert_array_equal(d.y, df["y"].to_numpy())
    assert d.x_names == ["(Intercept)", "p[T.p2]"]
    np.testing.assert_array_equal(d.X[:, 1], [0, 1, 0, 1, 0, 1])
    slope = d.groupings["g"]
    assert slope.codes.tolist() == [1, 1, 1, 0, 0, 0]  # levels sorted: a, b
    assert slope.z_names == ["(Intercept)", "x"]
    np.testing.assert_array_equal(slope.Z[:, 1], df["x"].to_numpy())
    inter = d.groupings["g:h"]
    assert list(inter.levels) == ["a:u", "a:v", "b:u", "b:v"]
    assert inter.codes.tolist() == [2, 3, 2, 1, 0, 1]


def test_build_design_drops_missing_rows_with_warning():
    df = pd.DataFrame(
        {"y": [1.0, np.nan, 3.0, 4.0, 5.0], "g": ["a", "a", "b", None, "b"], "z": [np.nan] * 5}
    )
    with pytest.warns(UserWarning, match=r"dropped 2 of 5 rows"):
        d = build_design("y ~ 1 + (1|g)", df)
    assert d.y.tolist() == [1.0, 3.0, 5.0]


def test_build_design_errors_name_the_problem():
    df = pd.DataFrame({"y": [1.0, 2.0], "g": ["a", "b"]})
    with pytest.raises(DataError, match="'item'"):
        build_design("y ~ 1 + (1|item)", df)
    with pytest.raises(FormulaError, match="nosuch"):
        build_design("y ~ nosuch + (1|g)", df)


def test_docstring_examples():
    import doctest

    import hce.stats.mixed.formula

    assert doctest.testmod(hce.stats.mixed.formula).failed == 0


@pytest.mark.parametrize(
    ("formula", "terms", "names"),
    [
        # lme4's expandDoubleVerts: (x || g) is (1 | g) + (0 + x | g)
        ("y ~ x + (x || g)", ["(1 | g)", "(0 + x | g)"], ["g", "g.1"]),
        ("y ~ x + (1 + x || g)", ["(1 | g)", "(0 + x | g)"], ["g", "g.1"]),
        ("y ~ (x + z || g)", ["(1 | g)", "(0 + x | g)", "(0 + z | g)"], ["g", "g.1", "g.2"]),
        ("y ~ (0 + x || g)", ["(0 + x | g)"], ["g"]),
        ("y ~ x + (1 | g) + (0 + x | g)", ["(1 | g)", "(0 + x | g)"], ["g", "g.1"]),
        ("y ~ (x || g/h)", ["(1 | g)", "(0 + x | g)", "(1 | g:h)", "(0 + x | g:h)"],
         ["g", "g.1", "g:h", "g:h.1"]),
        ("y ~ (1 | g) + (x || s)", ["(1 | g)", "(1 | s)", "(0 + x | s)"], ["g", "s", "s.1"]),
    ],
)
def test_uncorrelated_terms_expand_as_lme4(formula, terms, names):
    parsed = parse_formula(formula)
    assert [str(t) for t in parsed.random] == terms
    assert list(parsed.term_names) == names  # as lme4's VarCorr names them


def test_several_terms_on_one_factor_get_their_own_design():
    rng = np.random.default_rng(0)
    df = pd.DataFrame({"g": np.repeat(list("abcd"), 3), "x": rng.normal(size=12)})
    df["y"] = rng.normal(size=12)
    d = build_design("y ~ x + (x || g)", df)
    assert list(d.groupings) == ["g", "g.1"]
    assert d.groupings["g"].z_names == ["(Intercept)"]
    assert d.groupings["g.1"].z_names == ["x"]
    np.testing.assert_array_equal(d.groupings["g.1"].Z[:, 0], df["x"])
    np.testing.assert_array_equal(d.groupings["g"].codes, d.groupings["g.1"].codes)
    assert parse_formula("y ~ (x || g)").random[1].written == "(x || g)"
