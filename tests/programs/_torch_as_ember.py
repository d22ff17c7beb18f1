"""Run a script with `import torch` answered by ember (the test's own tiny mapping).

    python tests/programs/_torch_as_ember.py SCRIPT [ARGS...]

Used by tests/test_programs_B.py until a supported alias (`python -m ember.run`) exists.
Every `torch` or `torch.X.Y` import resolves to `ember` or `ember.X.Y`; the ember module's own
`__spec__` is kept, so ember's relative and lazy imports are unaffected.
"""

import importlib
import importlib.abc
import importlib.util
import runpy
import sys


class _TorchToEmber(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    def find_spec(self, name, path, target=None):
        if name == "torch" or name.startswith("torch."):
            return importlib.util.spec_from_loader(name, self)
        return None

    def create_module(self, spec):
        module = importlib.import_module("ember" + spec.name[len("torch"):])
        self._spec = module.__spec__
        return module

    def exec_module(self, module):
        module.__spec__ = self._spec


if __name__ == "__main__":
    sys.meta_path.insert(0, _TorchToEmber())
    script = sys.argv[1]
    sys.argv = sys.argv[1:]
    runpy.run_path(script, run_name="__main__")
