"""The torch.func "Model ensembling" tutorial: ten MLPs run on different minibatches and
on one minibatch, first by a Python loop, then by one vmap over the models' stacked
parameters (torch.func.stack_module_state) and a stateless copy of the model on the meta
device (functional_call). The two must agree. (The tutorial's timing section is left out.)"""
import copy

import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)


# Here's a simple MLP
class SimpleMLP(nn.Module):
    def __init__(self):
        super(SimpleMLP, self).__init__()
        self.fc1 = nn.Linear(784, 128)
        self.fc2 = nn.Linear(128, 128)
        self.fc3 = nn.Linear(128, 10)

    def forward(self, x):
        x = x.flatten(1)
        x = self.fc1(x)
        x = F.relu(x)
        x = self.fc2(x)
        x = F.relu(x)
        x = self.fc3(x)
        return x


device = 'cuda' if torch.cuda.is_available() else 'cpu'
num_models = 10

data = torch.randn(100, 64, 1, 28, 28, device=device)
targets = torch.randint(10, (6400,), device=device)

models = [SimpleMLP().to(device) for _ in range(num_models)]

# Option 1: different minibatch for each model
minibatches = data[:num_models]
predictions_diff_minibatch_loop = [model(minibatch) for model, minibatch in zip(models, minibatches)]

# Option 2: same minibatch
minibatch = data[0]
predictions2 = [model(minibatch) for model in models]

# Using vmap to vectorize the ensemble
from torch.func import stack_module_state  # noqa: E402

params, buffers = stack_module_state(models)

from torch.func import functional_call  # noqa: E402

# Construct a "stateless" version of one of the models. It is "stateless" in
# the sense that the parameters are meta Tensors and do not have storage.
base_model = copy.deepcopy(models[0])
base_model = base_model.to('meta')


def fmodel(params, buffers, x):
    return functional_call(base_model, (params, buffers), (x,))


print([p.size(0) for p in params.values()])  # show the leading 'num_models' dimension
print(base_model.fc1.weight.device, base_model.fc1.weight.is_meta, base_model.fc1.weight.shape)
print(base_model.fc3.bias)

# verify minibatch has leading dimension of size 'num_models'
assert minibatches.shape == (num_models, 64, 1, 28, 28)

from torch import vmap  # noqa: E402

predictions1_vmap = vmap(fmodel)(params, buffers, minibatches)
print(predictions1_vmap.shape)

# verify the ``vmap`` predictions match the
assert torch.allclose(predictions1_vmap, torch.stack(predictions_diff_minibatch_loop), atol=1e-3, rtol=1e-5)
print("vmap over minibatches agrees with the loop")

predictions2_vmap = vmap(fmodel, in_dims=(0, 0, None))(params, buffers, minibatch)
print(predictions2_vmap.shape)

assert torch.allclose(predictions2_vmap, torch.stack(predictions2), atol=1e-3, rtol=1e-5)
print("vmap over one minibatch agrees with the loop")

# the stateless model's own output is shape-only: meta in, meta out
print(base_model(torch.empty(2, 1, 28, 28, device='meta')))
