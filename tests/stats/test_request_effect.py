"""request_variance against lme4: the variance components and the likelihood-ratio statistic.

Reference values: R 4.2.2, lme4 1.1.31, on the data below written to CSV (``request`` = the
request_id, or a request of its own for the separate calls):

    m1 <- lmer(total ~ 1 + (1 | item_id) + (1 | item_id:request), data = d, REML = TRUE)
    m0 <- lmer(total ~ 1 + (1 | item_id), data = d, REML = TRUE)
    as.data.frame(VarCorr(m1))   # item_id:request 0.2790580122, item_id 3.6071463470, Residual 0.6863539409
    anova(m0, m1)$Chisq[2]       # 6.680492383 (both refit by ML)
    0.5 * pchisq(6.680492383, 1, lower.tail = FALSE)   # 0.004873684779
"""

import numpy as np
import pandas as pd
import pytest

from hce.stats import request_variance


def pilot() -> pd.DataFrame:
    # 12 items: 3 requests of 3 choices (a shared shift of SD 0.6 per request) and 3 separate calls each.
    rng = np.random.default_rng(2024)
    rows = []
    for i in range(12):
        a = rng.normal(0, 1.5)
        for r in range(3):
            b = rng.normal(0, 0.6)
            rows += [(f"I{i:02d}", f"I{i:02d}-R{r}", round(12 + a + b + rng.normal(0, 0.8), 1)) for _ in range(3)]
        rows += [(f"I{i:02d}", None, round(12 + a + rng.normal(0, 0.6) + rng.normal(0, 0.8), 1)) for _ in range(3)]
    return pd.DataFrame(rows, columns=["item_id", "request_id", "total"])


def test_matches_lme4():
    out = request_variance(pilot()).iloc[0]
    # REML variances and the ML deviance difference: optimiser-level agreement, rtol 1e-5.
    assert out["between_request_var"] == pytest.approx(0.2790580122, rel=1e-5)
    assert out["item_var"] == pytest.approx(3.6071463470, rel=1e-5)
    assert out["within_request_var"] == pytest.approx(0.6863539409, rel=1e-5)
    assert out["statistic"] == pytest.approx(6.680492383, rel=1e-5)
    assert out["p_value"] == pytest.approx(0.004873684779, rel=1e-4)
    assert out["request_icc"] == pytest.approx(0.2790580122 / (0.2790580122 + 0.6863539409), rel=1e-5)
    assert (out["n_items"], out["n_requests"], out["n_shared"], out["n"]) == (12, 72, 36, 144)
    assert not out["singular"]
