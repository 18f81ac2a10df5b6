"""The ``hce`` command line: thin wrappers over the Python API."""

from __future__ import annotations

import atexit
import os
import sys
import warnings
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import typer
from rich.table import Table

import hce
from hce._cli_format import ERROR, App, _http_url, _money, _positive, console, print_whole, reported, stderr
from hce._paths import output_file, output_folder
from hce.errors import HceError

app = App(
    help="hce: LLM judges of patient health communication, and the statistics to publish them.",
    no_args_is_help=True,
    add_completion=False,
)
log_app = App(help="Inspect, validate and convert attempt logs.", no_args_is_help=True)
rubric_app = App(help="Show and validate rubrics and boolean behaviour specs.", no_args_is_help=True)
app.add_typer(log_app, name="log")
app.add_typer(rubric_app, name="rubric")
study_app = App(help="The Rubric v5.0 study (Experiments 1-5): plan, run, status.", no_args_is_help=True)
app.add_typer(study_app, name="study")

def _out(default: Path | None, what: str, metavar: str = "FOLDER"):
    """The option of every command that writes files: ``-o/--out``, its help saying what goes there."""
    return typer.Option(default, "-o", "--out", metavar=metavar, help=f"Where to write {what}.")


@contextmanager
def _without_dask_notice(engine: str) -> Iterator[None]:
    """narwhals 2 warns at every Dask frame it wraps (each statistic wraps the log anew) that
    its Dask support moves to the narwhals-dask package one day: nothing a report's reader
    can act on, so the report leaves it out (the guide on logs larger than memory says it)."""
    with warnings.catch_warnings():
        if engine == "dask":
            warnings.filterwarnings("ignore", message="Dask support is moving out of Narwhals", category=FutureWarning)
        yield


@app.command()
def version() -> None:
    """Print the installed hce version."""
    typer.echo(hce.__version__)


@log_app.command("schema")
def log_schema() -> None:
    """List the attempt-log columns with their types."""
    table = Table("column", "dtype", "required", "description")
    for row in hce.log.schema_table().itertuples(index=False):
        table.add_row(row.column, row.dtype, "yes" if row.required else "", row.description)
    console.print(table)


@log_app.command("validate")
def log_validate(
    path: Path = typer.Argument(..., help="A .jsonl, .csv or .parquet attempt log."),
    allow_torn: bool = typer.Option(
        False, "--allow-torn", help="Accept a torn (incomplete) last JSONL line, as left by a run stopped mid-write."
    ),
) -> None:
    """Check a log against the schema; report attempts, items, conditions and errors.

    Exits 2 when the file breaks the schema, 1 when it holds no attempts, (without
    --allow-torn) ends in a torn line, or has a score column holding text among its
    numbers ("three" for 3), 0 when it is valid.
    """
    with reported(), warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        log = hce.read_log(path)
    torn = [w for w in caught if issubclass(w.category, hce.log.TruncatedLogWarning)]
    for w in caught:
        if w not in torn or allow_torn:
            console.print(f"[yellow]note:[/yellow] {w.message}", highlight=False)
    if torn and not allow_torn:
        console.print(f"[red]invalid:[/red] {torn[0].message} (pass --allow-torn to accept it)", highlight=False)
        raise typer.Exit(code=1)
    conditions = log["condition_id"].nunique() if "condition_id" in log else 0
    counts = (
        f"{len(log):,} attempts, {log['item_id'].nunique():,} items, "
        f"{conditions:,} conditions, {int(log['error_flag'].sum()):,} flagged errors"
    )
    if log.empty:
        console.print(f"[red]invalid:[/red] {path}: {counts}; an empty log has nothing to analyse", highlight=False)
        raise typer.Exit(code=1)
    typos = hce.log.text_among_numbers(log)
    for column, row in typos.items():
        console.print(f"[red]invalid:[/red] {path}: column {column!r} holds numbers and text: attempt_id "
                      f"{log['attempt_id'].iloc[row]!r} has {log[column].iloc[row]!r}; a score must be a number", highlight=False)  # fmt: skip
    if typos:
        raise typer.Exit(code=1)
    console.print(f"{path}: valid; {counts}", highlight=False)


@log_app.command("convert")
def log_convert(
    source: Path = typer.Argument(..., help="The log to read."),
    out: Path = _out(..., "the converted log; its format follows the suffix (.jsonl, .csv, .parquet)", "FILE"),
) -> None:
    """Convert a log between JSONL, CSV and Parquet (validating it on the way)."""
    with reported():
        output_file(out, "--out")
        hce.write_log(hce.read_log(source), out)
    console.print(f"wrote {out}", highlight=False)


@rubric_app.command("show")
def rubric_show(source: str = typer.Argument("v5", help="A packaged rubric name or a YAML file.")) -> None:
    """Print a rubric as it is embedded in judge prompts."""
    with reported():
        typer.echo(hce.load_rubric(source).render())


@rubric_app.command("validate")
def rubric_validate(path: Path = typer.Argument(..., help="A rubric YAML file.")) -> None:
    """Check a rubric YAML file; report its categories and total range."""
    with reported():
        rubric = hce.load_rubric(path)
    low, high = rubric.total_range
    console.print(f"{path}: valid; {len(rubric.categories)} categories, total {low}-{high}", highlight=False)
    for category in rubric.categories:
        if len(category.scores) != category.max_score - category.min_score + 1:
            console.print(f"note: {category.name} scores only {list(category.scores)} (allow_gaps); others are flagged", highlight=False)


@rubric_app.command("behavior")
def rubric_behavior(source: str = typer.Argument(..., help="A packaged behaviour name or a YAML file.")) -> None:
    """Check a boolean behaviour spec (the boolean judge specification's format) and summarise it."""
    with reported():
        spec = hce.load_behavior(source)
    console.print(
        f"{spec.behavior_id}: valid; {len(spec.pass_conditions)} pass conditions, "
        f"{len(spec.automatic_fail)} automatic fails, {len(spec.examples)} examples, severity {spec.severity}",
        highlight=False,
    )


# the command lives in its own module, imported only with what it needs (issue 44: a dry run in < 1 s)
from hce._cli_collect import collect  # noqa: E402

app.command()(collect)


@app.command()
def cost(
    logs: list[Path] = typer.Argument(..., help="One or more attempt logs (JSONL, CSV or Parquet)."),
    by: str = typer.Option("condition_id", "--by", metavar="COLUMN", help="The column to group by."),
) -> None:
    """Cost and tokens per condition and per 1,000 attempts, cached and batch shares, latency."""
    import pandas as pd

    from hce.report.cost import cost_summary

    with reported():
        table = cost_summary(pd.concat([hce.read_log(path) for path in logs], ignore_index=True), by=by)
    shown = Table(by, "attempts", "requests", "cost (USD)", "per 1,000 attempts", "input tokens", "cached",
                  "output tokens", "batch", "latency (s, median)")  # fmt: skip
    for row in table.to_dict("records"):
        cached = "" if row["cached_share"] != row["cached_share"] else f" ({row['cached_share']:.0%})"
        latency = "" if row["latency_median_s"] != row["latency_median_s"] else f"{row['latency_median_s']:.2f}"
        shown.add_row(str(row[by]), f"{row['attempts']:,}", f"{row['requests']:,}", _money(row["cost_usd"]),
                      _money(row["cost_per_1000_attempts"]), f"{row['input_tokens']:,}", f"{row['cached_tokens']:,}{cached}",
                      f"{row['output_tokens']:,}", f"{row['batch_share']:.0%}", latency)  # fmt: skip
    print_whole(shown)


def _integers(value: str) -> list[int]:
    try:
        numbers = [int(v) for v in value.split(",") if v.strip()]
    except ValueError:
        raise typer.BadParameter(f"must be whole numbers separated by commas, got {value!r}") from None
    if not numbers:
        raise typer.BadParameter("give at least one number")
    return numbers


@app.command()
def plan(
    pilot: Path = typer.Argument(..., help="The pilot's attempt log (JSONL, CSV or Parquet): two or more conditions, two or more attempts each."),
    score: str = typer.Option("total", "--score", metavar="COLUMN", help="The score (or 0/1 verdict) compared."),
    condition: str = typer.Option("condition_id", "--condition", metavar="COLUMN", help="The condition column."),
    items: str = typer.Option("20,40,80,160", "--items", metavar="N,N,...", help="Items per condition in the grid."),
    attempts: str = typer.Option("1,3,5,10", "--attempts", metavar="N,N,...", help="Attempts per item in the grid."),
    power: float = typer.Option(0.8, "--power", metavar="P", help="Power the difference is detected with."),
    alpha: float = typer.Option(0.05, "--alpha", metavar="P", help="Two-sided significance level."),
    delta: float = typer.Option(None, "--delta", metavar="D", help="A difference to detect: adds each design's power against it."),
    unpaired: bool = typer.Option(False, "--unpaired", help="Other items under each condition (default: the same items)."),
    reliability: float = typer.Option(0.8, "--reliability", metavar="G", help="The G and Phi the attempts are solved for."),
    rule_min: int = typer.Option(3, "--rule-min", min=1, metavar="N", help="The stopping rule's attempts for every item."),
    rule_max: int = typer.Option(15, "--rule-max", min=1, metavar="N", help="The stopping rule's most attempts."),
    half_width: float = typer.Option(0.5, "--half-width", callback=_positive, metavar="W",
                                     help="The stopping rule's target half-width of an item mean's 95% interval."),
    humans: Path = typer.Option(None, "--humans", metavar="FILE", help="CSV of human ratings of the pilot's items "
                                "(item_id, rater, one column per criterion): adds the human labels the main study needs."),
    label_cost: float = typer.Option(None, "--label-cost", callback=_positive, metavar="USD",
                                     help="With --humans: the cost of one item's human score."),
    label_half_width: float = typer.Option(None, "--label-half-width", callback=_positive, metavar="W",
                                           help="With --humans: the target half-width of the 95% interval of the score's mean."),
    seed: int = typer.Option(0, "--seed", metavar="N", help="Seed of the interval draws and the stopping rule's simulation."),
) -> None:
    """Plan the main study from a pilot: detectable differences with costs, attempts needed, stopping savings, human labels."""
    import pandas as pd

    from hce.study.pilot_plan import plan_from_pilot

    with reported():
        if humans is not None and (label_cost is None or label_half_width is None):
            raise HceError("--humans needs --label-cost USD and --label-half-width W")
        result = plan_from_pilot(hce.read_log(pilot), score=score, condition=condition, n_items=_integers(items),
                                 n_attempts=_integers(attempts), alpha=alpha, power=power, paired=not unpaired,
                                 delta=delta, reliability=reliability, rule_min=rule_min, rule_max=rule_max,
                                 half_width=half_width, humans=None if humans is None else pd.read_csv(humans),
                                 label_cost=label_cost, label_half_width=label_half_width, random_state=seed)  # fmt: skip
    comps = ", ".join(f"{r.component} {r.estimate:.4g}" for r in result.components.itertuples())
    console.print(f"pilot {pilot}: variance components ({result.components['scale'].iloc[0]} scale) {comps}; "
                  f"{_money(result.cost_per_attempt)} USD per attempt", highlight=False)  # fmt: skip
    binary = "p_detectable" in result.grid.columns
    shown = Table("items", "attempts", "detectable difference", *(["implied proportion"] if binary else []), "calls",
                  "cost (USD)")  # fmt: skip
    for row in result.grid.itertuples():
        extra = [f"{row.p_reference:.3f} -> {row.p_detectable:.3f}"] if binary else []
        shown.add_row(f"{row.n_items:,}", f"{row.n_attempts:,}", f"{row.estimate:.3f}", *extra, f"{row.calls:,}",
                      _money(row.cost_usd))  # fmt: skip
    console.print(f"smallest difference of two conditions' mean {score} detected with power {power:g} at alpha "
                  f"{alpha:g} ({'unpaired' if unpaired else 'paired'}), the cheapest design first:", highlight=False)
    print_whole(shown)
    if result.power is not None:
        first = result.power.iloc[0]
        said = (f"the cheapest design reaching power {power:g} against a difference of {delta:g}: {first['n_items']} items x "
                f"{first['n_attempts']} attempts, {first['calls']:,} calls, {_money(first['cost_usd'])} USD (power "
                f"{first['estimate']:.2f})") if first["reached"] else f"no design of the grid reaches power {power:g} against {delta:g}"
        console.print(said, highlight=False)
    for row in result.d_study.itertuples():
        needed = f"{int(row.estimate)}" if row.estimate == row.estimate else f"more than {row.max_n}"
        console.print(f"{row.coefficient} >= {reliability:g} for an item's score under one condition: {needed} attempts "
                      f"(95% interval {row.ci_low:g} to {row.ci_high:g})", highlight=False)
    for row in result.stopping.itertuples():
        console.print(f"stopping rule on {row.condition_id}: {rule_min}-{rule_max} attempts to +-{half_width:g}: "
                      f"~{row.expected_attempts:.1f} attempts per item expected, {row.saving:.0%} fewer than {rule_max}",
                      highlight=False)  # fmt: skip
    if result.labels is not None:
        shown = Table("condition", "human labels", "judge only", "labels (USD)", "judge (USD)", "total (USD)",
                      "humans alone (USD)", "PPI corr.")  # fmt: skip
        for row in result.labels.itertuples():
            shown.add_row(str(getattr(row, condition)), f"{row.n_labelled:,}", f"{row.n_unlabelled:,}",
                          _money(row.label_cost_usd), _money(row.judge_cost_usd), _money(row.cost),
                          f"{_money(row.classical_cost_usd)} ({row.classical_n:,} items)", f"{row.ppi_corr:.3f}")  # fmt: skip
        console.print(f"items humans score for a 95% interval of the mean {score} of +-{label_half_width:g} (prediction-"
                      f"powered: the judge scores every item), at {label_cost:g} USD an item:", highlight=False)  # fmt: skip
        print_whole(shown)


@app.command("sim-server")
def sim_server(
    port: int = typer.Option(8000, "--port", min=0, max=65535, help="Port on 127.0.0.1 (0: any free port)."),
    seed: int = typer.Option(0, "--seed", help="Seeds every draw and fault: the command line's spelling of SimJudge's seed."),
    latency: float = typer.Option(0.0, "--latency", min=0, metavar="SECONDS", help="Seconds each completion waits."),
    bias: float = typer.Option(0.0, "--bias", help="Score points added to every category (all models)."),
    noise: float = typer.Option(1.2, "--noise", min=0, help="Spread of the judge's scores at temperature 1."),
    profile: list[str] = typer.Option([], "--profile", metavar="MODEL=BIAS,NOISE", help="Per-model bias and noise: MODEL=BIAS,NOISE (repeatable)."),
    fail_429: float = typer.Option(0.0, "--fail-429", min=0, max=1, help="Share of requests answered 429 with Retry-After."),
    fail_500: float = typer.Option(0.0, "--fail-500", min=0, max=1, help="Share of requests answered 500."),
    slow: float = typer.Option(0.0, "--slow", min=0, max=1, help="Share of requests answered --slow-seconds late."),
    malformed: float = typer.Option(0.0, "--malformed", min=0, max=1, help="Share of replies that break the asked format."),
    retry_after: float = typer.Option(1.0, "--retry-after", min=0, metavar="SECONDS", help="Seconds a 429 asks the client to wait."),
    slow_seconds: float = typer.Option(5.0, "--slow-seconds", min=0, metavar="SECONDS", help="Extra wait of a slow reply."),
    reject: str = typer.Option(
        None, "--reject", metavar="MESSAGE", help="Refuse every completion with HTTP 400 and this message (rehearse a refused setting)."
    ),
    redirect: str = typer.Option(
        None, "--redirect", metavar="URL",
        help="Answer every request with 307 to this loopback origin (http://127.0.0.1:PORT), same path: rehearse a "
        "redirect that must not carry the key.",
    ),
    batch_polls: int = typer.Option(2, "--batch-polls", min=0, help="Polls a batch stays in progress before it completes."),
    batch_failures: float = typer.Option(0.0, "--batch-failures", min=0, max=1, help="Share of batch requests that fail inside the batch."),
    batch_cancel_share: float = typer.Option(
        0.5, "--batch-cancel-share", min=0, max=1, help="Share of a cancelled batch's requests it finishes before it stops."
    ),
    api_key: str = typer.Option(
        None, "--api-key", metavar="KEY", help="Answer 401 to any request without this bearer key (rehearse a wrong key)."
    ),
    models: str = typer.Option(
        None, "--models", metavar="MODEL,...", help="Serve only these models, comma-separated; others get 404 (rehearse a misspelt model)."
    ),
    length_bias: float = typer.Option(0.0, "--length-bias", metavar="B", help="Planted bias: B points per 1,000 characters of text on every criterion."),
    order_bias: float = typer.Option(0.0, "--order-bias", metavar="B", help="Planted bias: the first-presented criterion scored B higher."),
    self_preference: float = typer.Option(
        0.0, "--self-preference", metavar="B", help="Planted bias: B points for texts of the judge's own model family (needs --authors)."
    ),
    authors: Path = typer.Option(
        None, "--authors", metavar="ITEMS", help="The design's items file (.jsonl/.csv with text and author_model), for --self-preference."
    ),
    drift_after: int = typer.Option(None, "--drift-after", min=0, metavar="N", help="Planted drift: after N completions every score moves by --drift-shift."),
    drift_shift: float = typer.Option(0.0, "--drift-shift", metavar="D", help="The planted drift's shift in score points."),
) -> None:
    """Serve a simulated OpenAI-compatible judge with known truth on 127.0.0.1 (Ctrl-C stops it)."""
    import asyncio

    from hce.sim import Faults, Profile, SimJudge, SimServer
    from hce.sim.batch import BatchSettings
    from hce.sim.biases import PlantedBiases, read_authors

    with reported():
        profiles = {}
        for spec in profile:
            name, _, values = spec.rpartition("=")
            try:
                model_bias, model_noise = (float(v) for v in values.split(","))
            except ValueError:
                raise HceError(f"--profile {spec!r}: expected MODEL=BIAS,NOISE, e.g. gpt-4o=0.3,0.5") from None
            profiles[name] = Profile(model_bias, model_noise)
        faults = Faults(fail_429, fail_500, slow, malformed, retry_after, slow_seconds, reject=reject, redirect=redirect)
        if self_preference and authors is None:
            raise HceError("--self-preference needs --authors ITEMS: the items file that names each text's author_model")
        planted = PlantedBiases(length=length_bias, order=order_bias, self_preference=self_preference,
                                drift_after=drift_after, drift_shift=drift_shift,
                                authors=read_authors(authors) if authors is not None else {})  # fmt: skip
        judge = SimJudge(seed=seed, profiles=profiles, default=Profile(bias, noise), faults=faults, latency=latency, biases=planted,
                         batch=BatchSettings(polls=batch_polls, failure_rate=batch_failures,
                                             cancel_share=batch_cancel_share),
                         models=[m.strip() for m in models.split(",") if m.strip()] if models else None)
        server = SimServer(judge, port=port, api_key=api_key)

    def ready(s: SimServer) -> None:
        only = f"; models {', '.join(judge.models)} only" if judge.models else ""
        needs = "; a key is required" if api_key else ""
        console.print(f"simulated judge (seed {seed}) at {s.url}{only}{needs}; Ctrl-C stops it", highlight=False)

    try:
        asyncio.run(server.serve(ready))
    except KeyboardInterrupt:
        pass
    except OSError as exc:  # the port is taken, say
        stderr.print(f"{ERROR} cannot serve on 127.0.0.1:{port}: {exc.strerror or exc}", highlight=False)
        raise typer.Exit(code=2) from None


@app.command()
def audit(
    design: Path = typer.Argument(..., help="The design YAML, with a probes: section."),
    log: Path = typer.Option(..., "--log", metavar="FILE", help="The JSONL attempt log; rerunning resumes it."),
    out: Path = _out(Path("audit"), "the audit report (audit.md, report.html, figures/ and a CSV per table)"),
    margin: float = typer.Option(0.25, "--margin", min=0, help="The equivalence margin in score points."),
    period: str = typer.Option("model_version", "--period", metavar="COLUMN", help="The drift's period column."),
    base_url: str = typer.Option(None, "--base-url", metavar="URL", help="Send every call here (e.g. hce sim-server's address)."),
    concurrency: int = typer.Option(None, "--concurrency", min=1, help="Calls in flight at most (default: the design's)."),
) -> None:
    """Run a design's probes and write the judge's bias audit: each probe's effect and equivalence, length bias, drift."""
    from hce.study.audit import run_audit

    with reported():
        output_file(log, "--log")
        kwargs = {"base_url": base_url} if base_url else {}
        if concurrency:
            kwargs["concurrency"] = concurrency
        path = run_audit(design, log, out, margin=margin, period=period, **kwargs)
    console.print(f"audit written to {path}", highlight=False)


_STUDY_TEMPLATE = """# A study of the Rubric v5.0 protocol's Experiments 1-5. Only what differs from the packaged defaults
# (hce/study/data/study_default.yaml, the protocol's numbers) needs to be here.
name: my-study
output: study_output
corpus:
  paths: [{corpus}]     # folders of .txt, or .csv / .jsonl files with id and text columns
# humans: ratings.csv   # human ratings of the items (item_id, rater, a column per criterion or total):
#                       # the report's "Agreement with human raters"; experiments.expN.humans for one experiment
{extra}"""


@study_app.command("init")
def study_init(
    folder: Path = typer.Argument(..., help="Folder to create the study file in."),
    demo: bool = typer.Option(False, "--demo", help="Copy the synthetic demo corpus and a reduced-size study."),
) -> None:
    """Write a starting study.yaml (with --demo: the demo corpus and a reduced study for --simulate)."""
    from importlib import resources

    with reported():
        output_folder(folder, "folder")
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / "study.yaml"
    with reported():
        if target.exists():
            raise HceError(f"{target} exists; edit it or choose another folder")
    if demo:
        corpus = resources.files("hce.data").joinpath("demo_corpus.jsonl").read_text(encoding="utf-8")
        (folder / "demo_corpus.jsonl").write_text(corpus, encoding="utf-8")
        from hce.study.config import packaged

        extra = packaged("study_demo.yaml")
        text = _STUDY_TEMPLATE.format(corpus="demo_corpus.jsonl", extra=extra)
    else:
        text = _STUDY_TEMPLATE.format(corpus="transcripts/", extra="")
    target.write_text(text, encoding="utf-8")
    console.print(f"wrote {target}" + (" and the demo corpus; try: hce study run --simulate " + str(target) if demo else ""),
                  highlight=False)


@study_app.command("plan")
def study_plan(study: Path = typer.Argument(..., help="The study YAML.")) -> None:
    """Calls, tokens and cost of every experiment; nothing is sent."""
    import hce.study as st

    with reported():
        parsed = st.load_study(study)
        table = st.plan(parsed, st.load_corpus(parsed))
    shown = Table("experiment", "step", "prompt", "model", "items", "attempts", "calls", "input tokens",
                  "output tokens", "cost (USD)")
    for row in table.itertuples(index=False):
        cost = "unpriced" if row.cost_usd != row.cost_usd else f"{row.cost_usd:,.2f}"
        shown.add_row(row.experiment.split("_")[0], row.step, row.prompt_id, row.model, f"{row.items:,}", f"{row.attempts:,}",
                      f"{row.calls:,}", f"{row.input_tokens:,}", f"{row.output_tokens:,}", cost)
    console.print(shown)
    for note in dict.fromkeys(table["note"]):
        console.print(f"note: {note}", highlight=False)
    total = table["cost_usd"].sum(min_count=1)
    console.print(f"total: {int(table['calls'].sum()):,} calls, ~${0.0 if total != total else total:,.2f} "
                  "(before prompt caching; regenerations and retries not counted); nothing was sent", highlight=False)


@study_app.command("run")
def study_run(
    study: Path = typer.Argument(..., help="The study YAML."),
    simulate: bool = typer.Option(False, "--simulate", help="Judge with the local simulated judge (no API, no cost)."),
    until: str = typer.Option(None, "--until", metavar="[exp1|exp2|exp3|exp4|exp5]", help="Stop after this experiment (exp1 ... exp5)."),
    base_url: str = typer.Option(
        None, "--base-url", callback=_http_url, metavar="URL", help="The endpoint (default: the study's, else $OPENAI_BASE_URL)."
    ),
) -> None:
    """Run the experiments in order, each feeding the next; rerun to resume."""
    import hce.study as st

    try:
        with reported():
            try:
                result = st.run_study(study, simulate=simulate, base_url=base_url, progress=True, until=until)
            except st.StudyStop as exc:
                console.print(f"[yellow]stopped:[/yellow] {exc}", highlight=False)
                raise typer.Exit(code=3) from None
    except KeyboardInterrupt:
        console.print("interrupted: finished attempts are logged; run the same command again to resume", highlight=False)
        raise typer.Exit(code=130) from None
    for key, summary in result.summaries.items():
        console.print(f"{key}: {summary}", highlight=False)
    for kind, decision in result.decisions.items():
        console.print(f"winning {kind}: {decision['choice']} ({decision['source']})", highlight=False)
    for message in result.messages:
        console.print(message, highlight=False)
    console.print(f"outputs in {result.output}" + (" (SIMULATED judge: not real results)" if simulate else ""),
                  highlight=False)


@study_app.command("status")
def study_status(study: Path = typer.Argument(..., help="The study YAML.")) -> None:
    """Attempts logged per experiment, errors, and the decisions made so far."""
    import hce.study as st

    with reported():
        table = st.status(st.load_study(study))
    shown = Table("experiment", "enabled", "attempts logged", "errors", "items", "decision")
    for row in table.itertuples(index=False):
        shown.add_row(row.experiment, "yes" if row.enabled else "no", f"{row.attempts_logged:,}", f"{row.errors:,}",
                      f"{row.items:,}", row.decision)
    print_whole(shown)  # experiment ids whole, whatever the terminal's width


@log_app.command("merge")
def log_merge(
    logs: list[Path] = typer.Argument(..., help="Logs that overlap on purpose (.jsonl, .csv, .parquet)."),
    out: Path = _out(..., "the merged log; its format follows the suffix (.jsonl, .csv, .parquet)", "FILE"),
    prefer: str = typer.Option(None, "--prefer", metavar="first|last|usable", help="How two different answers for one "
                               "attempt are settled: the log given first, or last, or a usable reply over a flagged "
                               "one (default: refused, naming them)."),
) -> None:
    """Combine overlapping logs into one with one row per attempt id.

    Where an attempt has several rows, a reply wins over a failed call (no reply), and
    rows holding the same answer are one. Two different answers for one attempt are
    refused, naming them, unless --prefer chooses. The rows left out are counted.
    """
    with reported():
        if out.resolve() in {log.resolve() for log in logs}:
            raise hce.LogFormatError(f"{out}: the merged log would replace one of its inputs; write it elsewhere")
        output_file(out, "--out")
        merged, dropped = hce.log.merge_logs(logs, prefer=prefer)
        hce.write_log(merged, out)
    failed = int(dropped["error_flag"].sum())
    console.print(
        f"wrote {out}: {len(merged):,} attempts; left out {len(dropped):,} repeated row(s) "
        f"({failed:,} flagged, {len(dropped) - failed:,} successful ones after the first)",
        highlight=False,
    )


@app.command()
def report(
    logs: list[Path] = typer.Argument(..., help="A study's output folder, or one or more attempt logs (.jsonl, .csv, .parquet)."),
    out: Path = _out(Path("reports/study"), "report.md, report.html, tables/ and figures/ (the folder is replaced)"),
    title: str = typer.Option(
        None, "--title", help="The report's title (default: 'LLM judge report', or 'LLM judge study report' for the "
        "PRD's study, as in Python)."
    ),
    strata: list[str] = typer.Option([], "--strata", metavar="COLUMN", help="Demographic column(s) for the fairness analysis (the protocol's success metric: no detrimental difference across strata)."),
    metadata: list[str] = typer.Option([], "--metadata", metavar="COLUMN", help="Transcript metadata column(s) for Experiment 5 (repeatable)."),
    bayes: bool = typer.Option(False, "--bayes", help="Add the Bayesian section (MCMC; takes minutes)."),
    rubric: str | None = typer.Option(None, "--rubric", metavar="RUBRIC", help="Rubric the log was judged with (packaged name or YAML); generic report."),
    generic: bool = typer.Option(False, "--generic", help="The generic report even for a log of the PRD's Experiments 1-5."),
    humans: Path | None = typer.Option(None, "--humans", metavar="FILE", help="CSV of human ratings of the log's items "
                                       "(item_id, rater, one column per criterion): adds 'Agreement with human raters' "
                                       "to the generic report (rater_role='human' rows of the log do too)."),
    seed: int = typer.Option(0, "--seed", help="Seeds the bootstrap and simulation intervals, so each run gives the same report: "
                             "the command line's spelling of random_state (hce.report.report(..., random_state=0))."),
    engine: str = typer.Option("pandas", "--engine", metavar="[pandas|duckdb|polars|spark|dask|auto]", help="Where the statistics run: pandas (the log in memory), or duckdb, "
                               "polars, spark, dask (PATH is one Parquet/JSONL file or directory, read lazily: logs larger "
                               "than memory), or auto (DuckDB past 256 MB on disk, else pandas)."),
    memory_limit: str | None = typer.Option(None, "--memory-limit", metavar="SIZE", help="DuckDB: the memory it holds before "
                                            "spilling to the temp folder (default 2GB); Spark: the driver's memory (2GB: 2g)."),
    spark_master: str | None = typer.Option(None, "--spark-master", metavar="URL", help="--engine spark: the master of the "
                                            "session (local[2], spark://host:7077, yarn; default Spark's own)."),
    spark_conf: list[str] = typer.Option([], "--spark-conf", metavar="KEY=VALUE", help="--engine spark: a setting of the "
                                         "session (repeatable), e.g. spark.executor.memory=8g."),
    schema: str = typer.Option("strict", "--schema", metavar="[strict|union]", help="Log files whose columns differ: "
                               "refused, naming the file and the column (strict), or read with a missing column as "
                               "null there, saying so (union)."),
) -> None:
    """Write the report of attempt logs, or of a study's output folder (no API calls).

    A log whose experiment ids are all the PRD's (EXP1_... to EXP5_...) gets the study report
    (experiments, scorecard); any other log, or --generic, the generic report: per condition_id
    and per rubric criterion, spread, tests, variance decomposition, reliability, calibration.
    The folder is replaced as a whole (only a folder hce wrote, or an empty one). Exits 0 when
    every section the log supports was written, 1 when some were not (listed under "Not
    reported" in the report and on stderr, with the reason and the fix), 2 on a usage error
    (a bad option value, an unreadable log) before any work.
    """
    from hce._cli_report import engine_options, say_not_reported, write_report

    titled = {} if title is None else {"title": title}  # else each report's own default, as in Python
    with reported(), _progress() as progress, _without_dask_notice(engine):
        output_folder(out, "--out")
        built, folder = write_report(logs, out, progress=progress, engine=engine, schema=schema, titled=titled,
                                     conf=engine_options(engine, memory_limit, spark_master, spark_conf),
                                     strata=strata, metadata=metadata, bayes=bayes, rubric=rubric, generic=generic,
                                     humans=humans, seed=seed)  # fmt: skip
    _AFTER["quick_exit"] = True  # every file is written and closed
    if say_not_reported(built, folder, console, stderr):
        raise typer.Exit(code=1)


@contextmanager
def _progress() -> Iterator[Callable[[str], None]]:
    """A live line on stderr naming the part being computed, on a terminal only (quiet in pipes and logs)."""
    if not stderr.is_terminal:
        yield lambda _text: None
        return
    with stderr.status("report: reading the log") as status:
        yield lambda text: status.update(f"report: {text}")


@app.command("manuscript")
def manuscript_command(
    study: Path = typer.Argument(..., help="A study's output folder, or hce demo's report folder (which holds one)."),
    out: Path = _out(None, "manuscript.md, .docx and .tex, and supplement/ (default: STUDY/manuscript)"),
    title: str = typer.Option(None, "--title", metavar="TEXT", help="Title (default: the study file's manuscript.title, else the outline's)."),
    report: Path = typer.Option(None, "--report", metavar="FOLDER", help="The study report to cite (default: the one in STUDY, else written first)."),
) -> None:
    """Write the draft manuscript of a study: every number from the study report's tables, with its source."""
    from hce.study.manuscript import manuscript

    with reported():
        if out is not None:
            output_folder(out, "--out")
        written = manuscript(study, out, title=title, report_dir=report)
    folder = written["out"]
    console.print(f"wrote {folder / 'manuscript.md'}, .docx and .tex, and {folder / 'supplement'}", highlight=False)
    from hce.study.manuscript.front import ABSTRACT_WORDS

    over = f" (over the journal's {ABSTRACT_WORDS})" if written["abstract_words"] > ABSTRACT_WORDS else ""
    console.print(f"words: abstract {written['abstract_words']:,}{over}, main text {written['main_words']:,}", highlight=False)


@app.command()
def demo(
    out: Path = _out(Path("reports/demo"), "the report; the study's logs go to OUT/study"),
) -> None:
    """Run the whole study offline on the demo corpus with the simulated judge, then write its report."""
    from hce.study.demo import run_demo

    console.print("hce demo: simulated judge on loopback, demo corpus, reduced Experiments 1-5 (no API key, no cost)",
                  highlight=False)
    with reported():
        output_folder(out, "--out")
        folder = run_demo(out, progress=True)
    console.print(f"report: {folder / 'report.html'} (and report.md, tables/, figures/); SIMULATED judge, not real results",
                  highlight=False)


@app.command()
def example(
    out: Path = _out(Path("."), "the example inputs: OUT/transcripts/*.txt and OUT/summaries.jsonl"),
    n: int = typer.Option(None, "--n", min=1, help="The first N dialogues only (default: all 24)."),
) -> None:
    """Write hce's demo dialogues as a design's inputs, to try the guides before your own transcripts are ready."""
    from hce.examples import write_example_inputs

    with reported():
        written = write_example_inputs(out, n=n)
    console.print(f"wrote {len(written) - 1} transcripts to {out / 'transcripts'} and {written[-1]}", highlight=False)


#: Set by a command when its files are written: :func:`main` then ends the process without the
#: interpreter's teardown of every module and object, 0.5-0.8 s after a pilot's report (issue 35).
_AFTER = {"quick_exit": False}


def main() -> None:
    try:
        app()
    except SystemExit as done:
        if not _AFTER["quick_exit"]:
            raise
        if done.code is not None and not isinstance(done.code, int):
            print(done.code, file=sys.stderr)  # as the interpreter prints a message exit
        atexit._run_exitfuncs()  # what the interpreter runs at exit (logging's flush, temporary files)
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(done.code if isinstance(done.code, int) else 0 if done.code is None else 1)


if __name__ == "__main__":  # python -m hce.cli
    main()
