"""Visualizing Models, Data, and Training with TensorBoard (the PyTorch tutorial, without
its matplotlib figures) and the "PyTorch Profiler" recipe, with a synthetic
FashionMNIST-like data set instead of torchvision's download."""
import os
import tempfile

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
import torch.optim as optim
from torch.profiler import ProfilerActivity, profile, record_function
from torch.utils.tensorboard import SummaryWriter

torch.manual_seed(0)

# constant for classes
classes = ('T-shirt/top', 'Trouser', 'Pullover', 'Dress', 'Coat',
           'Sandal', 'Shirt', 'Sneaker', 'Bag', 'Ankle Boot')


class FakeFashionMNIST(torch.utils.data.Dataset):
    def __init__(self, n, seed):
        rng = np.random.RandomState(seed)
        templates = np.random.RandomState(0).rand(10, 28, 28).astype(np.float32)
        self.targets = rng.randint(0, 10, n)
        noise = rng.rand(n, 28, 28).astype(np.float32)
        images = 0.8 * templates[self.targets] + 0.2 * noise
        self.data = torch.from_numpy((images - 0.5) / 0.5).unsqueeze(1)

    def __len__(self):
        return len(self.targets)

    def __getitem__(self, i):
        return self.data[i], int(self.targets[i])


trainset = FakeFashionMNIST(400, seed=1)
testset = FakeFashionMNIST(200, seed=2)
trainloader = torch.utils.data.DataLoader(trainset, batch_size=4, shuffle=True, num_workers=0)
testloader = torch.utils.data.DataLoader(testset, batch_size=4, shuffle=False, num_workers=0)


class Net(nn.Module):
    def __init__(self):
        super(Net, self).__init__()
        self.conv1 = nn.Conv2d(1, 6, 5)
        self.pool = nn.MaxPool2d(2, 2)
        self.conv2 = nn.Conv2d(6, 16, 5)
        self.fc1 = nn.Linear(16 * 4 * 4, 120)
        self.fc2 = nn.Linear(120, 84)
        self.fc3 = nn.Linear(84, 10)

    def forward(self, x):
        x = self.pool(F.relu(self.conv1(x)))
        x = self.pool(F.relu(self.conv2(x)))
        x = x.view(-1, 16 * 4 * 4)
        x = F.relu(self.fc1(x))
        x = F.relu(self.fc2(x))
        x = self.fc3(x)
        return x


net = Net()
criterion = nn.CrossEntropyLoss()
optimizer = optim.SGD(net.parameters(), lr=0.03, momentum=0.9)

logdir = tempfile.mkdtemp()
# default `log_dir` is "runs" - we'll be more specific here
writer = SummaryWriter(os.path.join(logdir, 'fashion_mnist_experiment_1'))

# get some random training images
dataiter = iter(trainloader)
images, labels = next(dataiter)
print(images.shape, labels)

writer.add_graph(net, images)
writer.close()


# helper function
def select_n_random(data, labels, n=100):
    '''
    Selects n random datapoints and their corresponding labels from a dataset
    '''
    assert len(data) == len(labels)

    perm = torch.randperm(len(data))
    return data[perm][:n], labels[perm][:n]


# select random images and their target indices
images, labels = select_n_random(trainset.data, torch.from_numpy(trainset.targets))

# get the class labels for each image
class_labels = [classes[lab] for lab in labels]

# log embeddings
features = images.view(-1, 28 * 28)
writer.add_embedding(features,
                     metadata=class_labels,
                     label_img=images)
writer.close()
print("embedding", tuple(features.shape), len(class_labels))

running_loss = 0.0
for epoch in range(1):  # loop over the dataset multiple times

    for i, data in enumerate(trainloader, 0):

        # get the inputs; data is a list of [inputs, labels]
        inputs, labels = data

        # zero the parameter gradients
        optimizer.zero_grad()

        # forward + backward + optimize
        outputs = net(inputs)
        loss = criterion(outputs, labels)
        loss.backward()
        optimizer.step()

        running_loss += loss.item()
        if i % 25 == 24:    # every 25 mini-batches...

            # ...log the running loss
            writer.add_scalar('training loss',
                              running_loss / 25,
                              epoch * len(trainloader) + i)
            print(f'[{epoch + 1}, {i + 1:5d}] loss: {running_loss / 25:.3f}')
            running_loss = 0.0
    for name, param in net.named_parameters():
        writer.add_histogram(name, param, epoch)
print('Finished Training')

# 1. gets the probability predictions in a test_size x num_classes Tensor
# 2. gets the preds in a test_size Tensor
# takes ~10 seconds to run
class_probs = []
class_label = []
with torch.no_grad():
    for data in testloader:
        images, labels = data
        output = net(images)
        class_probs_batch = [F.softmax(el, dim=0) for el in output]

        class_probs.append(class_probs_batch)
        class_label.append(labels)

test_probs = torch.cat([torch.stack(batch) for batch in class_probs])
test_label = torch.cat(class_label)
print(test_probs.shape, test_label.shape, test_probs.sum(1).allclose(torch.ones(200)))


# helper function
def add_pr_curve_tensorboard(class_index, test_probs, test_label, global_step=0):
    '''
    Takes in a "class_index" from 0 to 9 and plots the corresponding
    precision-recall curve
    '''
    tensorboard_truth = test_label == class_index
    tensorboard_probs = test_probs[:, class_index]

    writer.add_pr_curve(classes[class_index],
                        tensorboard_truth,
                        tensorboard_probs,
                        global_step=global_step)
    writer.close()


# plot all the pr curves
for i in range(len(classes)):
    add_pr_curve_tensorboard(i, test_probs, test_label)

accuracy = (test_probs.argmax(1) == test_label).float().mean().item()
print(f"test accuracy {accuracy:.2f}")
event_files = [f for _, _, files in os.walk(logdir) for f in files if "tfevents" in f]
print("event files written:", len(event_files) > 0)

# ---- PyTorch Profiler recipe
model = nn.Sequential(nn.Conv2d(3, 16, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                      nn.Flatten(), nn.Linear(16 * 16 * 16, 10))
inputs = torch.randn(5, 3, 32, 32)

with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
    with record_function("model_inference"):
        model(inputs)

table = prof.key_averages().table(sort_by="cpu_time_total", row_limit=10)
header = table.splitlines()[1]
print(" ".join(header.split()))
print("model_inference" in table, "Self CPU time total" in table)

table = prof.key_averages(group_by_input_shape=True).table(sort_by="cpu_time_total",
                                                           row_limit=10)
print(" ".join(table.splitlines()[1].split()))

with profile(activities=[ProfilerActivity.CPU],
             profile_memory=True, record_shapes=True) as prof:
    model(inputs)

table = prof.key_averages().table(sort_by="self_cpu_memory_usage", row_limit=10)
print(" ".join(table.splitlines()[1].split()))

trace = os.path.join(logdir, "trace.json")
with profile(activities=[ProfilerActivity.CPU]) as prof:
    model(inputs)
prof.export_chrome_trace(trace)
print("trace exported:", os.path.getsize(trace) > 0)

my_schedule = torch.profiler.schedule(
    skip_first=1,
    wait=1,
    warmup=1,
    active=2,
    repeat=1)
steps_seen = []


def trace_handler(p):
    steps_seen.append(p.step_num)


with profile(
    activities=[ProfilerActivity.CPU],
    schedule=my_schedule,
    on_trace_ready=trace_handler
) as p:
    for idx in range(8):
        model(inputs)
        p.step()
print("trace_handler called at steps", steps_seen)
