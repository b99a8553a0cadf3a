import unittest

from envload import ParseError, parse


class ParseTest(unittest.TestCase):
    def test_basic(self):
        text = """
# database
DB_HOST=localhost
DB_PORT = 5432   # default port
EMPTY=
"""
        self.assertEqual(parse(text), {"DB_HOST": "localhost", "DB_PORT": "5432", "EMPTY": ""})

    def test_quotes(self):
        text = 'A="two words"\nB=\'no $x here\'\nC="one\\ntwo \\"q\\""\n'
        self.assertEqual(parse(text), {"A": "two words", "B": "no $x here", "C": 'one\ntwo "q"'})

    def test_errors(self):
        for bad in ("JUSTAKEY\n", 'A="open\n', 'A="bad \\q"\n'):
            with self.assertRaises(ParseError):
                parse(bad)

    def test_error_line_number(self):
        with self.assertRaises(ParseError) as cm:
            parse("A=1\n\nOOPS\n")
        self.assertEqual(cm.exception.lineno, 3)


if __name__ == "__main__":
    unittest.main()
