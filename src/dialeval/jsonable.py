"""Plain JSON values from what analysis produces (DataFrames, numpy scalars, NaN, datetimes)."""

from __future__ import annotations

import math
import sys
from datetime import date, datetime
from typing import Any

import numpy as np


def to_jsonable(obj: Any) -> Any:
    """DataFrames become lists of records, numpy scalars Python numbers, NaN and infinities None."""
    # Fast path for what is already plain (reports pass through here several times, and a large
    # study's report holds millions of values): exact type checks before the isinstance chain.
    kind = type(obj)
    if kind is str or kind is int or kind is bool or obj is None:
        return obj
    if kind is float:
        return obj if math.isfinite(obj) else None
    if kind is dict:
        return {k if type(k) is str else str(k): to_jsonable(v) for k, v in obj.items()}
    if kind is list:
        return [to_jsonable(v) for v in obj]
    # pandas is looked up, not imported: no DataFrame exists unless something imported it, and its
    # 1 s import stays off the reports that never use it
    pd = sys.modules.get("pandas")
    if pd is not None and isinstance(obj, pd.DataFrame):
        return [to_jsonable(r) for r in obj.to_dict(orient="records")]
    if pd is not None and isinstance(obj, pd.Series):
        return to_jsonable(obj.to_dict())
    if isinstance(obj, dict):
        return {str(k): to_jsonable(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple, set)):
        return [to_jsonable(v) for v in obj]
    if isinstance(obj, np.ndarray):
        return [to_jsonable(v) for v in obj.tolist()]
    if isinstance(obj, (bool, np.bool_)):
        return bool(obj)
    if isinstance(obj, np.integer):
        return int(obj)
    if isinstance(obj, (float, np.floating)):
        f = float(obj)
        return f if math.isfinite(f) else None
    if isinstance(obj, (datetime, date)):
        return obj.isoformat()
    return obj
