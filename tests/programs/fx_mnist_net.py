"""pytorch/examples mnist's Net traced with torch.fx (not itself an fx example): functional
calls with the keywords torch records, boolean-dispatch pooling, flatten, view, max."""
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.fx as fx


class Net(nn.Module):
    def __init__(self):
        super(Net, self).__init__()
        self.conv1 = nn.Conv2d(1, 32, 3, 1)
        self.conv2 = nn.Conv2d(32, 64, 3, 1)
        self.dropout1 = nn.Dropout(0.25)
        self.dropout2 = nn.Dropout(0.5)
        self.fc1 = nn.Linear(9216, 128)
        self.fc2 = nn.Linear(128, 10)

    def forward(self, x):
        x = self.conv1(x)
        x = F.relu(x)
        x = self.conv2(x)
        x = F.relu(x)
        x = F.max_pool2d(x, 2)
        x = self.dropout1(x)
        x = torch.flatten(x, 1)
        x = self.fc1(x)
        x = F.relu(x)
        x = self.dropout2(x)
        x = self.fc2(x)
        output = F.log_softmax(x, dim=1)
        return output, output.max(dim=1).values, torch.max(output, 1)[1], x.view(x.size(0), -1), F.max_pool2d(F.relu(x.view(-1, 1, 2, 5)), (2, 2))


gm = fx.symbolic_trace(Net())
print(gm.code)
print(gm.graph)
print(gm)
