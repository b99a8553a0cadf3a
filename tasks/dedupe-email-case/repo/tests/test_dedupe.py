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


if __name__ == "__main__":
    unittest.main()
