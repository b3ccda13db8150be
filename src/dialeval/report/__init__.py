"""Reports: report.json (the stable JSON contract) and one self-contained index.html with plots inline."""

from .build import build_report, study_report, write_report

__all__ = ["build_report", "study_report", "write_report"]
