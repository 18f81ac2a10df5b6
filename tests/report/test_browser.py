"""Render the HTML report in headless Chromium (Debian packages chromium, chromium-driver)."""

import re

import pytest
from browser import CHROMIUM, NO_CHROMIUM, chromium

from hce.study.report import study_report
from hce.stats._simulate import simulated_log

# A probe appended to a copy of the page: after load it records each image's decoded width.
PROBE = (
    "<script>window.addEventListener('load',()=>{document.body.setAttribute('data-images',"
    "[...document.images].map(i=>i.naturalWidth).join(','));"
    "document.body.setAttribute('data-tables',document.querySelectorAll('table').length);"
    # issue 22: on how many lines each interval "[a, b]" in a cell is laid out (its text range's line boxes)
    "const lines=[];document.querySelectorAll('td').forEach(c=>{const t=c.firstChild;"
    "if(!t||t.nodeType!==3)return;const s=t.data;let i=s.indexOf('[');"
    "while(i>=0){const j=s.slice(i).search(/[\\])]/);if(j<0)break;const r=document.createRange();"
    "r.setStart(t,i);r.setEnd(t,i+j+1);lines.push(new Set([...r.getClientRects()].map(b=>Math.round(b.top))).size);"
    "i=s.indexOf('[',i+j+1)}});"
    "document.body.setAttribute('data-ci-cells',lines.length);"
    "document.body.setAttribute('data-ci-lines',Math.max(0,...lines));"
    "document.body.setAttribute('data-headers',[...document.querySelectorAll('th')].map(h=>h.textContent).join('|'))})"
    "</script>"
)


@pytest.mark.skipif(CHROMIUM is None, reason=NO_CHROMIUM)
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
    # a phone-width page: where a breakable interval would wrap
    dom = chromium(probe.as_uri(), tmp_path / "profile", "--dump-dom", width=480)
    widths = re.search(r'data-images="([^"]*)"', dom).group(1).split(",")
    tables = int(re.search(r'data-tables="(\d+)"', dom).group(1))
    assert len(widths) == len(report.figures()) and all(int(w) > 100 for w in widths)
    assert tables == sum(t.inline for t in report.tables())
    # issue 22, item 5: no interval breaks across lines, and headers are words, not snake_case
    assert int(re.search(r'data-ci-cells="(\d+)"', dom).group(1)) > 0
    assert re.search(r'data-ci-lines="(\d+)"', dom).group(1) == "1"
    headers = re.search(r'data-headers="([^"]*)"', dom).group(1).split("|")
    assert "P value" in headers and "Items" in headers and not [h for h in headers if "_" in h], headers
