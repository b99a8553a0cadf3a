import re

_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_EXPORT = re.compile(r"^export\s+")
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


def _closing_quote(raw: str, quote: str) -> int:
    """Index of the quote closing raw[0], or -1. Inside double quotes a
    backslash escapes the next character."""
    i = 1
    while i < len(raw):
        if quote == '"' and raw[i] == "\\":
            i += 2
            continue
        if raw[i] == quote:
            return i
        i += 1
    return -1


def _value(raw: str, lineno: int) -> str:
    raw = raw.strip()
    if raw[:1] in ("'", '"'):
        quote = raw[0]
        end = _closing_quote(raw, quote)
        if end < 0:
            raise ParseError(lineno, "unterminated quote")
        rest = raw[end + 1:].strip()
        if rest and not rest.startswith("#"):
            raise ParseError(lineno, f"unexpected text after closing quote: {rest!r}")
        inner = raw[1:end]
        return inner if quote == "'" else _unescape(inner, lineno)
    if "#" in raw:
        raw = raw[: raw.index("#")].rstrip()
    return raw


def parse(text: str) -> dict:
    """Parse the contents of a .env file into a dict."""
    result = {}
    for lineno, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        line = _EXPORT.sub("", line, count=1)
        key, sep, raw = line.partition("=")
        key = key.strip()
        if not sep:
            raise ParseError(lineno, f"expected KEY=value, got {line!r}")
        if not _KEY.match(key):
            continue
        result[key] = _value(raw, lineno)
    return result
