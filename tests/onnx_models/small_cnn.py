"""A small CNN for the `ember export` tests (SPEC tests/onnx_models/small_cnn.py:...)."""

from ember import nn


class SmallCNN(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(nn.Conv2d(1, 4, 3, padding=1), nn.BatchNorm2d(4),
                                      nn.ReLU(), nn.MaxPool2d(2))
        self.head = nn.Sequential(nn.Flatten(), nn.Linear(4 * 4 * 4, 10))

    def forward(self, x):
        return self.head(self.features(x))


def make_model() -> nn.Module:
    """A factory, as SPEC may name one."""
    return nn.Sequential(nn.Linear(6, 8), nn.Tanh(), nn.Linear(8, 2))


NOT_A_MODEL = 42


def make_not_a_model():
    return "not a module"
