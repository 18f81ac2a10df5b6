"""Figures for the reports, readable in greyscale (no colour carries meaning).

matplotlib draws them; seaborn (0.2 s to import) is imported only by the figures it draws
(:func:`reliability_diagram`), so a report without one never loads it (issue 35).
"""

from __future__ import annotations

import math
import textwrap
from collections.abc import Mapping, Sequence

import matplotlib
import numpy as np
import pandas as pd
from matplotlib.axes import Axes
from matplotlib.backends.backend_agg import FigureCanvasAgg
from matplotlib.figure import Figure

from hce._checks import require_columns
from hce.errors import DataError

_LINES = ("-", "--", ":", "-.")
#: seaborn 0.13's ``axes_style("whitegrid")``, less its colormap (no figure here draws an image).
WHITEGRID = {
    "axes.axisbelow": True, "axes.edgecolor": ".8", "axes.facecolor": "white", "axes.grid": True,
    "axes.labelcolor": ".15", "axes.spines.bottom": True, "axes.spines.left": True, "axes.spines.right": True,
    "axes.spines.top": True, "figure.facecolor": "white", "font.family": ["sans-serif"],
    "font.sans-serif": ["Arial", "DejaVu Sans", "Liberation Sans", "Bitstream Vera Sans", "sans-serif"],
    "grid.color": ".8", "grid.linestyle": "-", "lines.solid_capstyle": "round", "patch.edgecolor": "w",
    "patch.force_edgecolor": True, "text.color": ".15", "xtick.bottom": False, "xtick.color": ".15",
    "xtick.direction": "out", "xtick.top": False, "ytick.color": ".15", "ytick.direction": "out", "ytick.left": False,
    "ytick.right": False,
}  # fmt: skip
#: Most items per condition drawn as points in :func:`sd_by_condition`.
MAX_POINTS = 500


#: Most lines a wrapped tick label may take before the labels are turned, or become codes with a key.
MAX_TICK_LINES = 3
#: Longest name shown turned under its tick (:func:`turned_ticks`); longer names become codes with a key.
MAX_TURNED = 32


def condition_ticks(names: Sequence[str], *, width_in: float = 6.0) -> tuple[list[str], str | None]:
    """Tick labels that do not overlap: the names wrapped to their slot, or codes C1, C2, ... and their key.

    A slot is the axis width shared by the ticks, at about 13 characters an inch (10 pt). A
    name that wraps to more than :data:`MAX_TICK_LINES` lines in its slot, or holds a word
    longer than the slot, makes every tick a code; the key (``C1: name; C2: name``) is then
    returned to be printed with the figure. (The figures of this module first try the names
    turned, :func:`turned_ticks`.)

    Examples
    --------
    >>> condition_ticks(["a", "b"])
    (['a', 'b'], None)
    >>> condition_ticks([f"plain [max_tokens {m}]" for m in (100, 200, 300, 400, 500)])[0][0]
    'plain\\n[max_tokens\\n100]'

    >>> condition_ticks([f"condition_with_a_long_name_{k}" for k in range(8)])[1][:41].replace("\\u00a0", " ")
    'C1: condition_with_a_long_name_0; C2: con'
    """
    names = [str(n) for n in names]
    chars = max(4, int(width_in * 13 / max(len(names), 1)) - 1)
    wrapped = [textwrap.fill(n, chars, break_long_words=False) for n in names]  # a word cut in two is misread
    if all(w.count("\n") < MAX_TICK_LINES and max(map(len, w.split("\n"))) <= chars for w in wrapped):
        return wrapped, None
    codes = [f"C{k + 1}" for k in range(len(names))]
    # A no-break space keeps each code on the line of its name when the key is wrapped.
    return codes, "; ".join(f"{c}:\u00a0{n}" for c, n in zip(codes, names))


def turned_ticks(names: Sequence[str], *, width_in: float = 6.0) -> int | None:
    """The angle (30 or 90 degrees) at which names too long for flat ticks (:func:`condition_ticks`
    would give codes) are shown whole instead, or None (flat names, or codes).

    Names of at most :data:`MAX_TURNED` characters are turned 30 degrees when each one's turned
    extent fits its slot, else stood upright (90) when a slot holds a line of text; a reader
    reads the model's name, not a code to look up.

    Examples
    --------
    >>> turned_ticks(["gpt-4.1-mini-2025-04-14", "gpt-4o-2024-08-06", "o3-2025-04-16", "o4-mini-2025-04-16"])
    90
    >>> turned_ticks(["prompt strategy 1 (chain of thought)", "b"]), turned_ticks(["gpt-4o-2024-08-06", "gpt-4o-mini"], width_in=6)
    (None, None)
    >>> turned_ticks([f"model_{k}_04_16" for k in range(6)])
    30
    """
    names = [str(n) for n in names]
    longest = max(map(len, names), default=0)
    slot = width_in / max(len(names), 1)
    if condition_ticks(names, width_in=width_in)[1] is None or longest > MAX_TURNED:
        return None
    # at 10 pt a character is about 0.076 inch wide and a line 0.14 inch high
    turned = longest * 0.076 * math.cos(math.radians(30)) + 0.14 * math.sin(math.radians(30))
    return 30 if turned <= 0.95 * slot else 90 if slot >= 0.25 else None


def _set_condition_ticks(fig: Figure, ax: Axes, names: Sequence[str]) -> None:
    """Condition ticks via :func:`condition_ticks`: the names, turned when long (:func:`turned_ticks`),
    else codes with their key printed under the axes."""
    angle = turned_ticks(names, width_in=fig.get_figwidth())
    if angle is not None:
        ax.set_xticks(range(len(names)), [str(n) for n in names], rotation=angle, ha="right" if angle < 90 else "center",
                      rotation_mode="anchor" if angle < 90 else "default")  # fmt: skip
        # the figure grows by the labels' height, so the axes keep theirs
        fig.set_figheight(fig.get_figheight() + max(len(str(n)) for n in names) * 0.076 * math.sin(math.radians(angle)))
        fig.tight_layout()
        return
    ticks, key = condition_ticks(names, width_in=fig.get_figwidth())
    ax.set_xticks(range(len(ticks)), ticks)
    if key is not None:
        text = textwrap.fill(f"Key: {key}", int(fig.get_figwidth() * 15))
        fig.set_figheight(fig.get_figheight() + 0.18 * (text.count("\n") + 1))
        fig.text(0.01, 0.01, text, fontsize=8, va="bottom", ha="left")
        fig.tight_layout(rect=(0, 0.18 * (text.count("\n") + 1) / fig.get_figheight() + 0.01, 1, 1))


def new_figure(width: float = 6.0, height: float = 3.6, nrows: int = 1, ncols: int = 1, **subplots) -> tuple[Figure, Axes]:
    """A figure and its axes, drawn outside pyplot: pyplot keeps every figure it makes until closed
    (and warns past 20), a report makes dozens, and a user's own session and backend stay untouched.
    ``subplots`` go to :meth:`matplotlib.figure.Figure.subplots`.

    >>> fig, (left, right) = new_figure(9, 4.5, ncols=2, sharey=True)
    >>> fig.get_size_inches().tolist(), len(fig.axes)
    ([9.0, 4.5], 2)
    """
    with matplotlib.rc_context(WHITEGRID):
        fig = Figure(figsize=(width, height))
        FigureCanvasAgg(fig)  # headless, whatever backend the session has; measures text as savefig will
        return fig, fig.subplots(nrows, ncols, **subplots)


def sd_by_condition(spread: pd.DataFrame, *, condition: str, sd: str = "sd", title: str | None = None,
                    item: str | None = None) -> Figure:  # fmt: skip
    """Per-item SD of repeated scores for each condition: box plot with the items as points
    (up to :data:`MAX_POINTS` items per condition; beyond that the box plot alone).

    Parameters
    ----------
    spread : DataFrame
        One row per item x condition with the SD in column ``sd``.
    condition : str
        Column naming the condition (prompt strategy, model).
    sd : str, default "sd"
        Column of the SDs.
    title : str, optional
    item : str, optional
        Item column. When every item was scored in every condition (a paired design), each
        item's points are joined by a thin line across the conditions, unjittered, so the
        reader sees the pairs the tests compare.

    Returns
    -------
    matplotlib.figure.Figure
        One axes: a box per condition, the items' points and, paired, their lines.

    Examples
    --------
    >>> from pandas import DataFrame
    >>> df = DataFrame({"item_id": [1, 2, 1, 2], "model": ["a", "a", "b", "b"], "sd": [0.5, 1.0, 0.2, 0.8]})
    >>> len(sd_by_condition(df, condition="model", item="item_id").axes[0].lines) >= 2  # a line per item
    True
    """
    fig, ax = new_figure()
    data = spread[[condition, sd, *([item] if item else [])]].dropna()
    order = sorted(data[condition].astype(str).unique())
    plot = data.assign(**{condition: data[condition].astype(str)})
    # matplotlib's own boxplot: seaborn 0.13's passes a `vert` argument matplotlib 3.11 deprecates.
    groups = [plot.loc[plot[condition] == level, sd].to_numpy(dtype=float) for level in order]
    ax.boxplot(groups, positions=range(len(order)), widths=0.6, showfliers=False, patch_artist=True,
               boxprops={"facecolor": "0.85", "edgecolor": "0.2"}, medianprops={"color": "0.0"})
    wide = plot.pivot_table(index=item, columns=condition, values=sd, aggfunc="first") if item else None
    if wide is not None and len(order) > 1 and wide.notna().all(axis=None) and len(wide) <= MAX_POINTS:
        # Paired: one line per item through its SDs (no jitter, so the line meets its points).
        wide = wide[order]
        for _, row in wide.iterrows():
            ax.plot(range(len(order)), row.to_numpy(dtype=float), color="0.35", linewidth=0.6, alpha=0.6, zorder=2)
        for position, level in enumerate(order):
            ax.scatter(np.full(len(wide), position), wide[level].to_numpy(dtype=float), s=6, color="0.15", alpha=0.7, zorder=3)
    else:
        # Seeded jitter (seaborn's stripplot draws from the global NumPy state): same log, same figure.
        # Past MAX_POINTS items a condition's points are a blot and a slow file: the box alone then.
        rng = np.random.default_rng(0)
        for position, values in enumerate(groups if max(map(len, groups), default=0) <= MAX_POINTS else []):
            ax.scatter(position + rng.uniform(-0.2, 0.2, values.size), values, s=6, color="0.15", alpha=0.6, zorder=3)
    ax.set_xlabel(condition.replace("_", " "))
    ax.set_ylabel("SD of repeated scores (per item)")
    if title:
        ax.set_title(title)
    fig.tight_layout()
    _set_condition_ticks(fig, ax, order)  # after the layout: a key of codes takes room under it
    return fig


def sd_histogram(spread: pd.DataFrame, *, sd: str = "sd", thresholds: Sequence[float] = (), title: str | None = None) -> Figure:
    """Distribution of per-item SDs, with threshold lines (e.g. Success Metric 2's 1.0)."""
    fig, ax = new_figure()
    values = spread[sd].dropna().to_numpy(dtype=float)
    bins = np.histogram_bin_edges(values, bins="auto") if values.size else 10
    ax.hist(values, bins=bins, color="0.6", edgecolor="0.1")
    for value, style in zip(thresholds, _LINES[1:]):
        ax.axvline(value, color="0.0", linestyle=style, linewidth=1.2, label=f"threshold {value:g}")
    if thresholds:
        ax.legend(frameon=False)
    ax.set_xlabel("SD of repeated scores (per item)")
    ax.set_ylabel("items")
    if title:
        ax.set_title(title)
    fig.tight_layout()
    return fig


def score_histograms(groups: Mapping[str, Sequence[float]], *, bins: Sequence[float] | None = None, xlabel: str = "total score") -> Figure:
    """Overlaid step histograms (shares) of several score sets, told apart by line style.

    Used for Experiment 1's G1, G2 and target totals (H1c).
    """
    fig, ax = new_figure()
    arrays = {k: np.asarray(v, dtype=float)[np.isfinite(np.asarray(v, dtype=float))] for k, v in groups.items()}
    everything = np.concatenate([a for a in arrays.values() if a.size]) if arrays else np.array([0.0])
    if bins is None:
        bins = np.arange(np.floor(everything.min()) - 0.5, np.ceil(everything.max()) + 1.5)
    for (name, values), style in zip(arrays.items(), _LINES * 2):
        weights = np.full(values.size, 1 / values.size) if values.size else None
        ax.hist(values, bins=bins, weights=weights, histtype="step", linestyle=style, linewidth=1.6, color="0.1", label=name)
    ax.set_xlabel(xlabel)
    ax.set_ylabel("share")
    ax.legend(frameon=False)
    fig.tight_layout()
    return fig


def bar_with_ci(table: pd.DataFrame, *, label: str, estimate: str = "estimate", ylabel: str = "") -> Figure:
    """Point estimates with interval whiskers (``ci_low``, ``ci_high``), one per row."""
    fig, ax = new_figure()
    x = np.arange(len(table))
    y = table[estimate].to_numpy(dtype=float)
    low = y - table["ci_low"].to_numpy(dtype=float)
    high = table["ci_high"].to_numpy(dtype=float) - y
    ax.errorbar(x, y, yerr=[low, high], fmt="o", color="0.1", capsize=4)
    ax.set_ylabel(ylabel)
    fig.tight_layout()
    _set_condition_ticks(fig, ax, table[label].astype(str).tolist())
    return fig


def bins_count(n: int) -> str:
    """The calibration bins a figure leaves out, counted as a caption says it.

    Examples
    --------
    >>> bins_count(1), bins_count(3)
    ('1 bin', '3 bins')
    """
    return "1 bin" if n == 1 else f"{n} bins"


def reliability_diagram(table: pd.DataFrame, *, ax=None, label: str | None = None, min_count: int = 10):
    """Seaborn reliability diagram from :func:`hce.stats.reliability_table` output.

    Points at (mean forecast, observed rate) sized by bin count and labelled with it, Wilson
    error bars, and the diagonal of perfect calibration. Bins with fewer than ``min_count``
    forecasts are left out (a line through a bin of 2 and one of 398 looks like perfect
    calibration) and the axes say how many; when one bin is left, the panel says so (the
    confidences are too alike for a curve). Returns the matplotlib ``Axes``.

    Parameters
    ----------
    table : DataFrame
        Output of :func:`hce.stats.reliability_table`.
    ax : matplotlib Axes, optional
        Axes to draw on; a new figure otherwise.
    label : str, optional
        Legend label of the points.
    min_count : int, default 10
        Smallest bin drawn.

    Returns
    -------
    matplotlib.axes.Axes

    Examples
    --------
    >>> import pandas as pd
    >>> from hce.stats import reliability_table
    >>> df = pd.DataFrame({"prob": [0.9, 0.9, 0.6, 0.6], "outcome": [1, 1, 1, 0]})
    >>> reliability_diagram(reliability_table(df), min_count=1).get_xlabel()
    'Mean confidence'
    """
    require_columns(table, ["mean_prob", "estimate", "n", "ci_low", "ci_high"], what="table")
    hidden = table[table["n"] < min_count]
    table = table[table["n"] >= min_count]
    if ax is None:
        _, ax = new_figure(4.5, 4.5)
    for row in table.itertuples():  # the bin sizes, so a point's weight is read, not guessed from its area
        right = row.mean_prob > 0.85  # near the right edge the label goes left of its point, inside the axes
        ax.annotate(f"n={int(row.n)}", (row.mean_prob, row.estimate), textcoords="offset points",
                    xytext=(-4 if right else 4, -10), ha="right" if right else "left", fontsize=7)  # fmt: skip
    ax.plot([0, 1], [0, 1], linestyle="--", color="grey", linewidth=1, label="perfect calibration")
    ax.errorbar(
        table["mean_prob"],
        table["estimate"],
        # Clipped at 0: a Wilson bound can sit a rounding error inside an observed 0 or 1.
        yerr=np.clip([table["estimate"] - table["ci_low"], table["ci_high"] - table["estimate"]], 0, None),
        fmt="none",
        ecolor="black",
        elinewidth=0.8,
    )
    import seaborn as sns  # here only: see the module notes

    # Greyscale, so the figure reads the same printed in black and white.
    sns.lineplot(data=table, x="mean_prob", y="estimate", ax=ax, marker=None, label=label, sort=True, color="0.2")
    sns.scatterplot(data=table, x="mean_prob", y="estimate", size="n", ax=ax, legend=False, color="0.2")
    # Under the axis, not over the points: the bins left out and how many forecasts they hold.
    left_out = f"\n{bins_count(len(hidden))} with < {min_count} forecasts not shown ({int(hidden['n'].sum())} in all)" if len(hidden) else ""
    # A little room past 0 and 1, so a point at an observed rate of 1 and its label are not cut.
    if len(table) == 1:  # a lone point reads as a plotting failure: say why there is no curve
        row = table.iloc[0]
        ax.text(0.04, 0.5, f"One bin holds {int(row['n'])} of {int(row['n']) + int(hidden['n'].sum())} forecasts\n"
                f"(mean confidence {row['mean_prob']:.3f}): the confidences\nare too alike to draw a curve.",
                transform=ax.transAxes, fontsize=8, va="center", ha="left")  # fmt: skip
    ax.set(xlim=(-0.02, 1.02), ylim=(-0.02, 1.06), xlabel="Mean confidence" + left_out, ylabel="Observed rate")
    ax.set_aspect("equal")
    return ax


def bland_altman_plot(data: pd.DataFrame, *, a: str, b: str, item: str | None = "item_id", agreement: float = 1.96,
                      title: str | None = None, ax: Axes | None = None) -> Figure:  # fmt: skip
    """Bland-Altman plot: the difference ``a - b`` of each item against the pair's mean, with
    the bias and the limits of agreement of :func:`hce.stats.bland_altman` and their
    confidence bands.

    Parameters
    ----------
    data : DataFrame
        One row per item with the two scores in ``a`` and ``b``.
    a, b : str
        The score columns (the judge's and the humans', say).
    item : str or None, default "item_id"
        Item column, checked for repeats.
    agreement : float, default 1.96
        Multiple of the SD of the differences for the limits.
    title : str, optional
        Title above the axes; default none.
    ax : matplotlib Axes, optional
        Draw into this panel (of a figure with one panel per condition, say) instead of a new figure.

    Returns
    -------
    matplotlib.figure.Figure
        The new figure, or the one ``ax`` belongs to. One axes: each item's difference against
        its mean, the bias and the two limits as lines, each with its confidence band.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"item_id": range(6), "judge": [3, 4, 2, 5, 4, 3], "human": [3, 3, 2, 4, 4, 2]})
    >>> bland_altman_plot(df, a="judge", b="human").axes[0].get_xlabel()
    'mean of judge and human'
    """
    from hce.stats import bland_altman

    rows = bland_altman(data, item=item, a=a, b=b, agreement=agreement).set_index("quantity")
    x, y = data[a].astype(float), data[b].astype(float)
    own = ax is None
    fig, ax = new_figure(5.5, 4.0) if own else (ax.figure, ax)
    ax.axhline(0, color="0.8", linewidth=1, zorder=0)
    ax.scatter((x + y) / 2, x - y, s=12, color="0.15", alpha=0.7, zorder=3)
    for quantity, style in (("bias", "-"), ("lower_limit", "--"), ("upper_limit", "--")):
        row = rows.loc[quantity]
        ax.axhline(row.estimate, color="k", linestyle=style, linewidth=1.5 if quantity == "bias" else 1)
        # The band is each line's confidence interval: with few items the limits themselves are uncertain.
        ax.axhspan(row.ci_low, row.ci_high, color="0.5", alpha=0.15, linewidth=0)
        ax.annotate(f"{quantity.replace('_', ' ')} {row.estimate:.2f}", (1.0, row.estimate), xycoords=("axes fraction", "data"),
                    xytext=(-4, 3), textcoords="offset points", ha="right", fontsize=7)  # fmt: skip
    ax.set_xlabel(f"mean of {a} and {b}")
    ax.set_ylabel(f"{a} - {b}")
    if title:
        ax.set_title(title)
    if own:
        fig.tight_layout()
    return fig


def drift_chart(drift: pd.DataFrame, *, title: str | None = None) -> Figure:
    """A golden-set drift chart: above, each period's paired shift from the baseline with its
    confidence interval; below, the control chart (EWMA or CUSUM) of
    :func:`hce.stats.drift` with its control limits, alarms filled black.

    Parameters
    ----------
    drift : DataFrame
        :func:`hce.stats.drift`'s rows of one criterion (``period``, ``estimate``, ``ci_low``,
        ``ci_high``, ``chart_statistic``, ``limit``, ``alarm``, ``method``).
    title : str, optional
        Title above the upper axes; default none.

    Returns
    -------
    matplotlib.figure.Figure
        Two axes over the periods: the shifts with their intervals above, the control chart
        with its limits below.

    Examples
    --------
    >>> import numpy as np, pandas as pd
    >>> import hce.stats as hs
    >>> rng = np.random.default_rng(0)
    >>> history = pd.DataFrame([{"item_id": i, "run": t, "score": rng.normal(t >= 8)} for t in range(12) for i in range(20)])
    >>> fig = drift_chart(hs.drift(history, period="run", score="score"))
    >>> [ax.get_ylabel() for ax in fig.axes]
    ['shift from baseline', 'EWMA']
    """
    require_columns(drift, ["period", "estimate", "ci_low", "ci_high", "chart_statistic", "limit", "alarm"])
    if "criterion" in drift and drift["criterion"].nunique() > 1:
        raise DataError(f"one criterion per chart; got {sorted(drift['criterion'].unique())}")
    x = np.arange(len(drift))
    chart = "CUSUM" if "cusum" in str(drift.get("method", pd.Series([""])).iloc[-1]).lower() else "EWMA"
    fig, (top, bottom) = new_figure(6.0, 4.8, nrows=2, sharex=True, height_ratios=(1, 1))
    estimate = drift["estimate"].to_numpy(float)
    errors = np.vstack([estimate - drift["ci_low"].to_numpy(float), drift["ci_high"].to_numpy(float) - estimate])
    top.axhline(0, color="0.6", linewidth=1, zorder=0)
    top.errorbar(x, estimate, yerr=np.nan_to_num(errors), fmt="o", color="k", markersize=4, capsize=2, linewidth=1)
    top.set_ylabel("shift from baseline")
    statistic, limit = drift["chart_statistic"].to_numpy(float), drift["limit"].to_numpy(float)
    bottom.plot(x, statistic, color="k", linewidth=1)
    alarm = drift["alarm"].fillna(False).to_numpy(bool)
    bottom.scatter(x[~alarm], statistic[~alarm], s=16, facecolor="white", edgecolor="k", zorder=3)
    bottom.scatter(x[alarm], statistic[alarm], s=20, color="k", zorder=3, label="alarm")
    for sign in (1, -1):  # the limits are symmetric: a judge may drift up or down
        bottom.plot(x, sign * limit, color="k", linestyle="--", linewidth=1)
    bottom.set_ylabel(chart)
    bottom.set_xticks(x, [str(p) for p in drift["period"]], rotation=90 if len(x) > 12 else 0)
    bottom.set_xlabel("period")
    if title:
        top.set_title(title)
    fig.tight_layout()
    return fig
