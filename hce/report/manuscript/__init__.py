"""A manuscript as data (``hce.report.manuscript.model``) and its writers (Markdown, Word, LaTeX).

The study layer (:mod:`hce.study`) fills a :class:`~hce.report.manuscript.model.Manuscript`
from a study's saved analyses; the writers here know nothing about any particular study.
:func:`write_manuscript` writes all three formats with the sources of the numbers;
:func:`environment_table` lists the software versions for a supplement.
"""

from hce.report.manuscript.environment import environment_table
from hce.report.manuscript.latex import write_latex
from hce.report.manuscript.markdown import write_markdown
from hce.report.manuscript.word import write_docx
from hce.report.manuscript.write import write_manuscript

__all__ = ["environment_table", "write_docx", "write_latex", "write_manuscript", "write_markdown"]
