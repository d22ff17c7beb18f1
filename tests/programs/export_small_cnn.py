# torch.export tutorial-style script: export a small CNN, look at the ExportedProgram's
# graph signature, run `ep.module()`, make the batch dimension dynamic, save and load.
import os
import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.export import Dim, export


class SmallCNN(nn.Module):
    def __init__(self, num_classes: int = 10):
        super().__init__()
        self.conv1 = nn.Conv2d(1, 8, kernel_size=3, padding=1)
        self.bn1 = nn.BatchNorm2d(8)
        self.conv2 = nn.Conv2d(8, 16, kernel_size=3, padding=1)
        self.fc = nn.Linear(16 * 3 * 3, num_classes)

    def forward(self, x):
        x = F.max_pool2d(F.relu(self.bn1(self.conv1(x))), 2)
        x = F.max_pool2d(F.relu(self.conv2(x)), 2)
        x = torch.flatten(x, 1)
        return self.fc(x)


torch.manual_seed(0)
model = SmallCNN()
# a few training steps first, so the batch-norm statistics are not the defaults
optimizer = torch.optim.SGD(model.parameters(), lr=0.05, momentum=0.9)
data, labels = torch.randn(32, 1, 12, 12), torch.randint(0, 10, (32,))
for step in range(3):
    optimizer.zero_grad()
    loss = F.cross_entropy(model(data), labels)
    loss.backward()
    optimizer.step()
    print(f"train step {step} loss {loss.item():.4f}")
model.eval()

example_args = (torch.randn(4, 1, 12, 12),)
exported_program: torch.export.ExportedProgram = export(model, args=example_args)
print(type(exported_program).__name__)
print(exported_program.graph_signature)
sig = exported_program.graph_signature
print("parameters:", sig.parameters)
print("buffers:", sig.buffers)
print("user inputs:", sig.user_inputs, "user outputs:", sig.user_outputs)
for spec in sig.input_specs[:3]:
    print(spec.kind, spec.arg.name, spec.target)
print("state_dict keys:", list(exported_program.state_dict.keys()))
placeholders = [node.name for node in exported_program.graph.nodes if node.op == "placeholder"]
print("placeholders:", placeholders)

mod = exported_program.module()
with torch.no_grad():
    eager = model(*example_args)
    out = mod(*example_args)
print("module output shape:", out.shape)
print("matches eager:", torch.allclose(out, eager, atol=1e-5))
print("predictions:", out.argmax(dim=1).tolist(), eager.argmax(dim=1).tolist())

try:
    mod(torch.randn(8, 1, 12, 12))
except Exception as e:
    print(f"static shape guard: {type(e).__name__}: {e}")

batch = Dim("batch", min=1, max=64)
print(batch)
dynamic_ep = export(model, example_args, dynamic_shapes={"x": {0: batch}})
print("range constraints:", list(dynamic_ep.range_constraints.values()))
for bs in (1, 7, 33):
    xb = torch.randn(bs, 1, 12, 12)
    with torch.no_grad():
        same = torch.allclose(dynamic_ep.module()(xb), model(xb), atol=1e-5)
    print(f"batch {bs}: output {tuple(dynamic_ep.module()(xb).shape)} matches eager: {same}")
try:
    dynamic_ep.module()(torch.randn(2, 1, 10, 12))
except Exception as e:
    print(f"dynamic guard: {type(e).__name__}: {e}")

with tempfile.TemporaryDirectory() as tmp:
    path = os.path.join(tmp, "small_cnn.pt2")
    torch.export.save(exported_program, path)
    print("saved a zip archive:", __import__("zipfile").is_zipfile(path))
    loaded = torch.export.load(path)
print("loaded signature equal:", str(loaded.graph_signature) == str(sig))
with torch.no_grad():
    print("loaded matches:", torch.allclose(loaded.module()(*example_args), out))
try:
    exported_program(*example_args)
except RuntimeError as e:
    print("RuntimeError:", e)
