"""The Ethics and Reproducibility statements (seed 000 sections 10-11), adapted with the study's facts.

The IRB reference, the data sources and the repository link come from the study file's
``manuscript`` section; a missing one is a visible placeholder naming the field to set,
never invented text. Assurances the logs cannot show (privacy handling, no re-identification)
are placeholders for the authors to confirm.

Example
-------
>>> blocks = statements(facts)  # doctest: +SKIP
"""

from __future__ import annotations

from hce.report.manuscript.model import Block, Heading, Inline, Paragraph, Placeholder
from hce.report.tables import words
from hce.study.manuscript.facts import StudyFacts


def _field(value: str | None, prompt: str) -> Inline:
    return value if value else Placeholder(prompt)


def _ethics(facts: StudyFacts) -> list[Block]:
    given = facts.manuscript
    sources: Inline = "; ".join(given["data_sources"]) if given["data_sources"] else Placeholder(
        "transcript sources and the approvals or waivers of their original collectors (set manuscript.data_sources)")
    strata = ((facts.settings.get("EXP5_FinalToolValidation") or {}).get("settings") or {}).get("strata") or []
    fairness = (f"Scores were compared across the demographic strata {', '.join(map(words, strata))} (Success Metric 6)."
                if strata else "No demographic strata were analysed (Success Metric 6 was not assessed), so this study "
                "cannot speak to bias across patient groups; formal bias audits remain necessary before deployment.")  # fmt: skip
    return [Heading(1, "Ethical Considerations"), Paragraph([
        "This research used de-identified patient-doctor transcripts from: ", sources, ". Ethics review: ",
        _field(given["irb"], "IRB name, protocol number and determination (set manuscript.irb in the study file)"), ". ",
        Placeholder("confirm data handling in line with HIPAA and GDPR, the de-identification applied, its residual "
                    "risks, and that no re-identification was attempted"),
        " The study involved no direct patient interaction and no new data collection. ", fairness,
        (" The framework is a research tool for scoring communication against a rubric; it is not designed or validated "
        "for clinical decision-making, and any clinical use would need human oversight, further validation and "
        "regulatory review (possibly as Software as a Medical Device).")], role="note")]  # fmt: skip


def _reproducibility(facts: StudyFacts) -> list[Block]:
    given = facts.manuscript
    return [Heading(1, "Reproducibility"), Paragraph([
        (f"The {facts.rubric.name} (Supplement S1), the prompt templates as sent (S2), the transcript IDs of every set (S3), "
        "the per-item tables, the software environment and a script that rebuilds every table from the attempt logs "
        "(supplement/reproduce.sh) accompany this article; the source of every number in the text is listed in "
        "supplement/number_sources.csv. Code and materials: "),
        _field(given["repository"], "link to the public repository (set manuscript.repository in the study file)"),
        ". The LLMs and the versions their APIs returned are given in Methods 2.4. ",
        Placeholder("confirm which transcripts may be shared under the data use agreements (IDs only, or full text)")],
        role="note")]  # fmt: skip


def statements(facts: StudyFacts) -> list[Block]:
    """Ethics, then Reproducibility (role ``"note"``: outside the main text's word count).

    Examples
    --------
    >>> [b.text for b in statements(facts) if hasattr(b, "level")]  # doctest: +SKIP
    ['Ethical Considerations', 'Reproducibility']
    """
    return _ethics(facts) + _reproducibility(facts)
