import unittest

from envload import ParseError, load, parse


class ExportTest(unittest.TestCase):
    def test_export_prefix(self):
        text = "export FOO=bar\nexport  BAZ=\"two words\"\nPLAIN=1\n"
        self.assertEqual(parse(text), {"FOO": "bar", "BAZ": "two words", "PLAIN": "1"})

    def test_export_with_comment(self):
        self.assertEqual(parse("export PORT=8080 # dev\n"), {"PORT": "8080"})

    def test_key_named_export(self):
        self.assertEqual(parse("export=yes\nEXPORTER=otlp\n"), {"export": "yes", "EXPORTER": "otlp"})


class HashInValuesTest(unittest.TestCase):
    def test_hash_in_double_quotes(self):
        self.assertEqual(parse('DB_PASSWORD="abc#123"\n'), {"DB_PASSWORD": "abc#123"})

    def test_hash_in_single_quotes(self):
        self.assertEqual(parse("COLOR='#ff0000'\n"), {"COLOR": "#ff0000"})

    def test_quoted_then_comment(self):
        self.assertEqual(parse('TOKEN="a#b" # the token\n'), {"TOKEN": "a#b"})
        self.assertEqual(parse("TOKEN='a # b'   # the token\n"), {"TOKEN": "a # b"})

    def test_escaped_quote_and_hash(self):
        self.assertEqual(parse('MSG="say \\"hi\\" #1"\n'), {"MSG": 'say "hi" #1'})

    def test_unquoted_comment_still_stripped(self):
        self.assertEqual(parse("DEBUG=true # local only\n"), {"DEBUG": "true"})

    def test_unterminated_quote_still_error(self):
        with self.assertRaises(ParseError):
            parse('A="abc#123\n')

    def test_load_sets_values(self):
        import os
        import tempfile
        fd, path = tempfile.mkstemp(suffix=".env")
        with os.fdopen(fd, "w") as f:
            f.write('export API_KEY="k#9"\n')
        self.addCleanup(os.unlink, path)
        env = {}
        load(path, environ=env)
        self.assertEqual(env, {"API_KEY": "k#9"})


if __name__ == "__main__":
    unittest.main()
