import copy
import json
import tempfile
import unittest
from pathlib import Path

from layercfg import load, merge, merge_all

BASE = {
    "name": "svc",
    "database": {"host": "db.internal", "port": 5432, "pool": {"min": 1, "max": 10}},
    "hosts": ["a", "b"],
}


class DeepMergeTest(unittest.TestCase):
    def test_nested_key_override_keeps_siblings(self):
        out = merge(BASE, {"database": {"port": 6543}})
        self.assertEqual(out["database"], {"host": "db.internal", "port": 6543, "pool": {"min": 1, "max": 10}})

    def test_three_levels(self):
        out = merge(BASE, {"database": {"pool": {"max": 50}}})
        self.assertEqual(out["database"]["pool"], {"min": 1, "max": 50})
        self.assertEqual(out["database"]["host"], "db.internal")

    def test_none_deletes_nested_key(self):
        out = merge(BASE, {"database": {"pool": None}})
        self.assertEqual(out["database"], {"host": "db.internal", "port": 5432})

    def test_dict_replaces_scalar_and_back(self):
        self.assertEqual(merge({"a": 1}, {"a": {"b": 2}}), {"a": {"b": 2}})
        self.assertEqual(merge({"a": {"b": 2}}, {"a": 1}), {"a": 1})

    def test_lists_still_replace(self):
        self.assertEqual(merge(BASE, {"hosts": ["c"]})["hosts"], ["c"])

    def test_inputs_not_mutated(self):
        base = copy.deepcopy(BASE)
        override = {"database": {"port": 6543, "pool": {"max": 2}}, "hosts": ["z"]}
        override_before = copy.deepcopy(override)
        out = merge(base, override)
        self.assertEqual(base, BASE)
        self.assertEqual(override, override_before)
        out["database"]["pool"]["min"] = 99
        out["database"]["host"] = "changed"
        self.assertEqual(base, BASE)

    def test_merge_all_nested(self):
        out = merge_all([BASE, {"database": {"port": 1}}, {"database": {"host": "other"}}])
        self.assertEqual(out["database"], {"host": "other", "port": 1, "pool": {"min": 1, "max": 10}})

    def test_load_env_var_keeps_section(self):
        with tempfile.TemporaryDirectory() as d:
            Path(d, "base.json").write_text(json.dumps(BASE))
            Path(d, "prod.json").write_text(json.dumps({"database": {"host": "db.prod"}}))
            cfg = load(d, env="prod", environ={"APP__DATABASE__PORT": "6543"})
        self.assertEqual(cfg["database"], {"host": "db.prod", "port": 6543, "pool": {"min": 1, "max": 10}})


if __name__ == "__main__":
    unittest.main()
