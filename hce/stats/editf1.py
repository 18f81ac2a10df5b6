"""Edit-F1 (seed 004): content-level counting of expected matches, additions and deletions
(Algorithm 1), micro-averaged precision / recall / Edit-F1, theme-level Edit-F1, strict
inclusion / exclusion agreement (IAA) and inter-annotator predictability (IAP).

Counting is pure: the sentence matcher is any callable ``(sentence, draft) -> span | None``
(an LLM through ``hce.collect.design.matcher``, a human annotation, a string rule), or the
matches can be computed elsewhere and passed in.
"""

from __future__ import annotations

import itertools
import re
import warnings
from collections.abc import Callable, Sequence
from typing import Literal

import numpy as np
import pandas as pd

from hce._checks import check_choice, check_confidence, numeric_column, require_columns
from hce._vocabulary import keywords_checked
from hce._warnings import warn
from hce.errors import DataError, HceWarning
from hce.stats._resample import Bootstrap, as_generator, bootstrap_sums, check_n_boot, percentile_interval, unit_sums
from hce.stats.boolean import _groups
from hce.stats._validate import statistic

Matcher = Callable[[str, str], "str | None"]
_SENTENCE_END = re.compile(r"(?:(?<=[.!?])|(?<=[.!?][\"')\]\u201d]))\s+|\n+")
_WORD = re.compile(r"\w")


@keywords_checked
def split_sentences(text: str) -> list[str]:
    """Split text into sentences at ``.``, ``!`` or ``?`` followed by space, and at newlines.

    Fragments without a letter or digit (stray punctuation left by removing a match) are
    not sentences. Abbreviations such as "Dr." split too; pass your own ``splitter`` to
    :func:`edit_counts` where that matters.

    Parameters
    ----------
    text : str
        The text.

    Returns
    -------
    list of str
        Its sentences, stripped.

    Examples
    --------
    >>> split_sentences("I'm sorry. Call us today! Any fever?  .")
    ["I'm sorry.", 'Call us today!', 'Any fever?']
    """
    parts = (p.strip() for p in _SENTENCE_END.split(text or ""))
    return [p for p in parts if _WORD.search(p)]


# Python's str \s and \w for RE2: Unicode whitespace as str.isspace(); letters, numbers, "_".
_SPACE = "\t\n\x0b\x0c\r\x1c\x1d\x1e\x1f \x85\xa0\u1680" + "".join(map(chr, range(0x2000, 0x200B))) + "\u2028\u2029\u202f\u205f\u3000"
_RE2_SPACE = r"[\t\n\x0b\x0c\r\x1c-\x1f \x85\xa0\x{1680}\x{2000}-\x{200a}\x{2028}\x{2029}\x{202f}\x{205f}\x{3000}]"
_RE2_SENTENCE_END = r"([.!?][\"')\]\x{201d}]?)" + _RE2_SPACE + r"+|\n+"
_RE2_WORD = r"[\p{L}\p{N}_]"


def _sentences(texts: Sequence[str]):
    """The sentences of every text as :func:`split_sentences` finds them, vectorised with Arrow:
    (sentences as an Arrow string array, index of the text each comes from). The sentences keep
    their surrounding whitespace: counting needs no trimming, :func:`sentence_table` trims."""
    import pyarrow as pa
    import pyarrow.compute as pc

    if any("\x00" in t for t in texts):  # the marker below: split the slow way
        split = [split_sentences(t) for t in texts]
        return pa.array([x for part in split for x in part], pa.large_string()), np.repeat(
            np.arange(len(texts)), [len(part) for part in split])
    marked = pc.replace_substring_regex(pa.array(texts, pa.large_string()), _RE2_SENTENCE_END, "\\1\x00")
    pieces = pc.split_pattern(marked, "\x00")
    flat = pieces.flatten()
    worded = pc.match_substring_regex(flat, _RE2_WORD).to_numpy(zero_copy_only=False)
    parent = pc.list_parent_indices(pieces).to_numpy()
    return flat.filter(worded), parent[worded]


@keywords_checked
def count_sentences(texts: Sequence[str]) -> np.ndarray:
    """``len(split_sentences(t))`` for every text at once, vectorised with Arrow.

    Parameters
    ----------
    texts : sequence of str
        The texts.

    Returns
    -------
    ndarray
        Integer count of sentences per text.

    Examples
    --------
    >>> count_sentences(["I'm sorry. Call us today! Any fever?  .", "", "One line"]).tolist()
    [3, 0, 1]
    """
    return np.bincount(_sentences(texts)[1], minlength=len(texts)).astype(np.int64)


@statistic(keys=("item",), texts=("reference", "draft"), retired={"pair": "item"})
def sentence_table(
    data: pd.DataFrame,
    *,
    item: str | Sequence[str] = "pair_id",
    reference: str = "reference",
    draft: str = "draft",
    matcher: Matcher | None = None,
) -> pd.DataFrame:
    """One row per (pair, reference sentence): the units a sentence matcher judges.

    Parameters
    ----------
    data : DataFrame
        One row per reference / draft pair.
    item : str or sequence of str, default "pair_id"
        Column(s) naming the pair.
    reference, draft : str
        The expert-written response r_e and the drafted response r_d.
        Default: ``reference="reference"``.
    matcher : callable, optional
        ``matcher(sentence, draft)`` -> matching draft content or None / ``"NO MATCH"``;
        when given, its result fills a ``match`` column. Without it, send the table to an
        LLM matcher (``hce.collect.design.matcher``) and add its replies as ``match``.

    Returns
    -------
    DataFrame
        The pair columns, ``sentence_index`` (0-based within the reference), ``sentence``
        (as :func:`split_sentences` cuts it), ``draft`` and, with a matcher, ``match``:
        the input of :func:`edit_counts_table`. A reference without a sentence has no row.

    Examples
    --------
    >>> import pandas as pd
    >>> pairs = pd.DataFrame({"pair_id": [1], "reference": ["Any fever? Rest well."],
    ...                       "draft": ["Do you have a fever?"]})
    >>> table = sentence_table(pairs, matcher=lambda s, d: d if "fever" in s else None)
    >>> edit_counts_table(table).to_dict("records")
    [{'pair_id': 1, 'em': 1, 'ea': 1, 'ed': 0, 'n_unlocated': 0}]
    """
    keys = [item] if isinstance(item, str) else list(item)
    require_columns(data, [*keys, reference, draft])
    texts = [t if isinstance(t, str) else "" for t in data[reference].to_numpy(dtype=object)]
    import pyarrow.compute as pc

    sentences, owner = _sentences(texts)
    sentences = pc.utf8_trim(sentences, characters=_SPACE)
    out = data[keys].iloc[owner].reset_index(drop=True)
    starts = np.searchsorted(owner, owner)  # owner is sorted: the first sentence of each pair
    out["sentence_index"] = np.arange(len(owner)) - starts
    out["sentence"] = sentence_values = sentences.to_numpy(zero_copy_only=False)
    out[draft] = draft_values = data[draft].to_numpy(dtype=object)[owner]
    if matcher is not None:  # over the arrays: iterating pandas' Arrow-backed strings is slow
        out["match"] = [matcher(s, d) for s, d in zip(sentence_values.tolist(), draft_values.tolist(), strict=True)]
    return out


def _locate(text: str, span: str) -> tuple[int, int] | None:
    """Where ``span`` occurs in ``text``: verbatim first, then ignoring case and spacing."""
    start = text.find(span)
    if start >= 0:
        return start, start + len(span)
    words = span.split()
    if not words:
        return None
    found = re.search(r"\s+".join(map(re.escape, words)), text, flags=re.IGNORECASE)
    return (found.start(), found.end()) if found else None


@keywords_checked
def edit_counts_from_matches(
    draft: str,
    matches: Sequence[str | None],
    *,
    splitter: Callable[[str], list[str]] = split_sentences,
) -> dict[str, int]:
    """Lines 2-13 of Algorithm 1 given one match result per reference sentence.

    Parameters
    ----------
    draft : str
        The LLM-drafted response r_d.
    matches : sequence of str or None
        For each sentence of the reference r_e, the matching content of the draft, or None
        (or ``"NO MATCH"``) when nothing matches.
    splitter : callable, default :func:`split_sentences`
        Sentence splitter for the remaining draft.

    Returns
    -------
    dict
        ``em`` (expected matches), ``ea`` (expected additions), ``ed`` (expected deletions:
        sentences of the draft left after removing every matched span), ``n_unlocated``
        (matched spans not found in the draft, so not removed; a warning is emitted).

    Examples
    --------
    >>> draft = "Hi Sarah, thank you for reaching out. Please book a visit. Any fever?"
    >>> edit_counts_from_matches(draft, ["Any fever?", None])
    {'em': 1, 'ea': 1, 'ed': 2, 'n_unlocated': 0}
    """
    spans = [str(span) for span in matches if _is_match(span)]
    (remaining,), (unlocated,) = _remove_spans([draft or ""], [0] * len(spans), spans)
    _warn_unlocated(int(unlocated))
    return {"em": len(spans), "ea": len(matches) - len(spans), "ed": len(splitter(remaining)), "n_unlocated": int(unlocated)}


def _is_match(span) -> bool:
    """A matcher result names content of the draft (not None, NaN or "NO MATCH")."""
    return not (span is None or (isinstance(span, float) and np.isnan(span)) or str(span).strip().upper() == "NO MATCH")


def _matched(spans: np.ndarray) -> np.ndarray:
    """``_is_match`` of every span, vectorised when they are text and missing values."""
    import pyarrow as pa
    import pyarrow.compute as pc

    try:
        column = pa.array(spans, pa.large_string(), from_pandas=True)
    except (pa.ArrowInvalid, pa.ArrowTypeError):
        return np.fromiter((_is_match(s) for s in spans), dtype=bool, count=len(spans))
    said = pc.not_equal(pc.utf8_upper(pc.utf8_trim_whitespace(column)), "NO MATCH")
    return pc.fill_null(said, False).to_numpy(zero_copy_only=False)


def _remove_spans(drafts: list[str], owners: Sequence[int], spans: Sequence[str]) -> tuple[list[str], np.ndarray]:
    """Each draft with its matched spans (``spans[k]`` belongs to draft ``owners[k]``) replaced by a
    space, in order, and per draft how many spans were found nowhere in it."""
    remaining = list(drafts)
    unlocated = np.zeros(len(drafts), dtype=np.int64)
    for owner, span in zip(owners, spans, strict=True):
        text = remaining[owner]
        start = text.find(span)
        where = (start, start + len(span)) if start >= 0 else _locate(text, span)
        if where is not None:
            remaining[owner] = text[: where[0]] + " " + text[where[1] :]
        elif _locate(drafts[owner], span) is None:
            unlocated[owner] += 1  # a span already removed for an earlier sentence is fine
    return remaining, unlocated


def _warn_unlocated(unlocated: int) -> None:
    if unlocated:
        warnings.warn(
            f"{unlocated} matched span(s) are not verbatim in the draft and were not removed; "
            "expected deletions may be overcounted",
            UserWarning,
            stacklevel=3,
        )


@keywords_checked
def edit_counts(
    reference: str,
    draft: str,
    matcher: Matcher,
    *,
    splitter: Callable[[str], list[str]] = split_sentences,
) -> dict[str, int]:
    """Algorithm 1 of EditJudge (Seegmiller et al. 2025): count EM, EA and ED for one reference / draft pair.

    Parameters
    ----------
    reference : str
        Expert-written response r_e.
    draft : str
        LLM-drafted response r_d.
    matcher : callable
        ``matcher(sentence, draft)`` returns the matching draft content, or None / ``"NO
        MATCH"``.
    splitter : callable
        Sentence splitter (default :func:`split_sentences`).

    Returns
    -------
    dict
        ``em``, ``ea``, ``ed``, ``n_unlocated`` as :func:`edit_counts_from_matches`.

    Notes
    -----
    For each reference sentence s_e: EM += 1 if it matches content of r_d, else EA += 1;
    then every matched span is removed from r_d and ED = number of sentences left.
    Precision = EM / (EM + ED), recall = EM / (EM + EA).

    References
    ----------
    .. [1] Seegmiller, P., Gatto, J., Greer, S. E., et al. (2025). How much would a clinician edit
       this draft? (EditJudge), Section 3.1 and Appendix C, Algorithm 1.

    Examples
    --------
    >>> ref = "Have you eaten anything out of the ordinary for you?"
    >>> draft = ("Have you experienced any other symptoms? Are you taking any new medications? "
    ...          "Have you recently changed your diet or experienced any significant stress?")
    >>> rule = lambda s, d: "Have you recently changed your diet or experienced any significant stress?"
    >>> edit_counts(ref, draft, rule)
    {'em': 1, 'ea': 0, 'ed': 2, 'n_unlocated': 0}
    """
    matches = [matcher(sentence, draft) for sentence in splitter(reference)]
    return edit_counts_from_matches(draft, matches, splitter=splitter)


@statistic(keys=("item",), texts=("draft", "match"), retired={"pair": "item"})
def edit_counts_table(
    data: pd.DataFrame,
    *,
    item: str | Sequence[str] = "pair_id",
    draft: str = "draft",
    match: str = "match",
) -> pd.DataFrame:
    """Algorithm 1 of EditJudge (Seegmiller et al. 2025) for many pairs at once, from matches computed elsewhere.

    Parameters
    ----------
    data : DataFrame
        One row per (pair, reference sentence): the matcher's result for that sentence
        (an LLM matcher's log, ``hce.collect.design.matcher``, or human annotation) and the
        pair's draft (the same text on every row of a pair).
    item : str or sequence of str, default "pair_id"
        Column(s) naming the reference / draft pair.
    draft : str
        The drafted response r_d.
    match : str
        The matching content of the draft, or missing / ``"NO MATCH"``.

    Returns
    -------
    DataFrame
        One row per pair, in order of first appearance: the pair columns, ``em``, ``ea``,
        ``ed``, ``n_unlocated`` as :func:`edit_counts_from_matches` gives them (a warning
        reports unlocated spans once for the whole table).

    Notes
    -----
    Spans are removed pair by pair in the order of the rows; the sentences left in every
    draft are then counted at once by Arrow, with exactly the rule of
    :func:`split_sentences` (a million pairs take a few seconds:
    ``python bench/calibration.py``).

    Examples
    --------
    >>> import pandas as pd
    >>> draft = "Hi Sarah, thank you for reaching out. Please book a visit. Any fever?"
    >>> rows = pd.DataFrame({"pair_id": [1, 1], "draft": [draft, draft], "match": ["Any fever?", "NO MATCH"]})
    >>> edit_counts_table(rows).to_dict("records")
    [{'pair_id': 1, 'em': 1, 'ea': 1, 'ed': 2, 'n_unlocated': 0}]
    """
    keys = [item] if isinstance(item, str) else list(item)
    require_columns(data, [*keys, draft, match])
    if data.empty:
        return pd.DataFrame({**{k: data[k].iloc[:0] for k in keys}, "em": [], "ea": [], "ed": [], "n_unlocated": []})
    codes, uniques = pd.factorize(pd.MultiIndex.from_frame(data[keys]) if len(keys) > 1 else data[keys[0]],
                                  use_na_sentinel=False)
    texts = data[draft].to_numpy(dtype=object)
    first = np.unique(codes, return_index=True)[1]
    drafts = [t if isinstance(t, str) else "" for t in texts[first]]
    spans = data[match].to_numpy(dtype=object)
    matched = _matched(spans)
    em = np.bincount(codes[matched], minlength=len(first))
    ea = np.bincount(codes[~matched], minlength=len(first))
    order = np.flatnonzero(matched)
    order = order[np.argsort(codes[order], kind="stable")]
    drafts, unlocated = _remove_spans(drafts, codes[order].tolist(), [str(s) for s in spans[order]])
    _warn_unlocated(int(unlocated.sum()))
    out = uniques.to_frame(index=False, name=keys) if len(keys) > 1 else pd.DataFrame({keys[0]: uniques})
    out["em"], out["ea"], out["ed"], out["n_unlocated"] = em, ea, count_sentences(drafts), unlocated
    return out


def _prf(tp, fp, fn):
    with np.errstate(invalid="ignore", divide="ignore"):
        return {
            "precision": tp / (tp + fp),
            "recall": tp / (tp + fn),
            "edit_f1": 2 * tp / (2 * tp + fp + fn),
        }


def _micro_rows(counts: np.ndarray, units, confidence, n_boot, rng) -> list[dict]:
    """Micro precision/recall/F1 rows from per-row (tp, fp, fn) counts, bootstrap over units."""
    total = counts.sum(axis=0)
    est = _prf(*total)
    reps = None
    if n_boot:
        codes, uniq = pd.factorize(units)
        S = unit_sums(np.repeat(codes, 3), np.tile(np.arange(3), len(codes)), counts.ravel(), len(uniq), 3)
        b = bootstrap_sums(S, n_boot, rng, collapse=True)
        reps = _prf(b[:, 0], b[:, 1], b[:, 2])
    rows = []
    for metric, value in est.items():
        if reps is None:
            low = high = np.nan
            method = "point estimate"
        else:
            low, high = (float(x[0]) for x in percentile_interval(reps[metric][:, None], confidence))
            method = "percentile bootstrap"
        rows.append({"metric": metric, "estimate": float(value), "ci_low": low, "ci_high": high,
                     "tp": float(total[0]), "fp": float(total[1]), "fn": float(total[2]),
                     "n": len(counts), "method": method})
    return rows


@statistic(keys=("by", "item"), numbers=("em", "ea", "ed"))
def edit_f1(
    data: pd.DataFrame,
    *,
    em: str = "em",
    ea: str = "ea",
    ed: str = "ed",
    by: Sequence[str] = (),
    item: str | None = None,
    boot: Bootstrap = Bootstrap(),
) -> pd.DataFrame:
    """Micro-averaged content-level precision, recall and Edit-F1 over a dataset.

    Parameters
    ----------
    data : DataFrame
        One row per reference / draft pair with counts from :func:`edit_counts`.
    em, ea, ed : str
        Columns of expected matches (true positives), additions (false negatives) and
        deletions (false positives).
        Defaults: ``em="em"``, ``ea="ea"``.
    by : sequence of str, default ()
        Grouping columns (model, adaptation, ...).
    item : str, optional
        Bootstrap cluster (e.g. the patient message when several drafts share it); rows by
        default.
    %(confidence)s
        Here: the percentile bootstrap intervals.
    %(n_boot)s
        Here: resamples (0: none).
    %(random_state)s

    Returns
    -------
    DataFrame
        Per group, rows ``precision``, ``recall``, ``edit_f1`` with ``estimate``,
        ``ci_low``, ``ci_high``, the pooled ``tp`` (EM), ``fp`` (ED), ``fn`` (EA), ``n``
        (pairs), ``method``.

    Notes
    -----
    Micro averaging pools the counts: ``P = sum EM / (sum EM + sum ED)``,
    ``R = sum EM / (sum EM + sum EA)``, ``F1 = 2 sum EM / (2 sum EM + sum ED + sum EA)``.

    References
    ----------
    .. [1] Seegmiller, P., Gatto, J., Greer, S. E., et al. (2025). How much would a clinician edit
       this draft? (EditJudge), Section 3.1.

    Examples
    --------
    >>> import pandas as pd
    >>> counts = pd.DataFrame({"em": [1, 1, 0], "ea": [0, 0, 1], "ed": [1, 2, 4]})
    >>> edit_f1(counts, n_boot=0)["estimate"].round(4).tolist()
    [0.2222, 0.6667, 0.3333]
    """
    confidence, n_boot, random_state = boot
    out = _edit_f1_table(data, em, ea, ed, by, item, confidence, n_boot, random_state)
    _warn_undefined(out, "edit_f1", list(by), _CONTENT_UNDEFINED)
    return out


#: Why each content-level ratio is 0/0 (seed 004 Section 3.1 counts sentences).
_CONTENT_UNDEFINED = {
    "precision": "EM + ED = 0, the drafts have no sentence (nothing matched, nothing to delete)",
    "recall": "EM + EA = 0, the references have no sentence (nothing to match or add)",
    "edit_f1": "EM + ED + EA = 0, neither references nor drafts have a sentence",
}


def _edit_f1_table(data, em, ea, ed, by, item, confidence, n_boot, random_state) -> pd.DataFrame:
    """:func:`edit_f1` without its warning, for callers that warn once for several tables."""
    check_confidence(confidence)
    check_n_boot(n_boot)
    require_columns(data, [em, ea, ed, *by])
    counts = np.column_stack([numeric_column(data, em), numeric_column(data, ed), numeric_column(data, ea)])
    if np.isnan(counts).any() or (counts < 0).any():
        raise DataError(f"columns {em!r}, {ea!r}, {ed!r} must hold non-negative counts with no missing values")
    units = data[item].to_numpy() if item is not None else np.arange(len(data))
    rng = as_generator(random_state)
    return _grouped(data, by, counts, units, confidence, n_boot, rng)


def _grouped(data, by, counts, units, confidence, n_boot, rng, extra=None):
    rows = []
    for key, mask in _groups(data, by):
        for row in _micro_rows(counts[mask], units[mask], confidence, n_boot, rng):
            rows.append({**key, **(extra or {}), **row})
    return pd.DataFrame(rows)


def _warn_undefined(out: pd.DataFrame, function: str, labels: Sequence[str], reasons: dict[str, str]) -> None:
    """One :class:`~hce.HceWarning` naming every metric left NaN by a 0/0 and why.

    Seed 004 defines precision, recall and Edit-F1 as ratios of counts and says nothing of an
    empty denominator, so hce reports NaN (not 0 or 1, which would be a claim the data do not
    make) and says which ratio is undefined, for which group, and what made it 0/0.
    """
    undefined = out[out["estimate"].isna()] if len(out) else out
    if undefined.empty:
        return
    parts = []
    for metric, rows in undefined.groupby("metric", sort=False):
        names = [", ".join(f"{c}={v!r}" for c, v in zip(labels, values, strict=True))
                 for values in rows[list(labels)].itertuples(index=False)] if labels else []
        names = [f"({n})" if len(labels) > 1 else n for n in names]
        where = f" for {', '.join(names[:5])}{f' and {len(names) - 5} more' if len(names) > 5 else ''}" if names else ""
        parts.append(f"{metric} is undefined (0/0){where}: {reasons[metric]}")
    warn(f"{function}: " + "; ".join(parts) + "; each such estimate and interval is NaN", HceWarning)


@statistic(keys=("item", "side", "theme"), retired={"pair": "item"})
def theme_f1(
    data: pd.DataFrame,
    *,
    item: str = "pair_id",
    side: str = "side",
    theme: str = "theme",
    reference: object = "reference",
    draft: object = "draft",
    count: Literal["presence", "sentences"] = "presence",
    exclude: Sequence[str] = (),
    boot: Bootstrap = Bootstrap(),
) -> pd.DataFrame:
    """Theme-level Edit-F1: draft themes as predictions of the reference's themes.

    Parameters
    ----------
    data : DataFrame
        One row per sentence: ``item`` (reference / draft pair id), ``side`` (``reference``
        or ``draft`` value), ``theme`` label (from a theme classifier or an annotator).
    item, side, theme : str
        Column names.
        Defaults: ``item="pair_id"``, ``side="side"``, ``theme="theme"``.
    reference, draft : object
        Values of ``side`` for the two responses.
        Defaults: ``reference="reference"``, ``draft="draft"``.
    count : {"presence", "sentences"}
        ``"presence"`` (default): a theme counts once per response. ``"sentences"``: per
        sentence, TP = min(reference count, draft count).
    exclude : sequence of str, default ()
        Labels left out (e.g. ``["Other"]``).
    confidence, n_boot, random_state
        Bootstrap over pairs, as :func:`edit_f1`.
        Defaults: ``confidence=0.95``, ``n_boot=1000``.

    Returns
    -------
    DataFrame
        Rows per ``theme`` and a pooled ``theme == "micro"`` group, each with metrics
        ``precision``, ``recall``, ``edit_f1`` and columns as :func:`edit_f1`.

    Notes
    -----
    Per pair and theme t with reference count e_t and draft count d_t (0/1 under
    ``presence``): TP = min(e_t, d_t), FP = d_t - TP, FN = e_t - TP; the micro F1 pools
    TP, FP, FN over themes and pairs.

    References
    ----------
    .. [1] Seegmiller, P., Gatto, J., Greer, S. E., et al. (2025). How much would a clinician edit
       this draft? (EditJudge), Section 3.2.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"pair_id": [1, 1, 1, 1], "side": ["reference", "reference", "draft", "draft"],
    ...                    "theme": ["Emp", "SymQ", "Emp", "Plan"]})
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     out = theme_f1(df, n_boot=0)
    >>> float(out.query("theme == 'micro' and metric == 'edit_f1'")["estimate"].iloc[0])
    0.5

    A theme only one side uses has precision or recall 0/0: NaN, with a warning saying why.

    >>> print(caught[0].message)  # doctest: +NORMALIZE_WHITESPACE
    theme_f1: recall is undefined (0/0) for theme='Plan': TP + FN = 0, no reference response
    has the theme; precision is undefined (0/0) for theme='SymQ': TP + FP = 0, no draft
    response has the theme; each such estimate and interval is NaN
    """
    confidence, n_boot, random_state = boot
    check_choice("count", count, ["presence", "sentences"])
    check_confidence(confidence)
    check_n_boot(n_boot)
    require_columns(data, [item, side, theme])
    frame = data.loc[~data[theme].isin(list(exclude)) & data[theme].notna(), [item, side, theme]]
    bad = ~frame[side].isin([reference, draft])
    if bad.any():
        row = bad.idxmax()
        raise DataError(f"column {side!r} row {row!r} holds {frame.loc[row, side]!r}; expected {reference!r} or {draft!r}")
    tally = frame.groupby([item, theme, side], observed=True).size().unstack(side, fill_value=0)
    tally = tally.reindex(columns=[reference, draft], fill_value=0)
    e, d = tally[reference].to_numpy(float), tally[draft].to_numpy(float)
    if count == "presence":
        e, d = np.minimum(e, 1), np.minimum(d, 1)
    tp = np.minimum(e, d)
    counts = np.column_stack([tp, d - tp, e - tp])
    index = tally.index.to_frame(index=False)
    pairs = index[item].to_numpy()
    rng = as_generator(random_state)
    per_theme = _grouped(index.rename(columns={theme: "theme"}), ["theme"], counts, pairs, confidence, n_boot, rng)
    micro = _grouped(index, [], counts, pairs, confidence, n_boot, rng, extra={"theme": "micro"})
    out = pd.concat([per_theme, micro], ignore_index=True)
    out["n"] = out["n"].astype(int)
    _warn_undefined(out, "theme_f1", ["theme"], _THEME_UNDEFINED)
    return out


#: Why each theme-level ratio is 0/0 (seed 004 Section 3.2: draft themes predict reference themes).
_THEME_UNDEFINED = {
    "precision": "TP + FP = 0, no draft response has the theme",
    "recall": "TP + FN = 0, no reference response has the theme",
    "edit_f1": "TP + FP + FN = 0, no response has the theme",
}


@statistic(keys=("item", "rater", "theme"), retired={"message": "item", "annotator": "rater"})
def theme_inclusion_agreement(
    data: pd.DataFrame,
    *,
    item: str = "message_id",
    rater: str = "annotator",
    theme: str = "theme",
    annotators: Sequence[str] | None = None,
    themes: Sequence[str] | None = None,
) -> pd.DataFrame:
    """Strict inclusion / exclusion agreement of several annotators' responses per theme
    (Seegmiller et al. 2025, Table 3).

    Parameters
    ----------
    data : DataFrame
        One row per labelled sentence: ``item``, ``rater`` (who wrote the response),
        ``theme``.
    item, rater, theme : str
        Column names.
        Defaults: ``item="message_id"``, ``rater="annotator"``, ``theme="theme"``.
    annotators : sequence, optional
        Annotators expected on every message (an annotator absent from a message wrote a
        response with none of the themes). Default: those present for each message.
    themes : sequence, optional
        Themes to report (default: those in the data), so themes nobody used still show.

    Returns
    -------
    DataFrame
        One row per theme: ``theme``, ``strict_inclusion`` (share of messages where every
        annotator's response has the theme), ``strict_exclusion`` (no response has it),
        ``strict_agreement`` (their sum), ``n`` (messages).

    References
    ----------
    .. [1] Seegmiller, P., Gatto, J., Greer, S. E., et al. (2025). How much would a clinician
       edit this draft? Evaluating LLM alignment for patient message response drafting.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"message_id": [1, 1, 1, 2, 2], "annotator": ["A", "B", "C", "A", "B"],
    ...                    "theme": ["Emp", "Emp", "Emp", "Emp", "Plan"]})
    >>> theme_inclusion_agreement(df, annotators=["A", "B", "C"])[["theme", "strict_agreement"]].values.tolist()
    [['Emp', 0.5], ['Plan', 0.5]]
    """
    require_columns(data, [item, rater, theme])
    frame = data[[item, rater, theme]].dropna().drop_duplicates()
    themes = sorted(frame[theme].unique().tolist()) if themes is None else list(themes)
    messages = frame[item].unique()
    if annotators is None:
        per_message = frame.groupby(item)[rater].nunique()
    else:
        per_message = pd.Series(len(annotators), index=messages)
        frame = frame[frame[rater].isin(list(annotators))]
    if (per_message < 2).any():
        raise DataError(f"message {per_message.idxmin()!r} has fewer than 2 annotators")
    having = frame.groupby([item, theme])[rater].nunique().unstack(theme, fill_value=0)
    having = having.reindex(index=messages, columns=themes, fill_value=0)
    total = per_message.reindex(having.index).to_numpy()[:, None]
    inclusion = (having.to_numpy() == total).mean(axis=0)
    exclusion = (having.to_numpy() == 0).mean(axis=0)
    return pd.DataFrame({"theme": themes, "strict_inclusion": inclusion, "strict_exclusion": exclusion,
                         "strict_agreement": inclusion + exclusion, "n": len(messages)})


@statistic(keys=("item", "rater"), texts=("text",), retired={"message": "item", "annotator": "rater"})
def annotator_pairs(
    data: pd.DataFrame,
    *,
    item: str = "message_id",
    rater: str = "annotator",
    text: str = "response",
) -> pd.DataFrame:
    """Every ordered pair of annotators' responses to the same message, for IAP.

    Parameters
    ----------
    data : DataFrame
        One row per message x annotator.
    item : str, default "message_id"
        Message column.
    rater : str, default "annotator"
        Annotator column.
    text : str
        Column of each annotator's response.

    Returns
    -------
    DataFrame
        ``item``, ``reference_annotator``, ``draft_annotator``, ``reference``, ``draft``:
        one row per message x ordered pair (3 annotators give 6 rows per message). Run
        :func:`edit_counts` on each row, then :func:`inter_annotator_predictability`.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"message_id": [1, 1], "annotator": ["A", "B"], "response": ["x.", "y."]})
    >>> annotator_pairs(df)[["reference_annotator", "draft_annotator"]].values.tolist()
    [['A', 'B'], ['B', 'A']]
    """
    require_columns(data, [item, rater, text])
    rows = []
    for msg, group in data.groupby(item, sort=True):
        for (_, a), (_, b) in itertools.permutations(group.iterrows(), 2):
            rows.append({item: msg, "reference_annotator": a[rater], "draft_annotator": b[rater],
                         "reference": a[text], "draft": b[text]})
    return pd.DataFrame(rows)


@statistic(keys=("item",), numbers=("em", "ea", "ed"), retired={"message": "item"})
def inter_annotator_predictability(
    data: pd.DataFrame,
    *,
    item: str = "message_id",
    em: str = "em",
    ea: str = "ea",
    ed: str = "ed",
    boot: Bootstrap = Bootstrap(),
) -> pd.DataFrame:
    """Inter-annotator predictability: Edit-F1 of one clinician's response used as the draft
    for another's, over all ordered pairs (Seegmiller et al. 2025, Appendix E.2).

    Parameters
    ----------
    data : DataFrame
        :func:`annotator_pairs` rows with counts ``em``, ``ea``, ``ed`` added.
    item : str, default "message_id"
        Message column; the bootstrap resamples messages (their ordered pairs together).
    em, ea, ed, confidence, n_boot, random_state
        As :func:`edit_f1`.
        Defaults: ``em="em"``, ``ea="ea"``, ``confidence=0.95``, ``n_boot=1000``.

    Returns
    -------
    DataFrame
        Rows per ordered pair (``reference_annotator``, ``draft_annotator``) and a pooled
        ``reference_annotator == "all"`` group; columns as :func:`edit_f1`.

    References
    ----------
    .. [1] Seegmiller, P., Gatto, J., Greer, S. E., et al. (2025). How much would a clinician
       edit this draft? Evaluating LLM alignment for patient message response drafting.

    Examples
    --------
    >>> import pandas as pd
    >>> df = pd.DataFrame({"message_id": [1, 1], "reference_annotator": ["A", "B"],
    ...                    "draft_annotator": ["B", "A"], "em": [1, 1], "ea": [1, 0], "ed": [0, 1]})
    >>> out = inter_annotator_predictability(df, n_boot=0)
    >>> out.query("reference_annotator == 'all'")["estimate"].round(4).tolist()
    [0.6667, 0.6667, 0.6667]
    """
    confidence, n_boot, random_state = boot
    require_columns(data, [item, "reference_annotator", "draft_annotator"])
    by = ["reference_annotator", "draft_annotator"]
    pairs = _edit_f1_table(data, em, ea, ed, by, item, confidence, n_boot, random_state)
    pooled = _edit_f1_table(data, em, ea, ed, [], item, confidence, n_boot,
                            random_state).assign(reference_annotator="all", draft_annotator="all")
    out = pd.concat([pairs, pooled], ignore_index=True)
    _warn_undefined(out, "inter_annotator_predictability", by, _CONTENT_UNDEFINED)
    return out
