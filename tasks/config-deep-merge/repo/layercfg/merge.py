from typing import Any, Iterable, Mapping


def merge(base: Mapping[str, Any], override: Mapping[str, Any]) -> dict:
    """Return base updated with override. A None value in override removes
    the key."""
    result = dict(base)
    for key, value in override.items():
        if value is None:
            result.pop(key, None)
        else:
            result[key] = value
    return result


def merge_all(layers: Iterable[Mapping[str, Any]]) -> dict:
    """Merge layers left to right."""
    result: dict = {}
    for layer in layers:
        result = merge(result, layer)
    return result
