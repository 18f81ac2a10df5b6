"""The ``hce collect`` command: run a judge design into an attempt log, or rehearse it (``--dry-run``).

Its own module so that starting it costs little (issue 44: ``hce collect --dry-run`` reaches its estimate in
under a second): this module imports only Typer and Rich at the top; each branch imports the layer it uses in
its body, and the dry run never loads pandas, NumPy, PyArrow, asyncio or the HTTP client. ``hce.cli``
registers :func:`collect` where its help lists it.
"""

from __future__ import annotations

from pathlib import Path

import typer
from rich.table import Table

import hce
from hce._paths import output_file
from hce._cli_format import ERROR, _http_url, _money, _positive, console, print_whole, reported, stderr
from hce.errors import HceError


def collect(
    design: Path = typer.Argument(..., help="The design YAML (items x conditions x attempts)."),
    log: Path = typer.Option(..., "--log", metavar="FILE", help="The JSONL attempt log; rerunning resumes it."),
    dry_run: bool = typer.Option(False, "--dry-run", help="Print calls, tokens and cost; send nothing."),
    pilot: Path = typer.Option(
        None, "--pilot", metavar="FILE", help="With --dry-run: a pilot's attempt log; its mean reply lengths replace the typical ones."
    ),
    concurrency: int = typer.Option(
        None, "--concurrency", min=1, help="Calls in flight at once (default: the design's, else 8)."
    ),
    base_url: str = typer.Option(
        None, "--base-url", callback=_http_url, metavar="URL",
        help="The endpoint of a one-endpoint design (default: the design's, else $OPENAI_BASE_URL).",
    ),
    batch: bool = typer.Option(False, "--batch", help="Send through the OpenAI Batch API: half the price, within 24 h."),
    retry_failed: bool = typer.Option(
        False, "--retry-failed",
        help="Send again the attempts whose call failed (no reply: a timeout, HTTP 4xx/5xx after the retries, a "
        "failure inside a batch); their old rows move to LOG.retried.jsonl. Unusable replies are kept, never re-asked.",
    ),
    # The batch API's older spelling, still accepted; hidden because two names cut the help's option column at 80.
    resubmit_failed: bool = typer.Option(False, "--resubmit-failed", hidden=True),
    new_settings: bool = typer.Option(
        False, "--new-settings",
        help="A condition whose settings (model, prompt, temperature, ...) changed under the same id starts afresh: "
        "its old rows move to LOG.superseded.jsonl. Without it such a log stops the run before any call.",
    ),
    max_same_errors: int = typer.Option(
        10, "--max-same-errors", min=0,
        help="Stop when this many calls in a row of one condition are refused with the same HTTP 4xx error, or get no "
        "answer (timeouts, connection errors), for more than one item (0: never).",
    ),
    max_cost: float = typer.Option(
        None, "--max-cost", callback=_positive, metavar="USD",
        help="Launch no call once the log's spend plus the calls in flight would pass this many USD "
        "(default: the design's run.max_cost_usd).",
    ),
    wait: bool = typer.Option(
        True, "--wait/--no-wait",
        help="With --batch: poll until done (with --cancel: until the batches have stopped), or submit and return "
        "(rerun to collect).",
    ),
    poll_interval: float = typer.Option(
        15.0, "--poll-interval", callback=_positive, metavar="SECONDS",
        help="With --batch: seconds between polls at first (growing 1.5-fold to 5 min).",
    ),
    golden: bool = typer.Option(
        False, "--golden",
        help="DESIGN is a golden set: judge it again as the next period of LOG's history (rows tagged golden_run 1, 2, "
        "...; an unfinished period is resumed), for drift charts (hce audit, hce report).",
    ),
    cancel: bool = typer.Option(
        False, "--cancel",
        help="With --batch: cancel this log's open batches (and uploads not yet submitted) and log the requests they "
        "finished; nothing is sent. A later --batch run without --cancel sends the attempts they never ran.",
    ),
) -> None:
    """Run a judge design into an attempt log (the API key comes from the environment).

    Rerunning resumes; an attempt whose call failed counts as done until --retry-failed sends it again.
    --batch --cancel stops this log's batches.
    """
    # only what a dry run needs: the run's machinery (asyncio, the HTTP client, pandas) loads below, when it runs
    from hce.collect.call.keys import check_addresses, check_keys
    from hce.collect.design.design import load_design
    from hce.collect.estimates import estimate_rows, summarise_estimate

    retry_failed = retry_failed or resubmit_failed
    with reported():
        output_file(log, "--log")  # before reading it: /dev/zero would be read until memory runs out
        if cancel and (not batch or dry_run or retry_failed):
            raise HceError("--cancel goes with --batch, and not with --dry-run or --retry-failed")
        parsed = load_design(design)
        if golden:
            from hce.collect.running.golden import golden_design, next_golden_run

            parsed = golden_design(parsed, next_golden_run(parsed, log))
            console.print(f"golden run {parsed.golden_run} of {design} into {log}", highlight=False)
        check_addresses(parsed, base_url)  # a local endpoint missing its address: refused before a plan names the host
        if batch:
            from hce.collect.call.endpoints import check_batch

            check_batch(parsed)
        table = None if cancel else estimate_rows(parsed, log=log if log.exists() else None, batch=batch,
                                                retry_failed=retry_failed, new_settings=new_settings)
        if batch:
            from hce.collect.running.batch import open_batches

            uncollected = open_batches(log)
        else:
            uncollected = []
    if table is not None and dry_run:
        shown = Table("condition", "prompt", "endpoint", "model", "temperature", "max tokens", "calls", "input tokens",
                      "output tokens", "cost (USD)")
        for row in table:
            cost = "unpriced" if row["cost_usd"] != row["cost_usd"] else f"{row['cost_usd']:,.4f}"
            temp, most = row["temperature"], row["max_tokens"]
            temperature = "not sent" if temp is None or temp != temp else f"{temp:g}"
            max_tokens = "not sent" if most is None or most != most else f"{int(most):,}"
            shown.add_row(row["condition_id"], row["prompt_id"], f"{row['endpoint']} {row['host']}", row["model"],
                          temperature, max_tokens, f"{row['calls']:,}", f"{row['input_tokens']:,}",
                          f"{row['output_tokens']:,}", cost)  # fmt: skip
        print_whole(shown)
        console.print(summarise_estimate(table), highlight=False)
        with reported():
            if parsed.stop_rule is not None:
                console.print(_rule_projection(parsed, table, hce.read_log(pilot) if pilot is not None else None),
                              highlight=False)  # fmt: skip
            limit = max_cost if max_cost is not None else parsed.max_cost_usd
            if limit is not None:
                from hce.collect.running.spend_limit import budget_stop

                console.print(budget_stop(parsed, log if log.exists() else None, limit, batch=batch), highlight=False)
            _print_projection(parsed, hce.read_log(pilot) if pilot is not None else None)
            check_keys(parsed, base_url)  # the run reads every key before its first call: so does its rehearsal
        if uncollected:
            from hce.collect.running.batch import state_path

            console.print(f"note: {len(uncollected)} batches in {state_path(log)} are not collected yet; the calls above "
                          "count their requests, and the next --batch run collects them first and sends only what is "
                          "still missing then", highlight=False)
        return
    from hce.collect.design.fingerprint import set_aside_changed, superseded_path
    from hce.collect.running.batch import cancel_batches, run_batch
    from hce.collect.running.lock import check_free
    from hce.collect.running.runner import run

    if table is not None:
        with reported():
            check_free(log)  # the losing collector says so before printing a plan it will not run
        plan = summarise_estimate(table).replace("dry run: ", "to run: ").replace("; nothing was sent", "")
        console.print(plan, highlight=False)
    try:
        with reported():
            if cancel:
                summary = cancel_batches(parsed, log, base_url=base_url, wait=wait, poll_interval=poll_interval,
                                         progress=True)
            elif batch:
                for change in set_aside_changed(parsed, log) if new_settings else []:
                    console.print(f"{change}: its old rows moved to {superseded_path(log)}", highlight=False)
                summary = run_batch(parsed, log, base_url=base_url, resubmit_failed=retry_failed, wait=wait,
                                    poll_interval=poll_interval, max_cost_usd=max_cost, progress=True)
            else:
                summary = run(parsed, log, concurrency=concurrency, base_url=base_url, retry_failed=retry_failed,
                              new_settings=new_settings, max_same_errors=max_same_errors or None,
                              max_cost_usd=max_cost, progress=True)
    except KeyboardInterrupt:
        console.print(f"interrupted: finished attempts are in {log}; run the same command again to resume"
                      + (" (open batches are kept in the state file next to it)" if batch else ""), highlight=False)
        raise typer.Exit(code=130) from None
    console.print(str(summary), highlight=False)
    if getattr(summary, "all_failed", False):
        stderr.print(f"{ERROR} every call failed (no reply from the endpoint): see error_message in {log}; "
                      "fix the endpoint, then run again with --retry-failed", highlight=False)
        raise typer.Exit(code=2)


def _rule_projection(parsed, table, pilot) -> str:
    """One line for a dry run of a design with a stopping rule: the attempts and cost it may take."""
    import numpy as np

    from hce.collect.running.stopping import expected_under_rule

    rule, rows = parsed.stop_rule, expected_under_rule(parsed, pilot)
    text = (f"stopping rule ({rule.criterion} to +-{rule.half_width:g} at {rule.confidence:.0%}, {rule.min}-{rule.max} "
            f"attempts, {rule.batch} a round): between {rows['at_least'].sum():,} and {rows['at_most'].sum():,} "
            "attempts; the calls above are the most")  # fmt: skip
    if rows["source"].iloc[0] is None:
        return text + "; give --pilot LOG (or the design's attempts.stop_when.prior_sd) for the expected number"
    share = rows["expected"].to_numpy() / rows["at_most"].to_numpy()
    cost = (np.array([row["cost_usd"] for row in table]) * share).sum()
    source = ("from the pilot" if pilot is not None else
              f"assuming the design's prior_sd={rule.prior_sd:g} (an assumption, not a measurement: --pilot LOG measures it)")
    return (text + f"; expected {source} ~{rows['expected'].sum():,.0f} ({1 - rows['expected'].sum() / rows['at_most'].sum():.0%} "
            f"fewer), ~${cost:,.2f}")  # fmt: skip


def _print_projection(parsed, pilot) -> None:
    """The projected cost of the whole design under each way of sending it, with the assumptions."""
    from hce.collect.projection import ASSUMPTIONS, project_rows

    shown = Table("condition", "strategy", "k", "calls", "input tokens", "cached", "output tokens", "cost (USD)",
                  "per 1,000 attempts", "x cheaper")  # fmt: skip
    table = project_rows(parsed, pilot=pilot)
    for row in table:
        priced = row["cost_usd"] == row["cost_usd"]
        shown.add_row(row["condition_id"], row["strategy"], str(row["k"]), f"{row['calls']:,}",
                      f"{row['input_tokens']:,}", f"{row['cached_tokens']:,}", f"{row['output_tokens']:,}",
                      _money(row["cost_usd"]), _money(row["cost_per_1000_attempts"]),
                      f"{row['saving']:.1f}" if priced else "")  # fmt: skip
    console.print("projected cost of every planned attempt, by strategy:", highlight=False)
    print_whole(shown)
    console.print(f"assumptions: {ASSUMPTIONS}", highlight=False)
    if pilot is not None:
        lengths: dict = {}
        for row in table:
            lengths.setdefault(row["condition_id"], row)  # each condition's first row
        said = ", ".join(f"{c} {r['reply_tokens']:.0f} ({r['reply_source']})" for c, r in lengths.items())
        console.print(f"reply tokens per attempt: {said}", highlight=False)
