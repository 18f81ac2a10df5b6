"""A manuscript as data (:mod:`.model`) and its writers (Markdown, Word, LaTeX).

The study layer (:mod:`hce.study`) fills a :class:`~hce.report.manuscript.model.Manuscript`
from a study's saved analyses; the writers here know nothing about any particular study.
"""
