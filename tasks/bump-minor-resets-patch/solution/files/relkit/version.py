import re
from dataclasses import dataclass

_VERSION = re.compile(r"^(\d+)\.(\d+)\.(\d+)(?:-([0-9A-Za-z.-]+))?$")


@dataclass(frozen=True)
class Version:
    major: int
    minor: int
    patch: int
    pre: str = ""

    @classmethod
    def parse(cls, text: str) -> "Version":
        m = _VERSION.match(text.strip())
        if not m:
            raise ValueError(f"not a version: {text!r}")
        return cls(int(m[1]), int(m[2]), int(m[3]), m[4] or "")

    def __str__(self) -> str:
        s = f"{self.major}.{self.minor}.{self.patch}"
        return f"{s}-{self.pre}" if self.pre else s


def bump(version: str, part: str) -> str:
    """Return version with part ("major", "minor" or "patch") incremented.

    Lower parts reset to zero and any pre-release suffix is dropped.
    """
    v = Version.parse(version)
    if part == "major":
        v = Version(v.major + 1, 0, 0)
    elif part == "minor":
        v = Version(v.major, v.minor + 1, 0)
    elif part == "patch":
        v = Version(v.major, v.minor, v.patch + 1)
    else:
        raise ValueError(f"unknown part {part!r}; use major, minor or patch")
    return str(v)
