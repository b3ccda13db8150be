"""Where browser tests save their screenshots.

By default a temporary folder, so a test run never changes the repository; set
DIALEVAL_SCREENSHOTS_DIR to keep them somewhere (they show the tests' hostile strings).
The README's pictures come from the real demo instead: .venv/bin/python scripts/screenshots.py
"""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

SCREENSHOTS = Path(os.environ.get("DIALEVAL_SCREENSHOTS_DIR") or Path(tempfile.gettempdir()) / "dialeval-screenshots")
SCREENSHOTS.mkdir(parents=True, exist_ok=True)
