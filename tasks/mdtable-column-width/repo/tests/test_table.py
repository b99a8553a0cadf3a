import unittest

from mdtable import render


class RenderTest(unittest.TestCase):
    def test_simple(self):
        out = render(["name", "qty"], [["ab", 1], ["cd", 22]])
        self.assertEqual(out.splitlines(), [
            "| name | qty |",
            "| :--- | :-- |",
            "| ab   | 1   |",
            "| cd   | 22  |",
        ])

    def test_alignment(self):
        out = render(["left", "right", "center"], [["a", "b", "c"]], align=["l", "r", "c"])
        self.assertEqual(out.splitlines(), [
            "| left | right | center |",
            "| :--- | ----: | :----: |",
            "| a    |     b |   c    |",
        ])

    def test_escaping_and_none(self):
        out = render(["x", "y"], [["a|b", None]])
        self.assertEqual(out.splitlines()[2], "| a\\|b | " + " " * 3 + " |")

    def test_short_row_padded(self):
        out = render(["a", "b"], [["1"]])
        self.assertEqual(out.splitlines()[2], "| 1   |     |")

    def test_long_row_rejected(self):
        with self.assertRaises(ValueError):
            render(["a"], [["1", "2"]])

    def test_bad_alignment(self):
        with self.assertRaises(ValueError):
            render(["a"], [], align=["x"])


if __name__ == "__main__":
    unittest.main()
