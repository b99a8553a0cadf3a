import json
import unittest

from .helpers import fixture_file, run


class ListTest(unittest.TestCase):
    def test_list_newest_first(self):
        rc, lines = run(fixture_file(self), "list")
        self.assertEqual(rc, 0)
        self.assertEqual([l.split()[0] for l in lines],
                         ["2024-05-20", "2024-04-11", "2024-03-01", "2024-02-02", "2024-01-15"])
        self.assertEqual(lines[0], "2024-05-20  https://pkg.go.dev/  https://pkg.go.dev/  #go #ref")

    def test_list_tag(self):
        rc, lines = run(fixture_file(self), "list", "--tag", "go")
        self.assertEqual(rc, 0)
        self.assertEqual(len(lines), 3)
        self.assertTrue(all("#go" in l for l in lines))


class AddRemoveTest(unittest.TestCase):
    def test_add_then_update(self):
        p = fixture_file(self, [])
        self.assertEqual(run(p, "add", "https://example.com", "--tag", "x")[0], 0)
        self.assertEqual(run(p, "add", "https://example.com", "--title", "Ex", "--tag", "a")[0], 0)
        data = json.loads(p.read_text())
        self.assertEqual(len(data), 1)
        self.assertEqual(data[0]["title"], "Ex")
        self.assertEqual(data[0]["tags"], ["a", "x"])
        self.assertTrue(data[0]["added"])

    def test_rm(self):
        p = fixture_file(self)
        self.assertEqual(run(p, "rm", "https://lwn.net/")[0], 0)
        self.assertEqual(len(json.loads(p.read_text())), 4)
        self.assertEqual(run(p, "rm", "https://lwn.net/")[0], 1)


if __name__ == "__main__":
    unittest.main()
