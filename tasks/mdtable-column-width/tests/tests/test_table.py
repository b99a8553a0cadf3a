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
        self.assertEqual(out.splitlines(), [
            "| x    | y   |",
            "| :--- | :-- |",
            "| a\\|b |     |",
        ])

    def test_short_row_padded(self):
        out = render(["a", "b"], [["1"]])
        self.assertEqual(out.splitlines()[2], "| 1   |     |")

    def test_long_row_rejected(self):
        with self.assertRaises(ValueError):
            render(["a"], [["1", "2"]])

    def test_bad_alignment(self):
        with self.assertRaises(ValueError):
            render(["a"], [], align=["x"])

    def test_wide_cells(self):
        out = render(["name", "stars"], [["requests", 51000], ["rich", 47000]], align=["l", "r"])
        self.assertEqual(out.splitlines(), [
            "| name     | stars |",
            "| :------- | ----: |",
            "| requests | 51000 |",
            "| rich     | 47000 |",
        ])

    def test_every_line_same_width(self):
        rows = [["a", "a much longer description", 3], ["bbbbbbbbbbbb", "x", 123456789]]
        lines = render(["id", "desc", "n"], rows, align=["l", "c", "r"]).splitlines()
        self.assertEqual(len({len(l) for l in lines}), 1, "\n".join(lines))
        pipes = {tuple(i for i, ch in enumerate(l) if ch == "|") for l in lines}
        self.assertEqual(len(pipes), 1, "\n".join(lines))

    def test_wide_center_and_right(self):
        out = render(["c", "r"], [["abcde", "123456"]], align=["c", "r"])
        self.assertEqual(out.splitlines(), [
            "|   c   |      r |",
            "| :---: | -----: |",
            "| abcde | 123456 |",
        ])


if __name__ == "__main__":
    unittest.main()
