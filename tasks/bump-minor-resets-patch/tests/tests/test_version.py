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

    def test_bump_minor_resets_patch(self):
        self.assertEqual(bump("1.4.2", "minor"), "1.5.0")
        self.assertEqual(bump("0.9.17", "minor"), "0.10.0")
        self.assertEqual(bump("3.0.0", "minor"), "3.1.0")

    def test_bump_drops_prerelease(self):
        self.assertEqual(bump("2.0.0-rc.1", "patch"), "2.0.1")
        self.assertEqual(bump("2.0.0-rc.1", "minor"), "2.1.0")
        self.assertEqual(bump("2.0.0-rc.1", "major"), "3.0.0")
        self.assertEqual(bump("1.4.2-beta", "major"), "2.0.0")

    def test_bump_unknown(self):
        with self.assertRaises(ValueError):
            bump("1.0.0", "micro")


if __name__ == "__main__":
    unittest.main()
