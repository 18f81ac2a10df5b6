"""The attempt log's schema: its columns, their dtypes and meaning, and the attempt id."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

if TYPE_CHECKING:  # loaded where used: a dry run never needs them (issue 44)
    import pandas as pd

#: A log file's format by its ending (any case).
SUFFIX_FORMATS = {".jsonl": "jsonl", ".ndjson": "jsonl", ".csv": "csv", ".parquet": "parquet", ".pq": "parquet"}


Format = Literal["jsonl", "csv", "parquet"]


@dataclass(frozen=True)
class Column:
    """One column of the schema: its name, dtype (``str``, ``json``, ``int``, ``bool!``, ...), meaning and whether it is required."""

    name: str
    dtype: str
    description: str
    required: bool = False


# Order follows seed 000 section 8 (in snake_case); "json" columns hold JSON text.
SCHEMA: tuple[Column, ...] = (
    Column("attempt_id", "str", "Deterministic hash of experiment, item, condition and attempt number", True),
    Column("experiment_id", "str", "Experiment, e.g. EXP2_PromptOptimization"),
    Column("item_id", "str", "The judged item (TranscriptID / SyntheticTranscriptID)", True),
    Column("condition_id", "str", "Condition: prompt x model x settings"),
    Column("prompt_id", "str", "Prompt template, e.g. P2.3"),
    Column("model", "str", "Model requested"),
    Column("model_version", "str", "Model version as returned by the API"),
    Column("attempt", "int", "Attempt number within item x condition, from 1", True),
    Column("request_id", "str", "The request that answered this attempt, shared by the attempts of one request with n > 1 (samples_per_request); empty for one attempt a request"),
    Column("timestamp", "datetime", "UTC time the call finished (ISO 8601)"),
    Column("temperature", "float", "Sampling temperature"),
    Column("max_tokens", "int", "Maximum output tokens"),
    Column("top_p", "float", "Nucleus sampling parameter (empty: API default)"),
    Column("seed", "int", "Sampling seed sent to the API, if any"),
    Column("golden_run", "int", "Period of a golden-set history (hce collect --golden), from 1; absent otherwise"),
    Column("endpoint", "str", "Name of the design's endpoint the call went to (its address is in the design)"),
    Column("settings_hash", "str", "Fingerprint of the condition's settings (model, prompt, sampling, endpoint)"),
    Column("request", "json_repeated", "The messages sent (JSON text; dictionary-encoded, as each prompt repeats per attempt)"),
    Column("cleaned_chars", "int", "Characters of the transcript removed or rewritten before it was sent (BOM, NUL, ANSI escapes, control and zero-width characters, NFC: hce.collect.design.transcripts.clean_text)"),
    Column("response_text", "str", "The full reply text"),
    Column("finish_reason", "str", "Why generation stopped (stop, length, ...)"),
    Column("logprobs", "json", "Token logprobs with top_logprobs, when asked (JSON text)"),
    Column("input_tokens", "int", "Prompt tokens billed"),
    Column("output_tokens", "int", "Completion tokens billed"),
    Column("cached_tokens", "int", "Prompt tokens served from cache"),
    Column("cache_write_tokens", "int", "Prompt tokens written to the provider's cache, where its usage reports them (prompt_tokens_details.cache_write_tokens; billed at the model's cache-write rate)"),
    Column("cost_usd", "float", "Cost from the dated price table (empty when the model is unpriced)"),
    Column("latency_s", "float", "Wall time of the whole attempt, seconds: every try and the waits between them"),
    Column("latency_last_s", "float", "Wall time of the attempt's last try alone, seconds (empty in logs made before it was logged)"),
    Column("retries", "int", "Tries beyond the first (transient errors retried)"),
    Column("total", "float", "Parsed total score"),
    Column("verdict", "bool", "Parsed boolean verdict (boolean judges)"),
    Column("reasoning", "str", "Parsed reasoning text (chain-of-thought prompts)"),
    Column("confidence", "float", "Numeric confidence in the score, 0-1, when a method gives one (PRD: LLM_Output_Confidence_Score)"),
    Column("confidence_level", "str", "Verbalised confidence as the judge gave it (high/medium/low; boolean judges)"),
    Column("error_flag", "bool!", "True when the call failed or the reply could not be parsed", True),
    Column("error_message", "str", "Why error_flag is set"),
)
COLUMNS: dict[str, Column] = {c.name: c for c in SCHEMA}
# Columns a collector writes beside the schema's (hce.collect.running.log_rows, hce.collect.call.parse): with
# the schema's, the names no rubric criterion may take, as its score would overwrite them.
WRITTEN_COLUMNS = ("retry_errors", "system_fingerprint", "behavior_id", "not_applicable", "uncertain", "verdict_score",
                   "outline", "transcript", "leak_flag", "leak_reason")
RESERVED_COLUMNS = frozenset(COLUMNS) | frozenset(WRITTEN_COLUMNS)
# Where a retry keeps the rows of failed calls it sends again (hce.collect.running.failed): the
# same attempts as the new rows in the log, so the two files are never read together.
RETRIED_SUFFIX = ".retried.jsonl"
ID_COLUMNS = ("attempt_id", "experiment_id", "item_id", "condition_id", "prompt_id", "model", "attempt")


def schema_table() -> pd.DataFrame:
    """The attempt-log schema as a table (column, dtype, required, description).

    Examples
    --------
    >>> import hce.log
    >>> hce.log.schema_table().head(3)[["column", "dtype", "required"]]
              column dtype  required
    0     attempt_id   str      True
    1  experiment_id   str     False
    2        item_id   str      True
    """
    import pandas as pd

    return pd.DataFrame(
        {
            "column": [c.name for c in SCHEMA],
            "dtype": [c.dtype for c in SCHEMA],
            "required": [c.required for c in SCHEMA],
            "description": [c.description for c in SCHEMA],
        }
    )


def make_attempt_id(experiment_id: str, item_id: str, condition_id: str, attempt: int) -> str:
    """Deterministic attempt id, so a resumed run recognises what it already did.

    Examples
    --------
    >>> make_attempt_id("EXP2_PromptOptimization", "T001", "P2.1|gpt-4o-mini|t0.1", 1)
    '9669804c9e12d6832f1d8ffb'
    """
    key = "\x1f".join([str(experiment_id), str(item_id), str(condition_id), str(int(attempt))])
    return hashlib.sha256(key.encode("utf-8")).hexdigest()[:24]


# A dated snapshot an alias resolves to: gpt-4o -> gpt-4o-2024-08-06, gpt-3.5-turbo -> gpt-3.5-turbo-0125.
_SNAPSHOT = re.compile(r"-(\d{4}-\d{2}-\d{2}|\d{4})$")


def served_as_requested(requested: str | None, served: str | None) -> bool:
    """Whether the ``model_version`` a reply names is the ``model`` asked for (itself, or its dated snapshot).

    A local server answers with whatever file it loaded (llama-server names its GGUF): such a
    reply is not the requested model's, and is never priced or reported as it.

    Examples
    --------
    >>> served_as_requested("gpt-4o", "gpt-4o-2024-08-06"), served_as_requested("gpt-4o-mini", "gemma-3-270m-it-Q4_K_M.gguf")
    (True, False)
    """
    if not served or not requested:
        return True  # nothing named: nothing differs
    asked, answered = (re.sub(r"^openai/", "", name.strip()) for name in (requested, served))
    if asked == answered:
        return True
    return answered.startswith(asked) and _SNAPSHOT.fullmatch(answered[len(asked):]) is not None
