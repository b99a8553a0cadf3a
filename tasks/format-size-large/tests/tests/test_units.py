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

    def test_large_units(self):
        self.assertEqual(format_size(1024 ** 5), "1.0 PiB")
        self.assertEqual(format_size(int(2.5 * 1024 ** 5)), "2.5 PiB")
        self.assertEqual(format_size(1024 ** 6), "1.0 EiB")
        self.assertEqual(format_size(3 * 1024 ** 6), "3.0 EiB")

    def test_beyond_largest_unit(self):
        self.assertEqual(format_size(2048 * 1024 ** 6), "2048.0 EiB")
        self.assertEqual(format_size(1024 ** 8), "1048576.0 EiB")

    def test_rounding_moves_to_next_unit(self):
        self.assertEqual(format_size(1048575), "1.0 MiB")
        self.assertEqual(format_size(1024 ** 3 - 1), "1.0 GiB")
        self.assertEqual(format_size(1024 ** 5 - 1), "1.0 PiB")
        self.assertEqual(format_size(1023 * 1024 + 900), "1023.9 KiB")

    def test_negative_large(self):
        self.assertEqual(format_size(-(1024 ** 5)), "-1.0 PiB")

    def test_roundtrip(self):
        for text in ("1.0 KiB", "1.5 MiB", "7.0 TiB", "1.0 PiB", "2.0 EiB"):
            self.assertEqual(format_size(parse_size(text)), text)

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
