"""How the simulated judge behaves: per condition (:class:`Profile`) and per request (:class:`Faults`).

The generative model they set is described in :mod:`hce.sim`.
"""

from __future__ import annotations

import math
import urllib.parse
from dataclasses import dataclass

from hce.errors import HceError

LOOPBACK = "127.0.0.1"


@dataclass(frozen=True)
class Profile:
    """A simulated condition: how far off and how noisy the simulated judge is.

    With the default noise 1.2, at the PRD's temperature 0.1 the total of a score block
    varies from attempt to attempt with an SD of about 0.5, a bare holistic total (P1.1)
    with about 1.6.

    Attributes
    ----------
    bias : float
        Score points added to every category.
    noise : float
        The SD-like spread of the judge's distribution at temperature 1, in score points.
    request_sd : float
        SD of a shift drawn once per request and added to ``bias`` for all its choices
        (default 0: none). It stands for what the choices of one request share on the
        server (its batch, its numerics), so the ``n`` choices of one request agree more
        than separate requests do: the case :func:`hce.stats.request_variance` tests for.
    overconfidence : float
        ``f``, default 1 (calibrated): the reported logprobs are of ``r^f`` renormalised,
        where ``r`` is what the model family's logprobs report (``Family``); ``f > 1``
        is over-confident.

    Examples
    --------
    >>> from hce.collect import Profile
    >>> Profile(bias=-0.5, noise=0.8).noise
    0.8
    """

    bias: float = 0.0
    noise: float = 1.2
    request_sd: float = 0.0
    overconfidence: float = 1.0  # f: logprobs report r^f renormalised (module notes, "Calibration truth")

    def __post_init__(self) -> None:
        if not (self.overconfidence > 0 and math.isfinite(self.overconfidence)):
            raise HceError(f"overconfidence must be a positive number, got {self.overconfidence!r}")


@dataclass(frozen=True)
class Faults:
    """Probabilities of injected faults per request, and their settings.

    Attributes
    ----------
    rate_429 : float
        Share of requests answered 429, with ``Retry-After: retry_after`` seconds.
    rate_500 : float
        Share answered 500.
    rate_slow : float
        Share whose reply waits ``slow_s`` more seconds.
    rate_malformed : float
        Share whose reply text does not follow the asked format: cut short, words for
        numbers or a refusal; one in four breaks the JSON of the HTTP body itself.
    retry_after, slow_s : float
        Seconds of the 429's ``Retry-After`` and of a slow reply's wait.
    reject : str or None
        A message every completion is refused with, HTTP 400 ``invalid_request_error``,
        before any other fault.
    reject_model : str or None
        Only completions for this model are refused.
    redirect : str or None
        A loopback origin (``http://127.0.0.1:PORT``); every request, before anything else
        is looked at but the server's own key check, is answered ``307 Temporary Redirect``
        with ``Location`` that origin plus the request's path and query (a 307 keeps the
        method and the body).

    Examples
    --------
    >>> Faults(redirect="http://127.0.0.1:9000").redirect
    'http://127.0.0.1:9000'
    """

    rate_429: float = 0.0
    rate_500: float = 0.0
    rate_slow: float = 0.0
    rate_malformed: float = 0.0
    retry_after: float = 1.0
    slow_s: float = 5.0
    reject: str | None = None
    reject_model: str | None = None
    redirect: str | None = None

    def __post_init__(self) -> None:
        rates = (self.rate_429, self.rate_500, self.rate_slow, self.rate_malformed)
        if any(r < 0 for r in rates) or sum(rates) > 1:
            raise HceError(f"fault rates must be >= 0 and sum to at most 1, got {rates}")
        if self.redirect is not None:
            target = urllib.parse.urlsplit(self.redirect)
            # Loopback only, as the server itself: a rehearsal must not send a request off the machine.
            if target.scheme not in ("http", "https") or target.hostname not in (LOOPBACK, "localhost", "::1") \
                    or target.path not in ("", "/") or target.query or target.fragment:
                raise HceError(f"redirect must be a loopback origin such as http://127.0.0.1:8001, got {self.redirect!r}")
