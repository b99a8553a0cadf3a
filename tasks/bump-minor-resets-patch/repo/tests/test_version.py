import unittest

from relkit import Version, bump


class VersionTest(unittest.TestCase):
    def test_parse_and_str(self):
        self.assertEqual(Version.parse("1.4.2"), Version(1, 4, 2))
        self.assertEqual(str(Version.parse("2.0.0-rc.1")), "2.0.0-rc.1")
        for bad in ("1.4", "v1.4.2", "1.4.2.1", "a.b.c", "1.4.2-"):
            with self.assertRaises(ValueError):
                Version.parse(bad)

    def test_bump_patch(self):
        self.assertEqual(bump("1.4.2", "patch"), "1.4.3")

    def test_bump_major(self):
        self.assertEqual(bump("1.4.2", "major"), "2.0.0")

    def test_bump_unknown(self):
        with self.assertRaises(ValueError):
            bump("1.0.0", "micro")


if __name__ == "__main__":
    unittest.main()
