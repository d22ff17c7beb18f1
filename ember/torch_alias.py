"""`import torch` served by ember: a `sys.meta_path` finder that maps `torch` and every
`torch.X.Y` to `ember.X.Y`, so a PyTorch program runs unchanged (`python -m ember.run
script.py`).

The alias returns ember's own module objects (``sys.modules["torch.nn"] is ember.nn``),
so `isinstance(x, torch.Tensor)`, pickled class paths and module identity all agree; and
printed forms name torch (`torch.float32`, `torch.Size([2])`, `<class 'torch.Tensor'>`),
as under PyTorch. `torch.__version__` is then a `TorchVersion` of the PyTorch release
whose API ember follows, with `ember` as its local label (`2.13.0+ember`, as PyTorch's
`2.13.0+cpu`): programs compare it (`>= "1.10"`, `>= (2, 0)`) to pick code paths.
`ember.__version__` is ember's own again once the alias is removed.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
from types import ModuleType

import ember
from ember.core import dtype
from ember.torch_version import ALIASED_VERSION, TorchVersion

_ALIAS = "torch"
_TARGET = "ember"
OWN_VERSION = ember.__version__  # ember's own version, a plain string


def _set_version(version: str) -> None:
    """`__version__` of ember and of ember.version (torch.version.__version__, a plain
    string in PyTorch: only `torch.__version__` is a TorchVersion)."""
    import ember.version

    ember.__version__ = version
    ember.version.__version__ = str(version)


class _AliasLoader(importlib.abc.Loader):
    """Loads `torch.X` as the already imported (or importable) `ember.X`."""

    def __init__(self, target: str) -> None:
        self.target = target

    def create_module(self, spec) -> ModuleType:
        try:
            module = importlib.import_module(self.target)
        except ModuleNotFoundError as exc:
            if exc.name != self.target:  # a real missing dependency inside ember.X
                raise
            raise ModuleNotFoundError(
                f"No module named {spec.name!r} (ember, running as torch, has no "
                f"{self.target!r})", name=spec.name) from None
        _name_classes_as_torch()  # (its classes, and those of what it imported)
        return module

    def exec_module(self, module: ModuleType) -> None:
        """Nothing to run: ember's module is executed by its own import."""


class TorchAliasFinder(importlib.abc.MetaPathFinder):
    """Finds `torch` and `torch.*` as ember's modules of the same dotted path."""

    def find_spec(self, fullname: str, path=None, target=None):
        if fullname != _ALIAS and not fullname.startswith(_ALIAS + "."):
            return None
        ember_name = _TARGET + fullname[len(_ALIAS):]
        return importlib.util.spec_from_loader(fullname, _AliasLoader(ember_name))


class _RenamingFinder(importlib.abc.MetaPathFinder):
    """While the alias is installed, an ember module imported by name (`ember.optim.sgd`,
    which `torch.optim` imports when first used) has its classes named as torch's after
    it runs (`_name_classes_as_torch`)."""

    def find_spec(self, fullname: str, path=None, target=None):
        if not fullname.startswith(_TARGET + "."):
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
        if spec is None or spec.loader is None or not hasattr(spec.loader, "exec_module"):
            return spec
        exec_module = spec.loader.exec_module

        def exec_then_rename(module: ModuleType) -> None:
            exec_module(module)
            _name_classes_as_torch(module)
        spec.loader.exec_module = exec_then_rename  # (this spec's own loader object)
        return spec


def install() -> None:
    """Make `import torch` (and `torch.nn.functional`, `torch.utils.data` ...) import
    ember. Call it before the program imports torch; calling it twice is harmless.

    Raises:
        RuntimeError: if the real PyTorch is already imported in this process (its
            modules would be mixed with ember's).
    """
    if any(isinstance(f, TorchAliasFinder) for f in sys.meta_path):
        return
    loaded = sys.modules.get(_ALIAS)
    if loaded is not None and not loaded.__name__.startswith(_TARGET):
        raise RuntimeError("torch_alias.install(): the real torch is already imported; "
                           "install the alias before anything imports torch")
    sys.meta_path.insert(0, TorchAliasFinder())
    sys.meta_path.insert(1, _RenamingFinder())
    dtype.set_api_name(_ALIAS)  # print torch.float32, torch.Size([2]) as PyTorch does
    _set_version(TorchVersion(ALIASED_VERSION))
    _name_classes_as_torch()
    _serve_spawned_children()


_renamed: dict[type, str] = {}  # class -> its module's own name, while the alias renames it
_scanned: set[str] = set()  # ember modules whose classes are renamed


def _name_classes_as_torch(finished: ModuleType | None = None) -> None:
    """Classes defined in ember's loaded modules print as PyTorch's do (`<class
    'torch.nn.modules.linear.Linear'>`): each class's `__module__` becomes the torch name
    the alias serves its module under, which is also registered, so pickle and inspect
    find the class there. (ember's classes live at PyTorch's module paths, or the module
    there sets their `__module__` to it: `ember.nn.modules.container` for `Sequential`.)
    Runs at install, after each module the alias imports and after each ember module
    imported while it is installed (`finished`, whose import machinery still marks it
    as running); `uninstall` undoes it. A module still running its own code is left for
    a later pass (its classes are not all defined yet)."""
    for name, module in list(sys.modules.items()):
        if name in _scanned or module is None or \
                not (name == _TARGET or name.startswith(_TARGET + ".")):
            continue
        if module is not finished and getattr(getattr(module, "__spec__", None),
                                              "_initializing", False):
            continue
        _scanned.add(name)
        alias = _ALIAS + name[len(_TARGET):]
        for obj in list(vars(module).values()):
            if isinstance(obj, type) and obj.__module__ == name and obj not in _renamed:
                _renamed[obj] = name
                obj.__module__ = alias
        sys.modules.setdefault(alias, module)


def _name_classes_as_ember() -> None:
    for cls, name in _renamed.items():
        cls.__module__ = name
    _renamed.clear()
    _scanned.clear()


class _InstallInChild:
    """Unpickled by a process that multiprocessing starts with 'spawn' or 'forkserver':
    its unpickling installs the alias there, before the child imports the parent's
    `__main__` (which imports torch) and unpickles the process object."""

    def __reduce__(self) -> tuple:
        return install, ()


def _serve_spawned_children() -> None:
    """Make every child that multiprocessing spawns (`mp.Process`, `mp.spawn`, DataLoader
    workers under 'spawn') import ember for torch too: the data a child unpickles first
    (`multiprocessing.spawn.get_preparation_data`) carries an `_InstallInChild`. A forked
    child needs nothing: it inherits `sys.meta_path`."""
    from multiprocessing import spawn

    if getattr(spawn.get_preparation_data, "_ember_alias", False):
        return
    original = spawn.get_preparation_data

    def get_preparation_data(name: str) -> dict:
        # first in the dict: unpickled before the entries that make the child import
        return {"ember_torch_alias": _InstallInChild(), **original(name)}

    get_preparation_data._ember_alias = True  # type: ignore[attr-defined]
    get_preparation_data.original = original  # type: ignore[attr-defined]
    spawn.get_preparation_data = get_preparation_data


def uninstall() -> None:
    """Remove the alias and forget the `torch*` names it served."""
    from multiprocessing import spawn

    spawn.get_preparation_data = getattr(spawn.get_preparation_data, "original",
                                         spawn.get_preparation_data)
    sys.meta_path[:] = [f for f in sys.meta_path
                        if not isinstance(f, (TorchAliasFinder, _RenamingFinder))]
    dtype.set_api_name(_TARGET)
    _name_classes_as_ember()
    _set_version(OWN_VERSION)
    for name in [n for n in sys.modules if n == _ALIAS or n.startswith(_ALIAS + ".")]:
        if sys.modules[name].__name__.startswith(_TARGET):
            del sys.modules[name]
