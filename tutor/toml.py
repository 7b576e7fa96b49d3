"""tomllib on 3.11+, tomli before (the only reason tomli is a dependency)."""

import sys

if sys.version_info >= (3, 11):
    import tomllib as _toml
else:  # pragma: no cover
    import tomli as _toml

loads = _toml.loads
TOMLDecodeError = _toml.TOMLDecodeError
