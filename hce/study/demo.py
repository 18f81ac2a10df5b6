"""``hce demo``: the whole study offline, from the packaged demo corpus to the report.

The simulated judge (:mod:`hce.sim`) is started on a free loopback port, the
reduced demo study (``hce/study/data/study_demo.yaml``) runs through the real collection layer
(the ``openai`` client over HTTP, retries, parsing, the attempt log), and the study report
is written from the logs with the study's saved analysis settings and decisions. No API key, no cost; every output says it is simulated.
"""

from __future__ import annotations

from importlib import resources
from pathlib import Path

import yaml

from hce._vocabulary import keywords_checked
from hce.study.config import load_study, packaged
from hce.study.report import study_folder_report
from hce.study.run import run_study


@keywords_checked
def run_demo(out: str | Path = "reports/demo", *, workdir: str | Path | None = None, progress: bool = False) -> Path:
    """Run the demo study against the simulated judge and write its report.

    Parameters
    ----------
    out : path
        Report folder (``report.html``, ``report.md``, ``tables/``, ``figures/``).
    workdir : path, optional
        Where the study's logs go (default: ``<out>/study``); an existing one is resumed.
    progress : bool
        Progress bars on stderr.

    Returns
    -------
    Path
        The report folder.

    Examples
    --------
    The demo study against the simulated judge (a minute or two):

    >>> from hce.study import run_demo
    >>> run_demo("reports/demo")  # doctest: +SKIP
    PosixPath('reports/demo')
    """
    out = Path(out)
    workdir = Path(workdir) if workdir is not None else out / "study"
    workdir.mkdir(parents=True, exist_ok=True)
    corpus = workdir / "demo_corpus.jsonl"
    corpus.write_text(resources.files("hce.data").joinpath("demo_corpus.jsonl").read_text(encoding="utf-8"), encoding="utf-8")
    config = yaml.safe_load(packaged("study_demo.yaml"))
    config.update(name="hce-demo", output=str(workdir / "study_output"), corpus={"paths": [str(corpus)]})
    run = run_study(load_study(config), simulate=True, progress=progress)
    # The report shows what the study decided: its saved analysis settings and hand-offs.
    return study_folder_report(run.output, title="hce demo study report", random_state=0).write(out, keep=("study",))

