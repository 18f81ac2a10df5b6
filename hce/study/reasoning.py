"""Experiment 4 (seed 000, 7.4): reasoning segments, the coding scheme, coders and kappa.

The steps the protocol lists, as functions:

1. :func:`select_diverse` picks the transcripts of Set B to study (15 by default) so that
   they spread over the Exp 3 SD of total scores, the transcript length and the apparent
   communication quality (mean total score).
2. :func:`segment_reasoning` cuts a chain-of-thought reply into one segment per rubric
   category; :func:`reasoning_segments` does it for every coded reply.
3. The coding scheme is data (:func:`load_coding_scheme`; the packaged ``"prd"`` scheme
   holds the protocol's five dimensions). :func:`coding_template` writes the sheet human
   coders fill in; :func:`read_codes` reads it back, checking every code.
4. :func:`coding_messages` and :func:`parse_codes` let an LLM apply the scheme through the
   collection layer (optional, 7.4.6 "AI applies final coding scheme if possible").
5. :func:`intercoder_agreement` gives Cohen's kappa per dimension between two coders
   (target >= 0.70) with :func:`hce.stats.cohen_kappa`.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
import yaml

from hce._checks import require_columns
from hce.collect.call.parse import json_object
from hce.errors import DataError
from hce.rubric import Rubric, load_rubric
from hce.stats._resample import as_generator
from hce.study.rules import POSITIVE, rule, verdict

SEGMENT_KEY = ("item_id", "model", "attempt_id", "criterion")
_PACKAGED_SCHEMES = {"prd": "coding_scheme_prd.yaml"}


@dataclass(frozen=True)
class Dimension:
    """One coding dimension: ``id`` (a column name), ``name`` and its levels (code -> label)."""

    id: str
    name: str
    codes: tuple[str, ...]
    labels: tuple[str, ...]
    definitions: tuple[str, ...]


@dataclass(frozen=True)
class CodingScheme:
    """A reasoning coding scheme: named dimensions, each with its allowed codes."""

    name: str
    version: str | None
    dimensions: tuple[Dimension, ...]

    @property
    def ids(self) -> list[str]:
        return [d.id for d in self.dimensions]

    def lookup(self, dimension: Dimension) -> dict[str, str]:
        """Accepted spellings of a dimension's codes (code or label, lower case) -> the code."""
        return {c.lower(): c for c in dimension.codes} | {lab.lower(): c for c, lab in zip(dimension.codes, dimension.labels)}

    def render(self) -> str:
        """The scheme as text for coders and coding prompts."""
        lines = [f"{self.name}" + (f" ({self.version})" if self.version else "")]
        for d in self.dimensions:
            lines.append(f"\n{d.name} [{d.id}]:")
            lines += [f"- {c}: {lab}. {dfn}" for c, lab, dfn in zip(d.codes, d.labels, d.definitions)]
        return "\n".join(lines)


def load_coding_scheme(source: str | os.PathLike | Mapping[str, Any] = "prd") -> CodingScheme:
    """Read a coding scheme (packaged ``"prd"``, a YAML path, or a mapping of that shape).

    Examples
    --------
    >>> scheme = load_coding_scheme("prd")
    >>> scheme.ids
    ['evidence_type', 'rubric_alignment', 'specificity', 'reasoning_depth', 'strengths_weaknesses']
    >>> scheme.dimensions[0].codes
    ('direct_quote', 'paraphrase', 'general_gist', 'no_clear_evidence')
    """
    if isinstance(source, Mapping):
        doc, where = dict(source), "coding scheme"
    else:
        key = str(source)
        if key in _PACKAGED_SCHEMES:
            text, where = resources.files("hce.data").joinpath(_PACKAGED_SCHEMES[key]).read_text(encoding="utf-8"), key
        else:
            path = Path(source)
            if not path.is_file():
                raise DataError(f"coding scheme {key!r} is neither packaged {list(_PACKAGED_SCHEMES)} nor a file")
            text, where = path.read_text(encoding="utf-8"), str(path)
        try:
            doc = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise DataError(f"{where}: not valid YAML: {exc}") from None
    if not isinstance(doc, dict) or not isinstance(doc.get("dimensions"), list) or not doc["dimensions"]:
        raise DataError(f"{where}: a coding scheme is a mapping with a non-empty 'dimensions' list")
    dims = []
    for i, d in enumerate(doc["dimensions"]):
        at = f"{where}: dimensions[{i}]"
        if not isinstance(d, dict) or not d.get("id") or not isinstance(d.get("levels"), list) or len(d["levels"]) < 2:
            raise DataError(f"{at} needs an 'id' and at least two 'levels'")
        levels = d["levels"]
        for j, lev in enumerate(levels):
            if not isinstance(lev, dict) or not lev.get("code"):
                raise DataError(f"{at}.levels[{j}] needs a 'code'")
        codes = tuple(str(lev["code"]) for lev in levels)
        if len(set(codes)) != len(codes):
            raise DataError(f"{at}: codes must be distinct, got {list(codes)}")
        dims.append(Dimension(
            id=str(d["id"]), name=str(d.get("name", d["id"])), codes=codes,
            labels=tuple(str(lev.get("label", lev["code"])) for lev in levels),
            definitions=tuple(str(lev.get("definition", "")) for lev in levels),
        ))  # fmt: skip
    ids = [d.id for d in dims]
    if len(set(ids)) != len(ids):
        raise DataError(f"{where}: dimension ids must be distinct, got {ids}")
    return CodingScheme(name=str(doc.get("name", where)), version=doc.get("version"), dimensions=tuple(dims))


# --- segmentation --------------------------------------------------------------------------


def _heading(name: str) -> re.Pattern[str]:
    # A category named at the start of a line, after numbering or markdown decoration.
    words = r"\s+".join(re.escape(w) for w in name.split())
    return re.compile(rf"(?im)^[\s>#*_\-•\d.)]*(?:category\s*\d*\s*[:.\-–]\s*)?{words}\b")


def segment_reasoning(text: str | None, *, rubric: Rubric | None = None) -> dict[str, str | None]:
    """Cut a chain-of-thought reply into the reasoning for each rubric category.

    A category's segment runs from the line that names it (``2. Lexical Diversity``,
    ``**Lexical Diversity**``, ``Category 2: Lexical Diversity``) to the line naming the
    next category, searched in rubric order, and stops at the final score block. A
    category never named gets ``None`` (the reply did not reason about it separately).

    Parameters
    ----------
    text : str or None
        The reply (``response_text``) or its parsed ``reasoning``.
    rubric : Rubric, optional
        Default Rubric v5.0.

    Returns
    -------
    dict
        Category id -> segment text (stripped) or None.

    Examples
    --------
    >>> reply = ("1. Clarity of Language\\nClear answers: \\"I walk daily\\".\\nScore: 3\\n"
    ...          "2. Lexical Diversity\\nPlain words.\\nScore: 2\\n")
    >>> seg = segment_reasoning(reply)
    >>> seg["clarity_of_language"], seg["lexical_diversity"], seg["health_literacy_indicator"]
    ('1. Clarity of Language\\nClear answers: "I walk daily".\\nScore: 3', '2. Lexical Diversity\\nPlain words.\\nScore: 2', None)
    """
    rubric = rubric or load_rubric("v5")
    out: dict[str, str | None] = dict.fromkeys(rubric.criteria)
    if not isinstance(text, str) or not text.strip():
        return out
    final = re.search(r"(?im)^[\s#*_]*final\s+scores?(?:\s+output)?\s*:?", text)
    body = text[: final.start()] if final else text
    starts: list[tuple[int, str]] = []
    position = 0
    for category in rubric.categories:
        match = _heading(category.name).search(body, position)
        if match is not None:
            starts.append((match.start(), category.id))
            position = match.end()
    for k, (start, cid) in enumerate(starts):
        end = starts[k + 1][0] if k + 1 < len(starts) else len(body)
        out[cid] = body[start:end].strip() or None
    return out


def reasoning_segments(
    log: pd.DataFrame,
    *,
    items: Sequence[str] | None = None,
    attempt: int = 1,
    rubric: Rubric | None = None,
) -> pd.DataFrame:
    """One row per coded reply x rubric category: the reasoning segment to code.

    For each item x model the reply of attempt number ``attempt`` is used; when that
    attempt errored, the next valid attempt is used instead (and ``attempt`` says which).

    Returns
    -------
    DataFrame
        ``item_id``, ``model``, ``attempt_id``, ``attempt``, ``criterion``, ``score`` (the
        category score the reply gave), ``segment`` (None when the reply did not reason
        about the category separately), ``segment_found``.
    """
    rubric = rubric or load_rubric("v5")
    require_columns(log, ["item_id", "model", "attempt_id", "attempt", "response_text", "error_flag"], what="Exp 3 log")
    data = log if items is None else log[log["item_id"].isin(list(items))]
    rows = []
    for (item, model), cell in data.groupby(["item_id", "model"], sort=True):
        valid = cell[~cell["error_flag"].astype(bool)].sort_values("attempt")
        chosen = valid[valid["attempt"] >= attempt]
        if chosen.empty:
            chosen = valid
        if chosen.empty:
            continue
        reply = chosen.iloc[0]
        segments = segment_reasoning(reply["response_text"], rubric=rubric)
        for cid, segment in segments.items():
            rows.append({"item_id": item, "model": model, "attempt_id": reply["attempt_id"],
                         "attempt": int(reply["attempt"]), "criterion": cid,
                         "score": reply.get(cid), "segment": segment,
                         "segment_found": segment is not None})  # fmt: skip
    return pd.DataFrame(rows, columns=["item_id", "model", "attempt_id", "attempt", "criterion", "score", "segment", "segment_found"])


# --- selection -----------------------------------------------------------------------------


def select_diverse(
    log: pd.DataFrame,
    corpus: pd.DataFrame,
    *,
    n: int = 15,
    item: str = "item_id",
    score: str = "total",
    length: str = "n_words",
) -> pd.DataFrame:
    """Pick ``n`` transcripts that spread over SD, length and apparent quality (7.4.5).

    Features per transcript (from the Exp 3 log): ``sd`` the mean over models of the SD of
    the total scores; ``length`` the transcript's word count; ``quality`` the mean total
    score over all models and attempts. Each is turned into its rank scaled to [0, 1]; the
    first pick is the transcript nearest the middle of that cube, each next pick the one
    farthest (Euclidean) from those already picked (farthest-point sampling: it takes the
    extremes of every feature, then fills the gaps). Ties go to the smaller TranscriptID.
    Deterministic, and needs no random seed.

    Returns
    -------
    DataFrame
        The ``n`` picks in order: ``item_id``, ``order``, ``sd``, ``length``,
        ``quality``, ``sd_rank``, ``length_rank``, ``quality_rank`` and ``role``
        (``scheme_draft`` for the first 5, reviewed to draft the scheme; ``icr`` for the
        next 3, coded by two researchers for kappa; ``coding`` for the rest; 7.4.5).
    """
    require_columns(log, [item, "model", score, "error_flag"], what="Exp 3 log")
    require_columns(corpus, ["transcript_id", length], what="corpus")
    # Sorted first, so that sums (and hence ties between features) do not depend on row order.
    order = [item, "model"] + (["attempt"] if "attempt" in log.columns else [])
    valid = log[~log["error_flag"].astype(bool)].sort_values(order, kind="stable")
    per_model = valid.groupby([item, "model"])[score].std(ddof=1)
    features = pd.DataFrame({"sd": per_model.groupby(level=0).mean(), "quality": valid.groupby(item)[score].mean()})
    lengths = corpus.set_index("transcript_id")[length]
    features["length"] = lengths.reindex(features.index).to_numpy(dtype=float)
    features = features.dropna().sort_index()
    if len(features) < n:
        raise DataError(f"only {len(features)} transcripts have Exp 3 scores and a length; cannot select {n}")
    ranks = features[["sd", "length", "quality"]].rank(method="average")
    scaled = ((ranks - 1) / max(len(features) - 1, 1)).to_numpy()
    picked = [int(np.argmin(((scaled - 0.5) ** 2).sum(axis=1)))]
    nearest = ((scaled - scaled[picked[0]]) ** 2).sum(axis=1)
    while len(picked) < n:
        nearest[picked] = -1.0
        nxt = int(np.argmax(nearest))  # argmax returns the first maximum: ids are sorted
        picked.append(nxt)
        nearest = np.minimum(nearest, ((scaled - scaled[nxt]) ** 2).sum(axis=1))
    out = features.iloc[picked].copy()
    out[["sd_rank", "length_rank", "quality_rank"]] = scaled[picked]
    out.index.name = item
    out = out.reset_index()
    out.insert(1, "order", range(1, n + 1))
    out["role"] = ["scheme_draft"] * min(5, n) + ["icr"] * min(3, max(n - 5, 0)) + ["coding"] * max(n - 8, 0)
    return out[[item, "order", "sd", "length", "quality", "sd_rank", "length_rank", "quality_rank", "role"]]


# --- human coding --------------------------------------------------------------------------


def coding_template(segments: pd.DataFrame, scheme: CodingScheme, *, coders: Sequence[str] = ("coder_1", "coder_2")) -> pd.DataFrame:
    """The sheet human coders fill in: one row per segment x coder, an empty column per dimension."""
    base = segments[segments["segment_found"]][list(SEGMENT_KEY) + ["segment"]]
    sheets = [base.assign(coder=c) for c in coders]
    out = pd.concat(sheets, ignore_index=True)
    for d in scheme.ids:
        out[d] = ""
    return out


def read_codes(source: str | os.PathLike | pd.DataFrame, scheme: CodingScheme) -> pd.DataFrame:
    """Read coded segments (a CSV from :func:`coding_template`, filled in) and check every code.

    A code may be written as the scheme's code or its label (case and surrounding spaces
    ignored); a cell left empty stays missing. Anything else is an error naming the row,
    the column and the valid codes.

    Returns
    -------
    DataFrame
        ``item_id``, ``model``, ``attempt_id``, ``criterion``, ``coder`` and one column per
        dimension holding the canonical code (or missing).
    """
    if isinstance(source, pd.DataFrame):
        data, where = source.copy(), "codes"
    else:
        where = str(source)
        try:
            data = pd.read_csv(source, dtype=str, keep_default_na=False)
        except (OSError, pd.errors.ParserError, UnicodeDecodeError) as exc:
            raise DataError(f"{where}: cannot read the codes CSV ({exc})") from None
    require_columns(data, list(SEGMENT_KEY) + ["coder", *scheme.ids], what=where)
    out = data[list(SEGMENT_KEY) + ["coder"]].astype(str).copy()
    for d in scheme.dimensions:
        lookup = scheme.lookup(d)
        values = []
        for row, raw in zip(data.index, data[d.id]):
            text = "" if raw is None or (isinstance(raw, float) and raw != raw) else str(raw).strip()
            if not text:
                values.append(None)
            elif text.lower() in lookup:
                values.append(lookup[text.lower()])
            else:
                raise DataError(f"{where}: row {row + 2 if where != 'codes' else row}, column {d.id!r}: "
                                f"{text!r} is not a code of {d.name}; valid: {list(d.codes)}")  # fmt: skip
        out[d.id] = values
    dup = out.duplicated(list(SEGMENT_KEY) + ["coder"], keep=False)
    if dup.any():
        first = out[dup].iloc[0]
        raise DataError(f"{where}: coder {first['coder']!r} coded segment {tuple(first[list(SEGMENT_KEY)])} twice")
    return out


def intercoder_agreement(
    codes: pd.DataFrame,
    scheme: CodingScheme,
    *,
    coders: Sequence[str] | None = None,
    target: float = 0.70,
    confidence: float = 0.95,
    random_state: int | np.random.Generator | None = None,
) -> pd.DataFrame:
    """Cohen's kappa per coding dimension between two coders (7.4.5: refine until >= 0.70).

    Segments are nested in replies (one segment per rubric category of a reply), so the
    interval is a percentile bootstrap over replies, inside [-1, 1] by construction: the
    Wald interval treats the segments as independent and passes 1 near perfect agreement.

    Parameters
    ----------
    codes : DataFrame
        From :func:`read_codes` (or LLM codes in the same shape).
    scheme : CodingScheme
    coders : pair of str, optional
        The two coders compared; default the two in ``codes`` (an error if not exactly two).
    target : float
        The kappa a dimension must reach.
    confidence : float
    random_state : int, Generator or None
        Seed of the bootstrap over replies.

    Returns
    -------
    DataFrame
        One row per dimension: ``dimension``, ``coder_a``, ``coder_b``, ``estimate``,
        ``ci_low``, ``ci_high``, ``ci_method``, ``p_value``, ``n`` (segments coded by both),
        ``n_replies`` (the replies they come from), ``n_transcripts``,
        ``percent_agreement``, ``target``, ``verdict`` and ``meets_target``
        (:func:`kappa_verdicts`), ``method``. A dimension where
        both coders used a single, identical code has an undefined kappa (NaN) and says so.
    """
    from hce.stats import cohen_kappa

    present = sorted(codes["coder"].unique())
    pair = list(coders) if coders is not None else present
    if len(pair) != 2:
        raise DataError(f"Cohen's kappa compares exactly two coders; found {present} (pass coders=[a, b])")
    missing = [c for c in pair if c not in present]
    if missing:
        raise DataError(f"coder(s) {missing} have no codes; coders present: {present}")
    data = codes[codes["coder"].isin(pair)].copy()
    data["segment"] = data[list(SEGMENT_KEY)].astype(str).agg("|".join, axis=1)
    data["reply"] = data[["item_id", "model", "attempt_id"]].astype(str).agg("|".join, axis=1)
    rng = as_generator(random_state)
    rows = []
    for d in scheme.dimensions:
        cell = data.dropna(subset=[d.id])
        both = cell.groupby("segment")["coder"].nunique()
        cell = cell[cell["segment"].isin(both[both == 2].index)]
        wide = cell.pivot(index="segment", columns="coder", values=d.id)
        n = len(wide)
        agree = float((wide[pair[0]] == wide[pair[1]]).mean()) if n else np.nan
        row = {"dimension": d.id, "coder_a": pair[0], "coder_b": pair[1], "n": n, "n_replies": cell["reply"].nunique(),
               "n_transcripts": cell["item_id"].nunique(), "percent_agreement": agree}  # fmt: skip
        if n >= 2 and cell[d.id].nunique() >= 2:
            k = cohen_kappa(cell, item="segment", rater="coder", score=d.id, categories=list(d.codes), confidence=confidence,
                            ci_method="bootstrap", cluster="reply", random_state=rng).iloc[0]  # fmt: skip
            row.update(estimate=k["estimate"], ci_low=k["ci_low"], ci_high=k["ci_high"], ci_method=k["ci_method"],
                       p_value=k["p_value"], method=k["method"])  # fmt: skip
        else:
            why = "fewer than 2 segments coded by both" if n < 2 else "both coders used one identical code: kappa undefined"
            row.update(estimate=np.nan, ci_low=np.nan, ci_high=np.nan, ci_method="", p_value=np.nan, method=why)
        rows.append(row)
    out = kappa_verdicts(pd.DataFrame(rows).assign(target=target))
    return out[["dimension", "coder_a", "coder_b", "estimate", "ci_low", "ci_high", "ci_method", "p_value", "n",
                "n_replies", "n_transcripts", "percent_agreement", "target", "verdict", "meets_target", "method"]]  # fmt: skip


def kappa_verdicts(kappa: pd.DataFrame) -> pd.DataFrame:
    """Kappas with the target rule's ``verdict`` (the 95% CI lower limit >= ``target``) and ``meets_target`` (verdict "met").

    The target is an interval rule like every declared threshold of the study
    (:data:`hce.study.rules.RULES` ``"KAPPA"``): an estimate of 0.76 with a lower limit of
    0.60 has not shown a kappa of 0.70. Recomputed from the limits, so a table saved by an
    older run that compared the point estimate is judged by the rule too.
    """
    words = [verdict(rule("KAPPA", threshold=float(row.target)), ci_low=row.ci_low, ci_high=row.ci_high)
             for row in kappa.itertuples(index=False)]  # fmt: skip
    return kappa.assign(verdict=words, meets_target=[w == POSITIVE["metric"] for w in words])


# --- LLM coding ----------------------------------------------------------------------------

_CODING_INSTRUCTIONS = """You are a qualitative researcher coding the reasoning an AI judge gave when it scored a patient's communication with the "{rubric}".
Below are the judge's reasoning segments, one per rubric category, for one transcript. Apply the coding scheme to each segment independently. For each dimension choose exactly one code from the list.

Coding scheme:
{scheme}

Transcript the judge assessed:
{transcript}

Reasoning segments:
{segments}

Answer with one JSON object and nothing else: a key per category id ({categories}), each mapping every dimension id ({dimensions}) to one code."""


def coding_messages(segments: Mapping[str, str | None], transcript: str, scheme: CodingScheme, *, rubric: Rubric | None = None) -> list[dict[str, str]]:
    """The chat message asking an LLM to code one reply's segments (one JSON object back).

    This prompt is hce's own (the protocol gives none); it is part of the logged request.
    """
    rubric = rubric or load_rubric("v5")
    names = {c.id: c.name for c in rubric.categories}
    shown = [f"[{cid}] {names.get(cid, cid)}:\n{text}" for cid, text in segments.items() if text]
    content = _CODING_INSTRUCTIONS.format(
        rubric=rubric.name, scheme=scheme.render(), transcript=transcript, segments="\n\n".join(shown),
        categories=", ".join(cid for cid, text in segments.items() if text), dimensions=", ".join(scheme.ids),
    )  # fmt: skip
    return [{"role": "user", "content": content}]


def parse_codes(text: str | None, scheme: CodingScheme, criteria: Sequence[str]) -> tuple[dict[str, dict[str, str | None]], list[str]]:
    """Read an LLM's JSON codes; never raises: unreadable or invalid codes are listed as problems.

    Returns
    -------
    (codes, problems)
        ``codes[criterion][dimension]`` is a valid code or None; ``problems`` says what was wrong.
    """
    codes: dict[str, dict[str, str | None]] = {c: dict.fromkeys(scheme.ids) for c in criteria}
    obj, problem = json_object(text)  # the whole reply, or its first fenced block
    if obj is None:
        return codes, [problem]
    problems = []
    for criterion in criteria:
        given = obj.get(criterion)
        if not isinstance(given, dict):
            problems.append(f"no codes for {criterion}")
            continue
        for d in scheme.dimensions:
            value = given.get(d.id)
            lookup = scheme.lookup(d)
            if isinstance(value, str) and value.strip().lower() in lookup:
                codes[criterion][d.id] = lookup[value.strip().lower()]
            else:
                problems.append(f"{criterion}.{d.id}: {value!r} is not one of {list(d.codes)}")
    return codes, problems
