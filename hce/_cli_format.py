"""How the ``hce`` command line prints its help and its usage errors.

Typer's help names a value by its Python type (``--seed <int>``, a flag as ``<bool>``, an
argument as ``{logs}``) and frames a usage error in a box titled "Error", while hce's own errors
read ``error: ...``. The classes here make both read as the rest of the command line does: a value
by what the user types (``--out FOLDER``, ``--seed INTEGER``, ``LOGS...``), a flag bare, and every
error on one line after the one prefix :data:`ERROR`.
"""

from __future__ import annotations

import re
import sys
import warnings
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import typer
from rich.console import Console
from rich.table import Table
from typer.core import TyperArgument, TyperCommand, TyperGroup, TyperOption

try:  # Typer 0.2x carries its own copy of Click; older Typer uses Click itself
    from typer._click.exceptions import ClickException
    from typer._click.globals import get_current_context
except ImportError:  # pragma: no cover - depends on the installed Typer
    from click.exceptions import ClickException
    from click.globals import get_current_context

from hce.errors import HceError

#: The prefix of every error the command line prints (usage errors and hce's own).
ERROR = "[red]error:[/red]"
#: The prefix of every warning it prints (Python's own format names a file and line inside Typer).
WARNING = "[yellow]warning:[/yellow]"

#: A Python keyword hint in a library message: ``pass rubric=``, ``pass criteria=[...]``.
_KEYWORD_HINT = re.compile(r"\bpass (\w+)=(\[\.\.\.\]|\S*)")

#: A value's name in help, by the type Typer names it by, where no option gives its own ``metavar``.
TYPE_WORDS = {"int": "INTEGER", "int range": "INTEGER", "float": "NUMBER", "float range": "NUMBER", "str": "TEXT",
              "path": "PATH", "list[str]": "TEXT", "list[path]": "PATH", "list[Path]": "PATH"}

stderr = Console(stderr=True, soft_wrap=True)
#: Where every command prints its results.
console = Console(soft_wrap=True)


class _Argument(TyperArgument):
    """An argument shown as Click shows it: ``LOGS...`` in the usage line, its name alone in the table."""

    def display_type_rich(self, ctx: Any) -> str | None:
        return None  # the name (PATH, LOGS...) says it already

    def _usage_display_name(self) -> str:
        name = self.metavar or self.name.upper()
        name = name if self.required else f"[{name}]"
        return name + ("..." if self.nargs != 1 else "")


def readable(param: Any, ctx: Any) -> Any:
    """``param`` with a metavar in the user's words (FOLDER, INTEGER), a flag with none.

    Typer before 0.2x printed Click's metavars (``PATH``, ``INTEGER``) already and has no
    ``display_type``: its parameters are left as they are.
    """
    if not hasattr(param, "display_type"):  # pragma: no cover - depends on the installed Typer
        return param
    if isinstance(param, TyperArgument) and not isinstance(param, _Argument):
        param.metavar = param.metavar or param.name.upper()
        param.__class__ = _Argument  # the same fields; only how it prints differs
    elif isinstance(param, TyperOption) and param.metavar is None:
        label = param.display_type(ctx)[1:-1]  # "<int>" -> "int", "<a|b>" -> "a|b"
        param.metavar = "" if param.is_flag else TYPE_WORDS.get(label, f"[{label}]" if "|" in label else label.upper())
    return param


class ReadableCommand(TyperCommand):
    """A command whose help names values as the user types them."""

    def get_params(self, ctx: Any) -> list:
        return [readable(p, ctx) for p in super().get_params(ctx)]


class ReadableGroup(TyperGroup):
    """A command group as :class:`ReadableCommand`, printing usage errors as ``error: ...``."""

    def get_params(self, ctx: Any) -> list:
        return [readable(p, ctx) for p in super().get_params(ctx)]

    def main(self, *args: Any, standalone_mode: bool = True, **kwargs: Any) -> Any:
        with warnings.catch_warnings():  # the filters stay; only how a warning prints changes
            warnings.showwarning = show_warning
            return self._main(*args, standalone_mode=standalone_mode, **kwargs)

    def _main(self, *args: Any, standalone_mode: bool, **kwargs: Any) -> Any:
        if not standalone_mode:
            return super().main(*args, standalone_mode=False, **kwargs)
        try:
            code = super().main(*args, standalone_mode=False, **kwargs)
        except ClickException as exc:
            if type(exc).__name__ == "NoArgsIsHelpError":  # the help was printed: no error to add (as Typer does)
                sys.exit(exc.exit_code)
            command = exc.ctx.command_path if getattr(exc, "ctx", None) is not None else "hce"
            stderr.print(f"{ERROR} {exc.format_message().rstrip('.')}; see {command} --help", highlight=False)
            sys.exit(exc.exit_code)
        except typer.Abort:
            stderr.print(f"{ERROR} aborted", highlight=False)
            sys.exit(1)
        sys.exit(code if isinstance(code, int) else 0)


class App(typer.Typer):
    """A Typer app whose commands and groups print as :class:`ReadableCommand` and :class:`ReadableGroup`."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(cls=ReadableGroup, **kwargs)

    def command(self, *args: Any, **kwargs: Any) -> Any:
        kwargs.setdefault("cls", ReadableCommand)
        return super().command(*args, **kwargs)


def cli_words(message: str, ctx: Any = None) -> str:
    """``message`` with its Python keyword hints in the command's words.

    A library message says what to pass in Python (``pass rubric=``); on the command line that
    is an option (``pass --rubric``) when the running command has one of that name, and otherwise
    the hint is marked as Python's, so no one types ``format=`` at a shell.

    Examples
    --------
    >>> cli_words("cannot tell the format; use .jsonl, or pass format=")
    'cannot tell the format; use .jsonl, or (in Python) pass format='
    """
    ctx = ctx or get_current_context(silent=True)
    flags = {p.name: max(p.opts, key=len) for p in (ctx.command.params if ctx else []) if isinstance(p, TyperOption)}

    def hint(match: re.Match) -> str:
        flag = flags.get(match.group(1))
        if flag is None:
            return f"(in Python) {match.group(0)}"
        return f"pass {flag}" + (" ..." if match.group(2) == "[...]" else "")

    return _KEYWORD_HINT.sub(hint, message)


def show_warning(message: Warning | str, category: type[Warning], filename: str, lineno: int, file: Any = None,
                 line: str | None = None) -> None:  # fmt: skip
    """Print a warning as the command line prints an error: one line after :data:`WARNING`, no file or line.

    Python's own format names the frame the warning is attributed to, which on the command line is
    a line inside Typer or Click: nothing the user can open.
    """
    stderr.print(f"{WARNING} {cli_words(str(message))}", highlight=False)


@contextmanager
def reported() -> Iterator[None]:
    """Turn an HceError, or a file that cannot be read or written (a full disk), into one line and exit status 2."""
    try:
        yield
    except HceError as exc:
        stderr.print(f"{ERROR} {cli_words(str(exc))}", highlight=False)
        raise typer.Exit(code=2) from None
    except OSError as exc:
        where = f"{exc.filename}: " if exc.filename else ""
        stderr.print(f"{ERROR} {where}{exc.strerror or exc}", highlight=False)
        raise typer.Exit(code=2) from None


def print_whole(table: Table) -> None:
    """Print a table at its natural width, never cutting a name short ("gpt-4o-mi…"): wider than the
    terminal, its lines wrap there instead."""
    width = Console(width=100_000).measure(table).maximum
    Console(width=max(width, console.width), soft_wrap=True).print(table)


def _positive(value: float | None) -> float | None:
    """A number option that must be above 0 (0 would busy-poll or never wait)."""
    if value is not None and not value > 0:
        raise typer.BadParameter(f"must be > 0, got {value:g}")
    return value


def _http_url(value: str | None) -> str | None:
    if value is not None and not value.startswith(("http://", "https://")):
        raise typer.BadParameter(f"must be an http:// or https:// address, got {value!r}")
    return value


def _money(value: float) -> str:
    return "unpriced" if value != value else f"{value:,.4f}"
