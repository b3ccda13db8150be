"""Where browser tests save their screenshots.

By default a temporary folder, so a test run never changes the repository. To refresh the
pictures in docs/screenshots (shown in README.md):
    DIALEVAL_SCREENSHOTS_DIR=docs/screenshots .venv/bin/pytest tests/e2e
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

SCREENSHOTS = Path(os.environ.get("DIALEVAL_SCREENSHOTS_DIR") or Path(tempfile.gettempdir()) / "dialeval-screenshots")
SCREENSHOTS.mkdir(parents=True, exist_ok=True)
