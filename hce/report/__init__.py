"""Publication tables and figures from attempt logs; :func:`~hce.report.report` writes the report of any log."""

from hce.report.generic import report

__all__ = ["report"]
