import json
import os
import tempfile
from dataclasses import asdict, dataclass, field
from pathlib import Path


@dataclass
class Bookmark:
    url: str
    title: str = ""
    tags: list[str] = field(default_factory=list)
    added: str = ""  # ISO 8601 timestamp


class Store:
    def __init__(self, path: Path):
        self.path = Path(path)

    def load(self) -> list[Bookmark]:
        try:
            data = json.loads(self.path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            return []
        return [Bookmark(**b) for b in data]

    def save(self, bookmarks: list[Bookmark]) -> None:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=self.path.parent, prefix=".bm-")
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump([asdict(b) for b in bookmarks], f, indent=2)
        os.replace(tmp, self.path)
