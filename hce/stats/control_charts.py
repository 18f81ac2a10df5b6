"""Control-chart limits for a given in-control average run length: EWMA by Markov chain, CUSUM by Siegmund.

A chart watches a sequence of standardised statistics ``T_1, T_2, ...`` (independent N(0, 1)
while the process is in control) and alarms when its smoothed value leaves the limits. The
average run length (ARL) is the expected number of periods to the first alarm; ``arl0`` is that
number for a process in control (370 is the Shewhart 3-sigma chart's). :func:`control_limits`
finds the limit that gives ``arl0``:

* EWMA ``z_t = lam T_t + (1 - lam) z_(t-1)``, ``z_0 = 0``, alarm when ``|z_t| > L sqrt(lam / (2 - lam))``
  (the asymptotic limits of Lucas & Saccucci 1990). Its ARL is computed by the Markov-chain
  approximation of Brook & Evans (1972) as Lucas & Saccucci do: the in-control band cut into
  ``m`` states, ``ARL = (I - Q)^-1 1`` from the state holding 0. With ``m = 301`` it gives
  their table's ARL of 500 at ``lam = 0.1, L = 2.814`` within 0.2% (and 10.3 at a one-sigma shift).
* Two-sided tabular CUSUM ``C+_t = max(0, C+_(t-1) + T_t - k)`` (and ``C-`` alike), alarm when
  either exceeds ``h``. Its ARL is Siegmund's (1985) approximation for each side,
  ``ARL = (exp(-2 D b) + 2 D b - 1) / (2 D^2)`` with ``D = delta - k`` and ``b = h + 1.166``, and
  ``1 / ARL = 1 / ARL+ + 1 / ARL-`` for the two sides (Montgomery 2013, section 9.1.7: k = 0.5,
  h = 4 and 5 give 168 and 465).
"""

from __future__ import annotations

import functools
from typing import Literal

import numpy as np
from scipy import optimize, stats

from hce._vocabulary import keywords_checked
from hce.errors import HceError

Chart = Literal["ewma", "cusum"]
MARKOV_STATES = 301  # odd, so one state is centred on 0, where the chart starts


@functools.lru_cache(maxsize=256)
def ewma_arl(lam: float, L: float, shift: float = 0.0, states: int = MARKOV_STATES) -> float:  # noqa: N803 - the literature's L
    """ARL of a two-sided EWMA with asymptotic limits ``+-L sqrt(lam/(2-lam))`` (Brook-Evans Markov chain).

    Examples
    --------
    >>> round(ewma_arl(0.1, 2.814), 1), round(ewma_arl(0.1, 2.814, shift=1.0), 1)   # Lucas & Saccucci (1990): 500, 10.3
    (499.4, 10.3)
    """
    h = L * np.sqrt(lam / (2 - lam))
    width = 2 * h / states
    centres = -h + width * (np.arange(states) + 0.5)
    # From state i the next value lam T + (1 - lam) c_i falls in state j when T lies in that state's band.
    upper = (centres[None, :] + width / 2 - (1 - lam) * centres[:, None]) / lam - shift
    lower = (centres[None, :] - width / 2 - (1 - lam) * centres[:, None]) / lam - shift
    q = stats.norm.cdf(upper) - stats.norm.cdf(lower)
    arl = np.linalg.solve(np.eye(states) - q, np.ones(states))
    return float(arl[states // 2])


def _siegmund_one_sided(delta: float, k: float, h: float) -> float:
    d = delta - k
    b = h + 1.166
    if abs(d) < 1e-12:
        return b * b
    return (np.exp(-2 * d * b) + 2 * d * b - 1) / (2 * d * d)


def cusum_arl(k: float, h: float, shift: float = 0.0) -> float:
    """ARL of the two-sided tabular CUSUM by Siegmund's approximation, both sides combined.

    Examples
    --------
    >>> round(cusum_arl(0.5, 4.0)), round(cusum_arl(0.5, 5.0))   # Montgomery (2013), Table 9.3: 168, 465
    (169, 469)
    """
    return 1.0 / (1.0 / _siegmund_one_sided(shift, k, h) + 1.0 / _siegmund_one_sided(-shift, k, h))


@keywords_checked
def control_limits(chart: Chart = "ewma", *, arl0: float = 370.0, smoothing: float = 0.2, reference: float = 0.5) -> dict:
    """The limit of an EWMA or CUSUM chart whose in-control average run length is ``arl0``.

    Parameters
    ----------
    chart : {"ewma", "cusum"}
        The chart (default ``"ewma"``).
    arl0 : float
        The in-control average run length, in periods (default 370: a false alarm about once
        in 370 periods of a stable process).
    smoothing : float
        The EWMA's weight ``lam`` of the newest period, in (0, 1] (default 0.2; 1 is a
        Shewhart chart).
    reference : float
        The CUSUM's reference value ``k``, in standard units (default 0.5: tuned to a shift
        of one standard unit).

    Returns
    -------
    dict
        ``chart``, ``arl0``, ``L`` (EWMA: the multiple of the asymptotic SD) and ``limit``
        (the bound on ``|z_t|``; for the CUSUM ``h``), ``smoothing`` or ``reference``, and
        ``method``.

    References
    ----------
    Brook, D., & Evans, D. A. (1972). An approach to the probability distribution of CUSUM run
    length. Biometrika, 59(3), 539-549. Lucas, J. M., & Saccucci, M. S. (1990). Exponentially
    weighted moving average control schemes. Technometrics, 32(1), 1-12. Siegmund, D. (1985).
    Sequential Analysis. Springer. Montgomery, D. C. (2013). Introduction to Statistical
    Quality Control (7th ed.), ch. 9.

    Examples
    --------
    >>> from hce.stats import control_limits
    >>> round(control_limits("ewma", arl0=500, smoothing=0.1)["L"], 3)   # Lucas & Saccucci: 2.814
    2.814
    >>> round(control_limits("cusum", arl0=370)["limit"], 2)
    4.77
    """
    if not (np.isfinite(arl0) and arl0 > 1):
        raise HceError(f"arl0 must be a number of periods above 1, got {arl0!r}")
    if chart == "ewma":
        if not 0 < smoothing <= 1:
            raise HceError(f"smoothing must be in (0, 1], got {smoothing!r}")
        big = optimize.brentq(lambda L: ewma_arl(smoothing, L) - arl0, 0.5, 6.0, xtol=1e-6)
        return {"chart": "ewma", "arl0": arl0, "smoothing": smoothing, "L": big,
                "limit": big * np.sqrt(smoothing / (2 - smoothing)),
                "method": "EWMA, asymptotic limits, ARL by Brook-Evans Markov chain (Lucas & Saccucci 1990)"}  # fmt: skip
    if chart == "cusum":
        if not reference > 0:
            raise HceError(f"reference must be positive, got {reference!r}")
        h = optimize.brentq(lambda h: cusum_arl(reference, h) - arl0, 0.0, 50.0, xtol=1e-8)
        return {"chart": "cusum", "arl0": arl0, "reference": reference, "L": h, "limit": h,
                "method": "two-sided tabular CUSUM, h by Siegmund's approximation (Siegmund 1985)"}  # fmt: skip
    raise HceError(f"chart must be 'ewma' or 'cusum', got {chart!r}")


def run_chart(values: np.ndarray, limits: dict) -> tuple[np.ndarray, np.ndarray]:
    """The chart statistic of each standardised value and whether it alarms (past the limit).

    EWMA: ``z_t``; CUSUM: the larger of ``C+_t`` and ``C-_t``. Neither restarts after an alarm,
    so later periods show whether the shift persists.
    """
    out = np.empty(len(values))
    if limits["chart"] == "ewma":
        lam, z = limits["smoothing"], 0.0
        for i, v in enumerate(values):
            z = lam * v + (1 - lam) * z
            out[i] = z
        return out, np.abs(out) > limits["limit"]
    k, up, down = limits["reference"], 0.0, 0.0
    for i, v in enumerate(values):
        up, down = max(0.0, up + v - k), max(0.0, down - v - k)
        out[i] = up if up >= down else -down
    return out, np.abs(out) > limits["limit"]
