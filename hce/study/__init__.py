"""The PRD's study (Rubric v5.0, Experiments 1-5): the top layer, built on collect, stats and report.

Everything specific to the study lives here: its configuration and packaged defaults
(:mod:`~hce.study.config`), the corpus and its Set A/B/C (:mod:`~hce.study.transcripts`,
:mod:`~hce.study.partition`), Exp 1's synthetic transcripts (:mod:`~hce.study.synthetic`),
Exp 4's reasoning coding (:mod:`~hce.study.reasoning`), the run and its hand-offs
(:mod:`~hce.study.run`, :mod:`~hce.study.handoffs`), the per-experiment analyses
(:mod:`~hce.study.analyses`), the study report (:mod:`~hce.study.report`), the draft
manuscript (:func:`~hce.study.manuscript.manuscript`) and the demo (:mod:`~hce.study.demo`). The layers below (:mod:`hce.collect`, :mod:`hce.stats`,
:mod:`hce.report`) do not know the study exists.
"""

from hce.study.analyses import experiment1, experiment2, experiment3, experiment4, experiment5
from hce.study.confidence import logprob_confidence
from hce.study.config import Study, StudyStop, default_config, load_study
from hce.study.demo import run_demo
from hce.study.designs import load_corpus
from hce.study.handoffs import choose_winner, read_decisions
from hce.study.manuscript import manuscript  # the function: hce.study.manuscript(study_dir, ...) as the issue names it
from hce.study.partition import partition
from hce.study.pilot_plan import label_budget, plan_from_pilot
from hce.study.plan import plan
from hce.study.report import study_report
from hce.study.run import run_study, status
from hce.study.steps import StudyRun
from hce.study.synthetic import draw_targets
from hce.study.transcripts import load_transcripts

__all__ = [
    "Study",
    "StudyRun",
    "StudyStop",
    "choose_winner",
    "default_config",
    "draw_targets",
    "experiment1",
    "experiment2",
    "experiment3",
    "experiment4",
    "experiment5",
    "load_corpus",
    "label_budget",
    "plan_from_pilot",
    "load_study",
    "load_transcripts",
    "logprob_confidence",
    "manuscript",
    "partition",
    "plan",
    "read_decisions",
    "run_demo",
    "run_study",
    "status",
    "study_report",
]
