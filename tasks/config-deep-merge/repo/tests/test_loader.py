import json
import tempfile
import unittest
from pathlib import Path

from layercfg import env_layer, load


class EnvLayerTest(unittest.TestCase):
    def test_nested_and_typed(self):
        layer = env_layer({"APP__DATABASE__PORT": "6543", "APP__DEBUG": "true", "HOME": "/root", "APP__NAME": "svc"})
        self.assertEqual(layer, {"database": {"port": 6543}, "debug": True, "name": "svc"})


class LoadTest(unittest.TestCase):
    def test_layers_in_order(self):
        with tempfile.TemporaryDirectory() as d:
            Path(d, "base.json").write_text(json.dumps({"name": "svc", "workers": 2, "debug": True}))
            Path(d, "prod.json").write_text(json.dumps({"workers": 8, "debug": None}))
            cfg = load(d, env="prod", environ={"APP__NAME": "svc-prod"})
        self.assertEqual(cfg, {"name": "svc-prod", "workers": 8})


if __name__ == "__main__":
    unittest.main()
