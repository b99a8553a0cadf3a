import contextlib
import io
import tempfile
import unittest
from pathlib import Path

from relkit.__main__ import main


class CliTest(unittest.TestCase):
    def run_bump(self, start, part):
        with tempfile.TemporaryDirectory() as d:
            p = Path(d) / "pyproject.toml"
            p.write_text(f'[project]\nname = "demo"\nversion = "{start}"\n')
            out = io.StringIO()
            with contextlib.redirect_stdout(out):
                rc = main(["--file", str(p), "bump", part])
            return rc, out.getvalue().strip(), p.read_text()

    def test_bump_minor_file(self):
        rc, printed, text = self.run_bump("1.4.2", "minor")
        self.assertEqual(rc, 0)
        self.assertEqual(printed, "1.5.0")
        self.assertIn('version = "1.5.0"', text)

    def test_bump_prerelease_file(self):
        rc, printed, text = self.run_bump("2.0.0-rc.1", "patch")
        self.assertEqual(printed, "2.0.1")
        self.assertIn('version = "2.0.1"', text)


if __name__ == "__main__":
    unittest.main()
