"""Reports: the report.json contract (built in build.py, read through view.py) and its formats.

A format is one module registered in ``formats.REGISTRY``; importing this package registers the
built-in ones, in the order they are written and listed.
"""

from offline_eval.report.build import aggregate_scores, build_report

# isort: off  (importing a format registers it: this is the order of FORMATS)
from offline_eval.report import json_report, markdown, html, junit  # noqa: E402, F401
# isort: on

__all__ = ["aggregate_scores", "build_report"]
