"""A model that calls a third-party primitive with no ONNX converter (`cli_test_cube`),
inside the submodule `blocks.1.act`: `ember export` must refuse it and name both."""

from ember import nn
from ember.core import dispatch, plugins
from ember.core.declare import primitive
from ember.core.opdef import OPS, OutMeta

if "cli_test_cube" not in OPS:
    @primitive(variants="", rule=lambda input: OutMeta(tuple(input.shape), input.dtype, None))
    def cli_test_cube(input):
        """x ** 3 (a third party's primitive)."""
        return dispatch.run("cli_test_cube", input)
    plugins.get_backend("cpu").kernels["cli_test_cube"] = lambda a: a * a * a


class Cube(nn.Module):
    def forward(self, x):
        return dispatch.run("cli_test_cube", x)


class Block(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.fc = nn.Linear(4, 4)
        self.act = Cube()

    def forward(self, x):
        return self.act(self.fc(x))


class Model(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.blocks = nn.Sequential(Block(), Block())

    def forward(self, x):
        return self.blocks(x)
