import unittest

from layercfg import merge, merge_all


class MergeTest(unittest.TestCase):
    def test_override_scalar(self):
        self.assertEqual(merge({"a": 1, "b": 2}, {"b": 3}), {"a": 1, "b": 3})

    def test_none_deletes(self):
        self.assertEqual(merge({"a": 1, "b": 2}, {"a": None}), {"b": 2})

    def test_lists_replace(self):
        self.assertEqual(merge({"hosts": ["a", "b"]}, {"hosts": ["c"]}), {"hosts": ["c"]})

    def test_merge_all(self):
        self.assertEqual(merge_all([{"a": 1}, {"b": 2}, {"a": 3}]), {"a": 3, "b": 2})
        self.assertEqual(merge_all([]), {})


if __name__ == "__main__":
    unittest.main()
