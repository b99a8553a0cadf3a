import tempfile
import unittest
from pathlib import Path

from relkit.pyproject import read_version, write_version

DOC = '''[build-system]
requires = ["setuptools"]
version = "9.9.9"

[project]
name = "demo"
version = "1.4.2"

[tool.other]
version = "0.0.1"
'''


class PyprojectTest(unittest.TestCase):
    def test_read_write_only_project_table(self):
        with tempfile.TemporaryDirectory() as d:
            p = Path(d) / "pyproject.toml"
            p.write_text(DOC)
            self.assertEqual(read_version(p), "1.4.2")
            write_version(p, "1.5.0")
            self.assertEqual(p.read_text(), DOC.replace('version = "1.4.2"', 'version = "1.5.0"'))


if __name__ == "__main__":
    unittest.main()
