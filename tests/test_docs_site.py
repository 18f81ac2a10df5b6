"""The documentation site (issue 26): a short README with a complete layout table, an API page
for every public name, and pages that open in a real browser.

The site is CI's build (``docs/_build/html``, made by .ci/run before the tests) when it is newer
than every source; otherwise it is built here into a temporary folder from a copy of ``docs/``,
with the gallery shown unrun (its examples run in CI's build and in tests/test_examples.py).
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
from browser import CHROMIUM, NO_CHROMIUM, chromium

REPO = Path(__file__).resolve().parents[1]
DOCS = REPO / "docs"
README = REPO / "README.md"
sys.path.insert(0, str(DOCS / "_ext"))
from hce_api import MODULES, SUBPACKAGES, api_names, figure_scraper, public  # noqa: E402

GENERATED = ("_build", "auto_examples", "api/generated", "sg_execution_times.rst")


def sources() -> list[Path]:
    skip = [DOCS / g for g in GENERATED]
    docs = [p for p in DOCS.rglob("*") if p.is_file() and not any(p.is_relative_to(s) for s in skip)]
    return [README, *docs, *(REPO / "hce").rglob("*.py")]


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    built = DOCS / "_build" / "html"
    index = built / "index.html"
    if index.exists() and index.stat().st_mtime > max(p.stat().st_mtime for p in sources()):
        return built
    root = tmp_path_factory.mktemp("site")
    shutil.copy(README, root / "README.md")
    shutil.copytree(DOCS, root / "docs", ignore=shutil.ignore_patterns(*(Path(g).name for g in GENERATED)))
    done = subprocess.run([sys.executable, "-m", "sphinx", "-n", "-W", "--keep-going", "-q", "-b", "html",
                           "-D", "plot_gallery=0", "docs", "html"], cwd=root, capture_output=True, text=True,
                          timeout=900)
    assert done.returncode == 0, done.stderr[-4000:]
    return root / "html"


def test_readme_is_short():
    lines = README.read_text(encoding="utf-8").count("\n")
    assert lines < 200, f"README.md has {lines} lines; what goes beyond a newcomer's needs belongs in docs/"


def test_layout_table_names_every_module():
    # Every module and subpackage of hce's layers is named in the README's layout table.
    text = README.read_text(encoding="utf-8")
    table = text[text.index("<!-- layout-start -->"):text.index("<!-- layout-end -->")]
    missing = []
    for folder in [REPO / "hce", *[p for p in (REPO / "hce").iterdir() if (p / "__init__.py").exists()]]:
        for p in sorted(folder.iterdir()):
            name = p.name + "/" if (p / "__init__.py").exists() else p.name
            if (p.suffix == ".py" and p.name != "__init__.py") or name.endswith("/"):
                if f"`{name}`" not in table and f"`hce/{p.relative_to(REPO / 'hce')}/`" not in table:
                    missing.append(str(p.relative_to(REPO)))
    assert not missing, f"the README's layout table does not name {missing}"


def test_every_public_name_has_an_api_page(site):
    pages = api_names()
    documented = {}  # each object's page: a name exported twice is documented once
    for module, names in pages.items():
        for name in names:
            page = site / "api" / "generated" / f"{module}.{name}.html"
            assert page.exists(), f"no API page for {module}.{name}"
            documented.setdefault(id(getattr(sys.modules[module], name)), page)
    for module in (*MODULES, *SUBPACKAGES):
        for name in public(module):
            assert id(getattr(sys.modules[module], name)) in documented, f"{module}.{name} has no API page"


def test_api_page_shows_the_numpydoc_sections(site):
    page = (site / "api" / "generated" / "hce.stats.icc.html").read_text(encoding="utf-8")
    for section in ("Parameters", "Returns", "Examples"):
        assert re.search(rf">{section}<", page), f"hce.stats.icc's page lacks {section}"


@pytest.mark.parametrize(("name", "members"), [
    ("hce.stats.LmerResult", ("summary", "fixef", "varcorr", "ranef", "icc", "anova", "contrasts", "npar")),
    ("hce.stats.BayesResult", ("summary", "diagnostics", "flags", "converged", "ppc", "plot_ppc", "loo", "compare",
                               "expected", "expected_pairs", "noise", "noise_pairs", "items", "score_distribution",
                               "attempts")),
    ("hce.stats.VarianceComponents", ("d_study", "summary")),
    ("hce.stats.AnalysisResult", ("summary",)),
])
def test_result_class_pages_document_each_method(site, name, members):
    """Issue 36, item 2: a result class's page has an entry per method and property, and its
    signature shows no private field (``_beta``)."""
    page = (site / "api" / "generated" / f"{name}.html").read_text(encoding="utf-8")
    missing = [m for m in members if f'id="{name}.{m}"' not in page]
    assert not missing, f"{name}'s page has no entry for {missing}"
    assert "_beta" not in page and "_cov_beta" not in page


def _top_links(site) -> dict[str, str]:
    """The top bar's links of the home page: text -> target page."""
    html = (site / "index.html").read_text(encoding="utf-8")
    bar = html[html.index("bd-navbar-elements"):]
    bar = bar[:bar.index("</ul>")]
    return {text.strip(): href for href, text in re.findall(r'<a class="nav-link[^"]*" href="([^"#]+)"[^>]*>([^<]+)</a>', bar)}


def test_every_guide_is_a_click_from_the_top_bar(site):
    # Issue 49: the statistics guides sat under "More"; the top bar now lists the tasks, each a guide
    # or a page whose contents list its guides.
    links = _top_links(site)
    html = (site / "index.html").read_text(encoding="utf-8")
    bar = html[html.index("bd-navbar-elements"):]
    assert ">More<" not in bar[:bar.index("</ul>")] and "nav-more" not in bar[:bar.index("</ul>")]
    for task in ("Getting started", "Run a study", "Reanalyse a log", "Reliability", "Mixed models", "Bayesian",
                 "Calibration", "Scale", "Reference"):
        assert task in links, f"{task!r} not in the top bar {sorted(links)}"
    reachable = set(links.values())
    for target in links.values():
        page = (site / target).read_text(encoding="utf-8")
        main = page[page.index('id="main-content"'):] if 'id="main-content"' in page else page
        reachable |= {(Path(target).parent / href).as_posix().lstrip("./")
                      for href in re.findall(r'class="reference internal" href="([^"#]+)', main)}
    for guide in sorted((DOCS / "guide").glob("*.md")):
        assert f"guide/{guide.stem}.html" in {Path(p).as_posix() for p in reachable}, f"{guide.name} is not a click from the top bar"


def test_stats_reference_is_grouped_by_topic(site):
    # Issue 49: hce.stats' page was one alphabetical list of 102 names; statsmodels and ArviZ group theirs.
    import html

    from hce_api import stats_topics

    page = (site / "api" / "hce.stats.html").read_text(encoding="utf-8")
    topics = stats_topics(api_names()["hce.stats"])
    headings = [html.unescape(h).replace("\u2019", "'") for h in re.findall(r"<h2>([^<]+)<a", page)]
    assert headings == [title for title, _, _ in topics]
    text = re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", " ", page))).replace("\u2019", "'")
    for _, purpose, names in topics:
        assert purpose in text
    assert sum(len(names) for _, _, names in topics) == len(api_names()["hce.stats"])


def test_a_stats_name_in_no_topic_stops_the_build():
    from hce_api import stats_topics

    with pytest.raises(ValueError, match=r"in no topic of docs/_ext/hce_api.py STATS_TOPICS: \['no_such_name'\]"):
        stats_topics(["icc", "no_such_name"])


@pytest.mark.skipif(CHROMIUM is None, reason=NO_CHROMIUM)
@pytest.mark.parametrize("page, words", [
    ("index.html", ["Guides by task", "Getting started", "Run a study", "Mixed models"]),
    ("api/generated/hce.stats.icc.html", ["Parameters", "Shrout"]),
])
def test_page_renders_in_chromium(site, tmp_path, page, words):
    url = (site / page).as_uri()
    dom = chromium(url, tmp_path / "profile", "--dump-dom")
    text = re.sub(r"<[^>]+>", " ", dom)
    for word in words:
        assert word in text, f"{page}: {word!r} not on the rendered page"
    shot = tmp_path / "page.png"
    chromium(url, tmp_path / "profile", f"--screenshot={shot}")
    assert shot.exists() and shot.stat().st_size > 20_000, "the screenshot is missing or blank"


def test_docs_command_says_where_the_sources_are(tmp_path):
    # hce installed from a wheel has no docs/: the command says what to do instead of a traceback.
    from hce import docs

    with pytest.raises(FileNotFoundError, match=r"pip install -e"):
        docs.build(tmp_path)


def test_gallery_scraper_shows_each_figure_an_example_holds_once(tmp_path):
    """Issue 36, item 4: hce's figures live outside pyplot, so sphinx-gallery's own scraper saw
    none and every card showed the placeholder; figure_scraper saves the example's figures."""
    import hce.stats as hs
    from hce.report.document import Figure, Report
    from hce.report.figures import sd_by_condition

    spread = hs.item_spread(hs.simulated_log(n_items=6, n_attempts=3, noise={"A": 0.2, "B": 0.6}))
    report = Report("demo")
    report.section("spread").add(Figure(sd_by_condition(spread, condition="condition_id"), "sd", "SD by condition"))
    paths = (tmp_path / f"image_{k}.png" for k in range(1, 10))
    block_vars = {"example_globals": {"report": report}, "image_path_iterator": paths}
    rst = figure_scraper(None, block_vars, {"src_dir": str(tmp_path)})
    assert (tmp_path / "image_1.png").stat().st_size > 1000 and "image_1.png" in rst
    assert figure_scraper(None, block_vars, {"src_dir": str(tmp_path)}) == ""  # shown once


def test_every_gallery_example_keeps_its_figures_where_the_card_finds_them():
    """Issue 36: two cards showed the placeholder, as their examples' figures were local to a
    function (pdsqi9's report) or there were none (health_rating_agreement's tables only). The
    scraper reads the example's module-level names: the main block keeps its report in one."""
    import ast

    problems = []
    for script in sorted((DOCS / "examples").glob("[!_]*.py")):
        tree = ast.parse(script.read_text(encoding="utf-8"))
        main = [n for n in tree.body if isinstance(n, ast.If) and "__main__" in ast.unparse(n.test)]
        if main and not any(isinstance(s, ast.Assign) for s in main[0].body):
            problems.append(f"{script.name}: the __main__ block drops what it makes; assign the report to a name")
    assert not problems, "\n".join(problems)
    source = (DOCS / "examples" / "health_rating_agreement.py").read_text(encoding="utf-8")
    assert "Figure(" in source, "health_rating_agreement adds no figure: its card would show the placeholder"
