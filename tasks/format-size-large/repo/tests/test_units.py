import unittest

from diskreport import format_size, parse_size


class FormatSizeTest(unittest.TestCase):
    def test_small(self):
        self.assertEqual(format_size(0), "0 B")
        self.assertEqual(format_size(1023), "1023 B")

    def test_units(self):
        self.assertEqual(format_size(1024), "1.0 KiB")
        self.assertEqual(format_size(1536), "1.5 KiB")
        self.assertEqual(format_size(20 * 1024 ** 3), "20.0 GiB")
        self.assertEqual(format_size(3 * 1024 ** 4), "3.0 TiB")

    def test_negative(self):
        self.assertEqual(format_size(-2048), "-2.0 KiB")


class ParseSizeTest(unittest.TestCase):
    def test_parse(self):
        self.assertEqual(parse_size("512"), 512)
        self.assertEqual(parse_size("1.5K"), 1536)
        self.assertEqual(parse_size("20GiB"), 20 * 1024 ** 3)
        self.assertEqual(parse_size(" 3 MB "), 3 * 1024 ** 2)
        self.assertEqual(parse_size("2P"), 2 * 1024 ** 5)

    def test_bad(self):
        for bad in ("", "1.2.3", "12X", "K"):
            with self.assertRaises(ValueError):
                parse_size(bad)


if __name__ == "__main__":
    unittest.main()
