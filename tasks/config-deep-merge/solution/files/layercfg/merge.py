from typing import Any, Iterable, Mapping


def _copy(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {k: _copy(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copy(v) for v in value]
    return value


def merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict:
    """Return a new dict: base updated with override, merging nested dicts
    recursively. Lists and scalars in override replace what base has; a None
    value removes the key. Neither argument is modified."""
    result = {k: _copy(v) for k, v in base.items()}
    for key, value in override.items():
        if value is None:
            result.pop(key, None)
        elif isinstance(value, Mapping) and isinstance(result.get(key), Mapping):
            result[key] = merge(result[key], value)
        else:
            result[key] = _copy(value)
    return result


def merge_all(layers: Iterable[Mapping[str, Any]]) -> dict:
    """Merge layers left to right."""
    result: dict = {}
    for layer in layers:
        result = merge(result, layer)
    return result
