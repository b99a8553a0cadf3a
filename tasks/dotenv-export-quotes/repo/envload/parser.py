import re

_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_ESCAPES = {"n": "\n", "t": "\t", '"': '"', "\\": "\\"}


class ParseError(ValueError):
    def __init__(self, lineno: int, msg: str):
        super().__init__(f"line {lineno}: {msg}")
        self.lineno = lineno


def _unescape(s: str, lineno: int) -> str:
    out = []
    i = 0
    while i < len(s):
        c = s[i]
        if c == "\\":
            if i + 1 >= len(s) or s[i + 1] not in _ESCAPES:
                raise ParseError(lineno, f"bad escape in {s!r}")
            out.append(_ESCAPES[s[i + 1]])
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


def _value(raw: str, lineno: int) -> str:
    raw = raw.strip()
    if len(raw) >= 2 and raw[0] == raw[-1] == "'":
        return raw[1:-1]
    if len(raw) >= 2 and raw[0] == raw[-1] == '"':
        return _unescape(raw[1:-1], lineno)
    if raw[:1] in ("'", '"'):
        raise ParseError(lineno, "unterminated quote")
    return raw


def parse(text: str) -> dict:
    """Parse the contents of a .env file into a dict."""
    result = {}
    for lineno, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if "#" in line:
            line = line[: line.index("#")].rstrip()
        key, sep, raw = line.partition("=")
        key = key.strip()
        if not sep:
            raise ParseError(lineno, f"expected KEY=value, got {line!r}")
        if not _KEY.match(key):
            continue
        result[key] = _value(raw, lineno)
    return result
