"""Render the HTML report in headless Chromium (Debian packages chromium, chromium-driver)."""

import re
import shutil
import subprocess

import pytest

from hce.study.report import study_report
from hce.stats._simulate import simulated_log

CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")
# A probe appended to a copy of the page: after load it records each image's decoded width.
PROBE = (
    "<script>window.addEventListener('load',()=>{document.body.setAttribute('data-images',"
    "[...document.images].map(i=>i.naturalWidth).join(','));"
    "document.body.setAttribute('data-tables',document.querySelectorAll('table').length)})</script>"
)


@pytest.mark.skipif(CHROMIUM is None, reason="chromium not installed (apt-get install chromium chromium-driver)")
def test_report_opens_in_chromium_with_every_table_and_figure(tmp_path):
    logs = [
        simulated_log(experiment_id="EXP2_PromptOptimization", condition="prompt_id",
                      noise={"P2.1": 0.5, "P2.2": 0.5, "P2.3": 0.3}, n_items=20, n_attempts=6),
        simulated_log(n_items=20, n_attempts=6),
    ]
    report = study_report(logs)
    out = report.write(tmp_path / "report")
    page = (out / "report.html").read_text(encoding="utf-8")
    probe = tmp_path / "probe.html"
    probe.write_text(page.replace("</body>", PROBE + "</body>"), encoding="utf-8")
    flags = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
             "--disable-background-networking", "--disable-component-update", "--disable-sync",
             f"--user-data-dir={tmp_path / 'profile'}", "--virtual-time-budget=5000", "--dump-dom"]
    dom = subprocess.run([CHROMIUM, *flags, probe.as_uri()], capture_output=True, text=True, timeout=120).stdout
    widths = re.search(r'data-images="([^"]*)"', dom).group(1).split(",")
    tables = int(re.search(r'data-tables="(\d+)"', dom).group(1))
    assert len(widths) == len(report.figures()) and all(int(w) > 100 for w in widths)
    assert tables == sum(t.inline for t in report.tables())
