"""The PyTorch tutorial "Adversarial Example Generation" (FGSM): a LeNet-style classifier
(trained here briefly and saved, in place of the downloaded lenet_mnist_model.pth, then
loaded with map_location and weights_only=True), then for each epsilon every correctly
classified test image (batch size 1) is attacked with its input gradient's sign
(data.requires_grad = True, data.grad.data.sign(), torch.clamp), denormalised and
renormalised as the tutorial does, and the accuracy under attack is printed.
Synthetic NumPy "digits" replace MNIST."""
import argparse

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.utils.data import DataLoader, TensorDataset

parser = argparse.ArgumentParser()
parser.add_argument('--epsilons', type=float, nargs='+', default=[0, .1, .2, .3])
parser.add_argument('--n-test', type=int, default=40)
args = parser.parse_args()

epsilons = args.epsilons
pretrained_model = "lenet_mnist_model.pth"
use_cuda = True
# Set random seed for reproducibility
torch.manual_seed(42)


# LeNet Model definition
class Net(nn.Module):
    def __init__(self):
        super(Net, self).__init__()
        self.conv1 = nn.Conv2d(1, 8, 3, 1)
        self.conv2 = nn.Conv2d(8, 16, 3, 1)
        self.dropout1 = nn.Dropout(0.25)
        self.dropout2 = nn.Dropout(0.5)
        self.fc1 = nn.Linear(576, 64)
        self.fc2 = nn.Linear(64, 10)

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
        return output


MEAN, STD = 0.1307, 0.3081


def normalize(batch, mean=(MEAN,), std=(STD,)):
    # transforms.Normalize((0.1307,), (0.3081,)) on a batch
    mean = torch.as_tensor(mean, dtype=batch.dtype, device=batch.device)
    std = torch.as_tensor(std, dtype=batch.dtype, device=batch.device)
    return (batch - mean.view(1, -1, 1, 1)) / std.view(1, -1, 1, 1)


def digits(n, seed):
    patterns = (np.random.RandomState(0).rand(10, 16, 16) > 0.7).astype(np.float32)
    rng = np.random.RandomState(seed)
    labels = rng.randint(0, 10, n)
    images = np.clip(patterns[labels] * rng.uniform(0.5, 1.0, (n, 1, 1)) + 0.35 * rng.rand(n, 16, 16), 0, 1)
    images = torch.from_numpy(images.astype(np.float32)).unsqueeze(1)
    return TensorDataset(normalize(images), torch.from_numpy(labels))


# MNIST Test dataset and dataloader declaration
test_loader = torch.utils.data.DataLoader(digits(args.n_test, seed=2), batch_size=1, shuffle=True)

# We want to be able to train our model on an `accelerator <https://pytorch.org/docs/stable/torch.html#accelerators>`__
# such as CUDA, MPS, MTIA, or XPU. If the current accelerator is available, we will use it. Otherwise, we use the CPU.
device = torch.accelerator.current_accelerator().type if torch.accelerator.is_available() else "cpu"
print(f"Using {device} device")

# "pretraining": a few epochs, saved as the tutorial's downloaded file would be
model = Net().to(device)
optimizer = optim.Adadelta(model.parameters(), lr=1.0)
for epoch in range(3):
    model.train()
    for data, target in DataLoader(digits(512, seed=1), batch_size=64, shuffle=True):
        optimizer.zero_grad()
        loss = F.nll_loss(model(data.to(device)), target.to(device))
        loss.backward()
        optimizer.step()
    print(f"pretraining epoch {epoch}: loss {loss.item():.4f}")
torch.save(model.state_dict(), pretrained_model)

# Initialize the network
model = Net().to(device)

# Load the pretrained model
model.load_state_dict(torch.load(pretrained_model, map_location=device, weights_only=True))

# Set the model in evaluation mode. In this case this is for the Dropout layers
model.eval()


# FGSM attack code
def fgsm_attack(image, epsilon, data_grad):
    # Collect the element-wise sign of the data gradient
    sign_data_grad = data_grad.sign()
    # Create the perturbed image by adjusting each pixel of the input image
    perturbed_image = image + epsilon*sign_data_grad
    # Adding clipping to maintain [0,1] range
    perturbed_image = torch.clamp(perturbed_image, 0, 1)
    # Return the perturbed image
    return perturbed_image


# restores the tensors to their original scale
def denorm(batch, mean=[0.1307], std=[0.3081]):
    """
    Convert a batch of tensors to their original scale.

    Args:
        batch (torch.Tensor): Batch of normalized tensors.
        mean (torch.Tensor or list): Mean used for normalization.
        std (torch.Tensor or list): Standard deviation used for normalization.

    Returns:
        torch.Tensor: batch of tensors without normalization applied to them.
    """
    if isinstance(mean, list):
        mean = torch.tensor(mean).to(device)
    if isinstance(std, list):
        std = torch.tensor(std).to(device)

    return batch * std.view(1, -1, 1, 1) + mean.view(1, -1, 1, 1)


def test(model, device, test_loader, epsilon):

    # Accuracy counter
    correct = 0
    adv_examples = []

    # Loop over all examples in test set
    for data, target in test_loader:

        # Send the data and label to the device
        data, target = data.to(device), target.to(device)

        # Set requires_grad attribute of tensor. Important for Attack
        data.requires_grad = True

        # Forward pass the data through the model
        output = model(data)
        init_pred = output.max(1, keepdim=True)[1]  # get the index of the max log-probability

        # If the initial prediction is wrong, don't bother attacking, just move on
        if init_pred.item() != target.item():
            continue

        # Calculate the loss
        loss = F.nll_loss(output, target)

        # Zero all existing gradients
        model.zero_grad()

        # Calculate gradients of model in backward pass
        loss.backward()

        # Collect ``datagrad``
        data_grad = data.grad.data

        # Restore the data to its original scale
        data_denorm = denorm(data)

        # Call FGSM Attack
        perturbed_data = fgsm_attack(data_denorm, epsilon, data_grad)

        # Reapply normalization
        perturbed_data_normalized = normalize(perturbed_data)

        # Re-classify the perturbed image
        output = model(perturbed_data_normalized)

        # Check for success
        final_pred = output.max(1, keepdim=True)[1]  # get the index of the max log-probability
        if final_pred.item() == target.item():
            correct += 1
            # Special case for saving 0 epsilon examples
            if epsilon == 0 and len(adv_examples) < 5:
                adv_ex = perturbed_data.squeeze().detach().cpu().numpy()
                adv_examples.append((init_pred.item(), final_pred.item(), adv_ex))
        else:
            # Save some adv examples for visualization later
            if len(adv_examples) < 5:
                adv_ex = perturbed_data.squeeze().detach().cpu().numpy()
                adv_examples.append((init_pred.item(), final_pred.item(), adv_ex))

    # Calculate final accuracy for this epsilon
    final_acc = correct/float(len(test_loader))
    print(f"Epsilon: {epsilon}\tTest Accuracy = {correct} / {len(test_loader)} = {final_acc}")

    # Return the accuracy and an adversarial example
    return final_acc, adv_examples


accuracies = []
examples = []

# Run test for each epsilon
for eps in epsilons:
    acc, ex = test(model, device, test_loader, eps)
    accuracies.append(acc)
    examples.append(ex)

print("accuracies fall:", all(a >= b for a, b in zip(accuracies, accuracies[1:])))
print("example:", examples[-1][0][0], examples[-1][0][1], examples[-1][0][2].shape,
      examples[-1][0][2].dtype, float(examples[-1][0][2].min()) >= 0.0)
