import os
import tempfile
import unittest

from envload import load


class LoadTest(unittest.TestCase):
    def write(self, text):
        fd, path = tempfile.mkstemp(suffix=".env")
        with os.fdopen(fd, "w") as f:
            f.write(text)
        self.addCleanup(os.unlink, path)
        return path

    def test_existing_wins(self):
        env = {"A": "from-env"}
        load(self.write("A=file\nB=file\n"), environ=env)
        self.assertEqual(env, {"A": "from-env", "B": "file"})

    def test_override(self):
        env = {"A": "from-env"}
        load(self.write("A=file\n"), override=True, environ=env)
        self.assertEqual(env["A"], "file")

    def test_missing_file(self):
        self.assertEqual(load("/nonexistent/.env", environ={}), {})


if __name__ == "__main__":
    unittest.main()
