import json
import os
from pathlib import Path
from typing import Any, Mapping, Optional

from .merge import merge_all

PREFIX = "APP__"


def _read(path: Path) -> dict:
    with path.open(encoding="utf-8") as f:
        data = json.load(f)
    if not isinstance(data, dict):
        raise ValueError(f"{path}: top level must be an object")
    return data


def _scalar(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return text


def env_layer(environ: Mapping[str, str]) -> dict:
    """Build a layer from APP__SECTION__KEY=value variables. Values that
    parse as JSON (numbers, true/false) are converted."""
    layer: dict = {}
    for name, value in sorted(environ.items()):
        if not name.startswith(PREFIX):
            continue
        path = [p.lower() for p in name[len(PREFIX):].split("__") if p]
        if not path:
            continue
        node = layer
        for part in path[:-1]:
            node = node.setdefault(part, {})
        node[path[-1]] = _scalar(value)
    return layer


def load(directory, env: str, environ: Optional[Mapping[str, str]] = None) -> dict:
    d = Path(directory)
    layers = [_read(d / "base.json")]
    for name in (f"{env}.json", "local.json"):
        if (d / name).exists():
            layers.append(_read(d / name))
    layers.append(env_layer(os.environ if environ is None else environ))
    return merge_all(layers)
