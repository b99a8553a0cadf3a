import unittest

from contactsync import Contact, dedupe


class DedupeTest(unittest.TestCase):
    def test_merges_same_email(self):
        a = Contact("Ada", "ada@example.com", "", ["1"])
        b = Contact("Ada Lovelace", "ada@example.com", "Engines Ltd", ["2", "1"])
        out = dedupe([a, b])
        self.assertEqual(len(out), 1)
        self.assertEqual(out[0].name, "Ada")
        self.assertEqual(out[0].company, "Engines Ltd")
        self.assertEqual(out[0].phones, ["1", "2"])

    def test_keeps_order_and_distinct(self):
        out = dedupe([
            Contact("B", "b@example.com"),
            Contact("A", "a@example.com"),
            Contact("B2", "b@example.com"),
        ])
        self.assertEqual([c.name for c in out], ["B", "A"])

    def test_no_email_never_merged(self):
        out = dedupe([Contact("X"), Contact("X")])
        self.assertEqual(len(out), 2)

    def test_inputs_not_modified(self):
        a = Contact("", "a@example.com", "", ["1"])
        dedupe([a, Contact("A", "a@example.com", "Co", ["2"])])
        self.assertEqual(a, Contact("", "a@example.com", "", ["1"]))

    def test_email_case_insensitive(self):
        out = dedupe([
            Contact("Foo", "Foo@Example.com", "", ["1"]),
            Contact("Foo Bar", "foo@example.com", "Acme", ["2"]),
            Contact("", "FOO@EXAMPLE.COM", "", ["3"]),
        ])
        self.assertEqual(len(out), 1)
        self.assertEqual(out[0].name, "Foo")
        self.assertEqual(out[0].company, "Acme")
        self.assertEqual(out[0].phones, ["1", "2", "3"])

    def test_keeps_first_email_as_written(self):
        out = dedupe([Contact("Foo", "Foo@Example.com"), Contact("foo", "foo@example.com")])
        self.assertEqual(out[0].email, "Foo@Example.com")

    def test_email_surrounding_whitespace(self):
        out = dedupe([
            Contact("A", "a@example.com"),
            Contact("A2", "  a@example.com "),
            Contact("A3", "\tA@example.com\n"),
        ])
        self.assertEqual(len(out), 1)
        self.assertEqual(out[0].name, "A")

    def test_different_emails_still_distinct(self):
        out = dedupe([Contact("A", "a@example.com"), Contact("B", "A@example.org")])
        self.assertEqual(len(out), 2)


if __name__ == "__main__":
    unittest.main()
