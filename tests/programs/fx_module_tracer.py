"""pytorch/examples fx/module_tracer.py: a Tracer that records which module each node
came from (a small residual network in place of torchvision's resnet18)."""
import torch
import torch.fx


class ModulePathTracer(torch.fx.Tracer):
    current_module_qualified_name: str = ""
    node_to_originating_module: dict = {}

    def call_module(self, m, forward, args, kwargs):
        old_qualname = self.current_module_qualified_name
        try:
            self.current_module_qualified_name = self.path_of_module(m)
            return super().call_module(m, forward, args, kwargs)
        finally:
            self.current_module_qualified_name = old_qualname

    def create_proxy(self, kind, target, args, kwargs, name=None, type_expr=None):
        proxy = super().create_proxy(kind, target, args, kwargs, name, type_expr)
        self.node_to_originating_module[proxy.node] = self.current_module_qualified_name
        return proxy


class BasicBlock(torch.nn.Module):
    def __init__(self, c):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn1 = torch.nn.BatchNorm2d(c)
        self.relu = torch.nn.ReLU(inplace=True)
        self.conv2 = torch.nn.Conv2d(c, c, 3, padding=1, bias=False)
        self.bn2 = torch.nn.BatchNorm2d(c)

    def forward(self, x):
        identity = x
        out = self.relu(self.bn1(self.conv1(x)))
        out = self.bn2(self.conv2(out))
        out += identity
        return self.relu(out)


class TinyResNet(torch.nn.Module):
    def __init__(self):
        super().__init__()
        self.conv1 = torch.nn.Conv2d(3, 4, 3, padding=1)
        self.layer1 = torch.nn.Sequential(BasicBlock(4), BasicBlock(4))
        self.avgpool = torch.nn.AdaptiveAvgPool2d((1, 1))
        self.fc = torch.nn.Linear(4, 2)

    def forward(self, x):
        x = self.layer1(self.conv1(x))
        x = torch.flatten(self.avgpool(x), 1)
        return self.fc(x)


tracer = ModulePathTracer()
traced = tracer.trace(TinyResNet())
for node in traced.nodes:
    module_qualname = tracer.node_to_originating_module.get(node)
    print("Node", node, "is from module", module_qualname)
gm = torch.fx.GraphModule(tracer.root, traced)
print(gm.code)
