"""`torch.fx.GraphModule`: a Module whose forward is Python code generated from a Graph.

Each instance gets a class of its own (named after the traced module, as torch.fx
does) so that `recompile()` can install the generated forward on it. The submodules,
parameters and buffers the graph reads are copied from the root, with empty Modules
for the path leading to them (a copied `seq.0` sits under a plain `Module` named seq).
"""

from __future__ import annotations

import copy
import itertools
import linecache
import os
from pathlib import Path
from typing import Any

from ember.fx.graph import Graph, PythonCode
from ember.nn import Module

__all__ = ["GraphModule"]

_eval_keys = itertools.count()


def _exec_with_source(src: str, globals_: dict[str, Any]) -> None:
    key = f"<eval_with_key>.{next(_eval_keys)}"
    linecache.cache[key] = (len(src), None, src.splitlines(True), key)
    exec(compile(src, key, "exec"), globals_)


def _forward_from_src(src: str, globals_: dict[str, Any]) -> Any:
    globals_copy = dict(globals_)
    _exec_with_source(src, globals_copy)
    return globals_copy["forward"]


def _copy_attr(from_module: Module, to_module: Module, target: str) -> None:
    import ember
    from ember.nn import Parameter

    *prefix, field = target.split(".")
    for item in prefix:
        f = getattr(from_module, item)
        t = getattr(to_module, item, None)
        if f is t:
            return
        if t is None:
            t = Module()
            setattr(to_module, item, t)
        from_module, to_module = f, t
    orig = getattr(from_module, field)
    if isinstance(orig, ember.Tensor) and not isinstance(orig, Parameter):
        to_module.register_buffer(field, orig)
    else:
        setattr(to_module, field, orig)


def _assign_attr(from_obj: Any, to_module: Module, target: str) -> None:
    import ember
    from ember.nn import Parameter

    *prefix, field = target.split(".")
    for item in prefix:
        t = getattr(to_module, item, None)
        if t is None:
            t = Module()
            setattr(to_module, item, t)
        to_module = t
    if isinstance(from_obj, ember.Tensor) and not isinstance(from_obj, Parameter):
        to_module.register_buffer(field, from_obj)
    else:
        setattr(to_module, field, from_obj)


def _addindent(s: str, num_spaces: int) -> str:
    lines = s.split("\n")
    if len(lines) == 1:
        return s
    first = lines.pop(0)
    return first + "\n" + "\n".join((num_spaces * " ") + line if line.strip() else ""
                                     for line in lines)


class GraphModule(Module):
    """A Module built from a Graph: ``GraphModule(root, graph, class_name='GraphModule')``.

    ``root`` is a Module (the graph's call_module and get_attr targets are copied from
    it) or a dict from qualified names to the objects to install. ``code`` is the
    generated forward; call ``recompile()`` after editing ``graph``."""

    def __new__(cls, *args: Any, **kwargs: Any) -> GraphModule:
        for t in cls.__mro__:
            if t.__qualname__.split(".")[-1] != "GraphModuleImpl":
                cls = t
                break

        class GraphModuleImpl(cls):  # each instance its own forward
            pass

        return super().__new__(GraphModuleImpl)

    def __init__(self, root: Module | dict[str, Any], graph: Graph,
                 class_name: str = "GraphModule") -> None:
        super().__init__()
        self.__class__.__name__ = class_name
        if isinstance(root, Module):
            if hasattr(root, "training"):
                self.training = root.training
            for node in graph.nodes:
                if node.op in ("get_attr", "call_module"):
                    _copy_attr(root, self, node.target)
        elif isinstance(root, dict):
            targets = []
            for node in graph.nodes:
                if node.op in ("get_attr", "call_module"):
                    if node.target not in root:
                        raise RuntimeError("Node " + str(node) + " referenced target "
                                           + node.target
                                           + " but that target was not provided in ``root``!")
                    targets.append(node.target)
            for target in sorted(targets, key=lambda t: t.count(".")):
                _assign_attr(root[target], self, target)
        else:
            raise RuntimeError("Unsupported type " + str(root) + " passed for root!")
        self.graph = graph
        self._tracer_cls = graph._tracer_cls
        self.meta: dict[str, Any] = {}

    @property
    def graph(self) -> Graph:
        """The Graph this module runs; setting it recompiles."""
        return self._graph

    @graph.setter
    def graph(self, g: Graph) -> None:
        if not isinstance(g, Graph):
            raise AssertionError(f"Expected a Graph instance, but got {type(g)}")
        self._graph = g
        g.owning_module = self
        self.recompile()

    @property
    def code(self) -> str:
        """The Python source of the generated forward."""
        if not hasattr(self, "_code"):
            raise RuntimeError("Code has not been generated! Please report a bug to PyTorch")
        return self._code

    def recompile(self) -> PythonCode:
        """Regenerate ``forward`` from ``graph`` (call it after editing the graph)."""
        python_code = self._graph.python_code(root_module="self")
        self._code = python_code.src
        type(self).forward = _forward_from_src(self._code, python_code.globals)
        return python_code

    # -- submodules --------------------------------------------------------------------
    def add_submodule(self, target: str, m: Module) -> bool:
        """Install `m` at the qualified name `target`, making empty Modules on the way;
        False when a path element exists and is not a Module."""
        *prefix, field = target.split(".")
        mod: Module = self
        for item in prefix:
            submod = getattr(mod, item, None)
            if submod is None:
                submod = Module()
                setattr(mod, item, submod)
            if not isinstance(submod, Module):
                return False
            mod = submod
        mod.add_module(field, m)
        return True

    def delete_submodule(self, target: str) -> bool:
        """Remove the submodule at `target`; False when there is none."""
        atoms = target.split(".")
        path, target_submod = atoms[:-1], atoms[-1]
        mod: Module = self
        for item in path:
            if not hasattr(mod, item):
                return False
            mod = getattr(mod, item)
            if not isinstance(mod, Module):
                return False
        if not hasattr(mod, target_submod):
            return False
        if not isinstance(getattr(mod, target_submod), Module):
            return False
        delattr(mod, target_submod)
        return True

    def delete_all_unused_submodules(self) -> None:
        """Remove the submodules no call_module or get_attr node uses."""
        used: list[str] = []
        for node in self.graph.nodes:
            if node.op in ("call_module", "get_attr"):
                fullpath = node.target.split(".")
                used.extend(".".join(fullpath[:i]) for i in range(1, len(fullpath)))
                used.append(node.target)
                if node.op == "call_module":
                    try:
                        submod = self.get_submodule(node.target)
                        used.extend(f"{node.target}.{name}" for name, _ in
                                    submod.named_modules() if name)
                    except AttributeError:
                        pass
        to_delete = [name for name, _ in self.named_modules() if name not in used]
        for name in to_delete:
            self.delete_submodule(name)

    def to_folder(self, folder: str | os.PathLike, module_name: str = "FxModule") -> None:
        """Write this module as an importable package: `folder/module.py` (a class
        `module_name` whose forward is this code), `folder/state_dict.pt` (the
        parameters and buffers), a `<name>.pt` for each submodule that its `repr` cannot
        rebuild, and `folder/__init__.py`."""
        folder = Path(folder)
        folder.mkdir(parents=True, exist_ok=True)
        import ember

        ember.save(self.state_dict(), folder / "state_dict.pt")
        tab = " " * 4
        custom_builtins = "\n".join([
            "import ember",
            "from ember.fx._names import torch_namespace",
            "torch = torch_namespace()  # torch's names in the generated code, ember's objects",
            "from math import inf", "from math import nan", "NoneType = type(None)",
            "from ember import device"])
        model_str = f"""
{custom_builtins}

from ember.nn import *
class {module_name}(torch.nn.Module):
    def __init__(self):
        super().__init__()
"""
        for name, module in self.named_children():
            if type(module).__module__.startswith(("ember.nn.", "torch.nn.")) and not any(
                    True for _ in module.children()):
                model_str += f"{tab * 2}setattr(self, '{name}', {module!r})\n"
            else:
                ember.save(module, folder / f"{name}.pt")
                model_str += (f"{tab * 2}setattr(self, '{name}', torch.load(r'{folder}/{name}.pt'"
                              f", weights_only=False))\n")
        for name, buffer in self._buffers.items():
            if buffer is not None:
                model_str += (f"{tab * 2}self.register_buffer('{name}', torch.empty("
                              f"{list(buffer.shape)}, dtype={buffer.dtype}))\n")
        for name, param in self._parameters.items():
            if param is not None:
                model_str += (f"{tab * 2}setattr(self, '{name}', torch.nn.Parameter("
                              f"torch.empty({list(param.shape)}, dtype={param.dtype})))\n")
        model_str += f"{tab * 2}self.load_state_dict(torch.load(r'{folder}/state_dict.pt'))\n"
        model_str += f"{_addindent(self.code, 4)}\n"
        (folder / "module.py").write_text(model_str)
        (folder / "__init__.py").write_text("from .module import *")

    # -- printing, copying ---------------------------------------------------------------
    def print_readable(self, print_output: bool = True, include_stride: bool = False,
                       include_device: bool = False, colored: bool = False) -> str:
        """The generated code as a class named after this module (printed by default)."""
        return _print_readable(self, self._get_name(), print_output)

    def __str__(self) -> str:
        return "\n".join([super().__str__(), self._code,
                          "# To see more debug info, please use "
                          "`graph_module.print_readable()`"])

    def __copy__(self) -> GraphModule:
        res = GraphModule(self, self.graph)
        res.meta = getattr(self, "meta", {})
        return res

    def __deepcopy__(self, memo: dict) -> GraphModule:
        res = Module.__new__(type(self))
        memo[id(self)] = res
        fake_mod = _CodeOnlyModule(copy.deepcopy(self.__dict__, memo))
        res.__init__(fake_mod, fake_mod.__dict__["_graph"])
        res.__class__.__name__ = type(self).__name__
        res.meta = copy.deepcopy(getattr(self, "meta", {}), memo)
        return res

    def __reduce__(self) -> tuple:
        dict_without_graph = self.__dict__.copy()
        python_code = self.recompile()
        del dict_without_graph["_graph"]
        return (_reconstruct, (dict_without_graph, python_code.src, type(self).__name__))


class _CodeOnlyModule(Module):
    def __init__(self, body: dict[str, Any]) -> None:
        super().__init__()
        self.__dict__ = body


def _reconstruct(body: dict[str, Any], src: str, class_name: str) -> GraphModule:
    """Rebuild a pickled GraphModule: re-run its code, then re-trace it."""
    from ember.fx._names import custom_builtins

    forward = _forward_from_src(src, custom_builtins())

    class CodeOnly(_CodeOnlyModule):
        pass

    CodeOnly.forward = forward
    com = CodeOnly(body)

    from ember.fx._symbolic_trace import Tracer

    class KeepModules(Tracer):
        def is_leaf_module(self, m: Module, qualname: str) -> bool:
            return True

    graph = KeepModules().trace(com)
    return GraphModule(com, graph, class_name)


def _print_readable(module: GraphModule, module_name: str, print_output: bool) -> str:
    code = module.graph.python_code(root_module="self", verbose=True).src.lstrip("\n")
    code = _addindent(f"class {module_name}(torch.nn.Module):\n" + code, 4)
    sub = [""]
    for name, submodule in module.named_children():
        if isinstance(submodule, GraphModule):
            sub.append(_print_readable(submodule, name, False))
    output = code + _addindent("\n".join(sub), 4)
    if print_output:
        print(output)
    return output
