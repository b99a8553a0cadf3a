import os
from typing import MutableMapping, Optional

from .parser import parse


def load(path: str = ".env", override: bool = False, environ: Optional[MutableMapping[str, str]] = None) -> dict:
    """Read path and set its variables in environ (os.environ by default).

    Variables already set are kept unless override is true. Returns the
    parsed values. A missing file is not an error.
    """
    env = os.environ if environ is None else environ
    try:
        with open(path, encoding="utf-8") as f:
            values = parse(f.read())
    except FileNotFoundError:
        return {}
    for k, v in values.items():
        if override or k not in env:
            env[k] = v
    return values
