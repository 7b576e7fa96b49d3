"""tomllib on 3.11+, tomli before (the only reason tomli is a dependency)."""

import sys
from typing import Any

if sys.version_info >= (3, 11):
    import tomllib as _toml
else:  # pragma: no cover
    import tomli as _toml

loads = _toml.loads
TOMLDecodeError = _toml.TOMLDecodeError


def flatten(table: dict[str, Any], prefix: str = "") -> dict[str, Any]:
    """{"a": {"b": 1}} -> {"a.b": 1}: a catalog's dotted keys."""
    flat: dict[str, Any] = {}
    for key, value in table.items():
        full = f"{prefix}{key}"
        if isinstance(value, dict):
            flat.update(flatten(value, full + "."))
        else:
            flat[full] = value
    return flat
