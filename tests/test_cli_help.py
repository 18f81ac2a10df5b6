"""Issue 36, item 6: every command's --help reads in one style.

The walk below reaches every command of ``hce`` (groups included), so a command added later is held
to the same rules: values named as the user types them (``--out FOLDER``, ``LOGS...``), never by
Python type (``<bool>``, ``<int>``, ``{logs}``); no reStructuredText markup; no internal shorthand
for the protocol ("seed 001 section 3", "Success Metric 6"); ``-o/--out`` on every command that
writes files, with the one help wording; every error after the one prefix ``error:``.
"""

from __future__ import annotations

import inspect
import re
import warnings

import pytest
import typer
from typer.testing import CliRunner

from hce.cli import app

runner = CliRunner()
WIDE = {"COLUMNS": "200", "TERMINAL_WIDTH": "200"}

#: Commands that write files, by their words on the command line: each takes -o/--out.
WRITERS = ("log convert", "log merge", "report", "manuscript", "demo")
#: What no help may show: a Python type in angle brackets, a Typer-style {argument}, RST literals,
#: and the project's own names for protocol sections (the seed files, numbered metrics and tables).
FORBIDDEN = {
    "a Python type as metavar": re.compile(r"<(bool|int|float|str|path|list\[[^\]]*\]|[a-z ]+ range)>"),
    "a {argument} in the usage line": re.compile(r"\{[a-z_]+\}"),
    "reStructuredText markup": re.compile(r"``|:func:|:class:"),
    "internal shorthand": re.compile(r"[Ss]eed 0\d\d|Success Metric \d|\bSM\d\b|section \d|\(seed|Table \d"),
}


def commands(group=None, path=()):
    """Every command's words (``("log", "validate")``), groups first."""
    group = group or typer.main.get_command(app)
    yield path
    for name, command in getattr(group, "commands", {}).items():
        yield from commands(command, (*path, name))


COMMANDS = list(commands())


def help_text(words) -> str:
    result = runner.invoke(app, [*words, "--help"], env=WIDE, prog_name="hce")
    assert result.exit_code == 0, result.output
    return " ".join(result.output.replace("│", " ").split())


def test_the_walk_reaches_every_command():
    names = {" ".join(c) for c in COMMANDS}
    assert {"", "log", "log validate", "report", "collect", "study run", "sim-server", *WRITERS} <= names
    assert len(names) >= 19


@pytest.mark.parametrize("words", COMMANDS, ids=lambda c: " ".join(c) or "hce")
def test_help_reads_as_the_user_types(words):
    text = help_text(words)
    found = [f"{what}: {m.group(0)!r}" for what, pattern in FORBIDDEN.items() for m in pattern.finditer(text)]
    assert not found, f"hce {' '.join(words)} --help shows " + "; ".join(found)


def test_arguments_and_options_name_their_values():
    text = help_text(("report",))
    assert "Usage: hce report [OPTIONS] LOGS..." in text
    assert re.search(r"--out -o FOLDER Where to write report\.md", text)
    assert re.search(r"--seed INTEGER Seeds", text) and re.search(r"--bayes Add the Bayesian", text)  # a flag: no value
    assert "--engine [pandas|duckdb|polars|spark|dask|auto]" in text
    assert "Usage: hce log validate [OPTIONS] PATH " in help_text(("log", "validate"))


@pytest.mark.parametrize("words", WRITERS)
def test_every_command_that_writes_files_takes_o_out(words):
    text = help_text(words.split())
    assert re.search(r"--out -o (FOLDER|FILE) Where to write ", text), text


def test_no_command_names_its_output_otherwise():
    for words in COMMANDS:
        text = help_text(words)
        assert not re.search(r"--(output|target|dest)\b", text), words


def test_seed_is_the_command_line_spelling_of_random_state():
    assert "the command line's spelling of random_state" in help_text(("report",))


def test_the_report_title_defaults_as_in_python():
    from hce.report import report
    from hce.study import study_report

    text = help_text(("report",))
    for function in (report, study_report):
        assert f"'{inspect.signature(function).parameters['title'].default}'" in text


def test_every_error_has_the_one_prefix(tmp_path):
    usage = runner.invoke(app, ["report", "--no-such-option", "x"], prog_name="hce")
    assert usage.exit_code == 2 and usage.output.startswith("error: No such option: --no-such-option"), usage.output
    assert "see hce report --help" in usage.output and "╭" not in usage.output
    missing = runner.invoke(app, ["log", "validate"])
    assert missing.exit_code == 2 and missing.output.startswith("error: Missing argument 'PATH'"), missing.output
    hce_error = runner.invoke(app, ["log", "validate", str(tmp_path / "none.jsonl")])
    assert hce_error.exit_code == 2 and hce_error.output.startswith("error: "), hce_error.output
    bad_value = runner.invoke(app, ["collect", "x.yaml", "--log", "l.jsonl", "--concurrency", "0"])
    assert bad_value.exit_code == 2 and bad_value.output.startswith("error: Invalid value for '--concurrency'"), bad_value.output


#: Every command's help at 80 columns, in a fresh process (Typer fixes the width when it is imported).
_NARROW = """
import typer
from typer.testing import CliRunner
from hce.cli import app

def walk(group, path=()):
    yield path
    for name, command in getattr(group, "commands", {}).items():
        yield from walk(command, (*path, name))

for words in walk(typer.main.get_command(app)):
    for line in CliRunner().invoke(app, [*words, "--help"], prog_name="hce").output.splitlines():
        if "\\N{HORIZONTAL ELLIPSIS}" in line:
            print("hce", *words, "|", line.strip())
"""


def test_no_help_is_cut_at_80_columns():
    # Issue 49: `hce collect --help` showed "--retry-failed,--re…" (two names for one option).
    import os
    import subprocess
    import sys

    env = {**os.environ, "COLUMNS": "80", "TERMINAL_WIDTH": "80"}
    done = subprocess.run([sys.executable, "-c", _NARROW], env=env, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout == "", done.stdout


def test_cli_messages_use_the_command_line_words(tmp_path):
    # Issue 49: "pass format=" is a Python keyword the command line does not have.
    odd = tmp_path / "log.txt"
    odd.write_text("{}\n")
    result = runner.invoke(app, ["log", "validate", str(odd)])
    assert result.exit_code == 2 and "(in Python) pass format=" in result.output, result.output


def test_cli_words_turn_keyword_hints_into_options():
    from hce._cli_format import cli_words

    command = typer.main.get_command(app).commands["report"]
    context = type("Context", (), {"command": command})()
    assert cli_words("rows holding text: pass rubric= to name them", context) == "rows holding text: pass --rubric to name them"
    assert cli_words("no score columns: pass criteria=[...] naming them", context) == (
        "no score columns: (in Python) pass criteria=[...] naming them")


def test_warnings_print_as_the_command_line_prints_errors():
    # Issue 49: a warning named a file and line inside Typer (the first frame outside hce).
    from hce._cli_format import App
    from hce._warnings import warn
    from hce.errors import HceWarning

    demo = App()

    @demo.command()
    def speak() -> None:
        warn("3 attempt(s) flagged were left out", HceWarning)

    @demo.command()
    def other() -> None:
        pass

    with warnings.catch_warnings():
        warnings.simplefilter("always")  # the suite turns warnings into errors
        result = CliRunner().invoke(demo, ["speak"])
    assert result.exit_code == 0 and result.output == "warning: 3 attempt(s) flagged were left out\n", result.output
