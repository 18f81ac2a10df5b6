"""Build the documentation site and open it: ``python -m hce.docs [--no-open]``.

The site's sources are in the repository's ``docs/`` folder (an editable install, as the README
installs hce, finds them); it is built with Sphinx, warnings and unresolved cross-references
as errors, exactly as CI builds it.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import webbrowser
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
# The arguments of `python -m sphinx`, relative to the repository root; .ci/run runs the same.
SPHINX_ARGS = ("-n", "-W", "--keep-going", "-b", "html", "docs", "docs/_build/html")


def build(root: Path = ROOT) -> Path:
    """Build the HTML site with Sphinx and return the path of its ``index.html``.

    Parameters
    ----------
    root : Path
        The repository root, which holds ``docs/conf.py``.

    Returns
    -------
    Path
        ``docs/_build/html/index.html`` under ``root``.

    Raises
    ------
    FileNotFoundError
        When ``root`` has no ``docs/conf.py`` (hce installed from a wheel: clone the
        repository and ``pip install -e ".[docs]"``).
    subprocess.CalledProcessError
        When Sphinx fails or warns (warnings are errors).

    Examples
    --------
    >>> from hce.docs import SPHINX_ARGS
    >>> " ".join(SPHINX_ARGS)
    '-n -W --keep-going -b html docs docs/_build/html'
    """
    if not (root / "docs" / "conf.py").is_file():
        raise FileNotFoundError(f"{root / 'docs' / 'conf.py'} not found: the documentation sources are in the "
                                "repository; clone it and install with pip install -e \".[docs]\"")
    subprocess.run([sys.executable, "-m", "sphinx", *SPHINX_ARGS], cwd=root, check=True)
    return root / SPHINX_ARGS[-1] / "index.html"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m hce.docs", description=__doc__.splitlines()[0])
    parser.add_argument("--no-open", action="store_true", help="build only; do not open a browser")
    args = parser.parse_args(argv)
    try:
        index = build()
    except FileNotFoundError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    except subprocess.CalledProcessError as e:
        print(f"error: the docs build failed (exit {e.returncode}); see Sphinx's messages above", file=sys.stderr)
        return 1
    print(index)
    if not args.no_open:
        webbrowser.open(index.as_uri())
    return 0


if __name__ == "__main__":
    sys.exit(main())
