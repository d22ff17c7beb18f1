"""The PyTorch tutorial "Getting Started with Distributed Data Parallel", on the CPU
with the gloo backend: `mp.spawn` over 2 ranks that meet at MASTER_ADDR/MASTER_PORT,
demo_basic (DDP of a ToyModel, one SGD step), demo_checkpoint (rank 0 saves, dist.barrier,
every rank loads with map_location) and a data-parallel training run with a
DistributedSampler (set_epoch each epoch) whose metrics are dist.all_reduce'd. The port
is a free one picked at start (the tutorial's fixed '12355' would clash with another run
on the machine)."""
import argparse
import os
import socket
import tempfile

import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn
import torch.optim as optim
from torch.nn.parallel import DistributedDataParallel as DDP
from torch.utils.data import DataLoader, TensorDataset
from torch.utils.data.distributed import DistributedSampler


def setup(rank, world_size):
    os.environ['MASTER_ADDR'] = 'localhost'
    os.environ['MASTER_PORT'] = os.environ.get('DEMO_PORT', '12355')

    # initialize the process group
    dist.init_process_group("gloo", rank=rank, world_size=world_size)


def cleanup():
    dist.destroy_process_group()


class ToyModel(nn.Module):
    def __init__(self):
        super(ToyModel, self).__init__()
        self.net1 = nn.Linear(10, 10)
        self.relu = nn.ReLU()
        self.net2 = nn.Linear(10, 5)

    def forward(self, x):
        return self.net2(self.relu(self.net1(x)))


def demo_basic(rank, world_size):
    print(f"Running basic DDP example on rank {rank}.", flush=True)
    setup(rank, world_size)

    # create model and wrap it with DDP (CPU: no device_ids)
    torch.manual_seed(rank)  # DDP broadcasts rank 0's parameters at construction
    model = ToyModel()
    ddp_model = DDP(model)

    loss_fn = nn.MSELoss()
    optimizer = optim.SGD(ddp_model.parameters(), lr=0.001)

    optimizer.zero_grad()
    outputs = ddp_model(torch.randn(20, 10))
    labels = torch.randn(20, 5)
    loss_fn(outputs, labels).backward()
    optimizer.step()

    # every rank holds the same parameters after the synchronized step
    flat = torch.cat([p.detach().reshape(-1) for p in ddp_model.parameters()])
    gathered = [torch.zeros_like(flat) for _ in range(world_size)]
    dist.all_gather(gathered, flat)
    if rank == 0:
        print(f"parameters agree across ranks: {all(torch.equal(g, flat) for g in gathered)}",
              flush=True)
    dist.barrier()  # rank 1 prints after rank 0's line

    cleanup()
    print(f"Finished running basic DDP example on rank {rank}.", flush=True)


def demo_checkpoint(rank, world_size):
    print(f"Running DDP checkpoint example on rank {rank}.", flush=True)
    setup(rank, world_size)

    model = ToyModel()
    ddp_model = DDP(model)

    CHECKPOINT_PATH = os.path.join(os.environ.get('DEMO_DIR', tempfile.gettempdir()), "model.checkpoint")
    if rank == 0:
        # All processes should see same parameters as they all start from same
        # random parameters and gradients are synchronized in backward passes.
        # Therefore, saving it in one process is sufficient.
        torch.save(ddp_model.state_dict(), CHECKPOINT_PATH)

    # Use a barrier() to make sure that process 1 loads the model after process
    # 0 saves it.
    dist.barrier()
    # configure map_location properly
    map_location = {'cpu': 'cpu'}
    ddp_model.load_state_dict(
        torch.load(CHECKPOINT_PATH, map_location=map_location, weights_only=True))
    if rank == 1:
        print("loaded keys:", list(ddp_model.state_dict().keys())[:2], flush=True)

    loss_fn = nn.MSELoss()
    optimizer = optim.SGD(ddp_model.parameters(), lr=0.001)

    optimizer.zero_grad()
    outputs = ddp_model(torch.randn(20, 10))
    labels = torch.randn(20, 5)

    loss_fn(outputs, labels).backward()
    optimizer.step()

    # Not necessary to use a dist.barrier() to guard the file deletion below
    # as the AllReduce ops in the backward pass of DDP already served as
    # a synchronization.

    if rank == 0:
        os.remove(CHECKPOINT_PATH)

    cleanup()
    print(f"Finished running DDP checkpoint example on rank {rank}.", flush=True)


def demo_train(rank, world_size, epochs):
    """Data-parallel training: each rank sees its DistributedSampler shard."""
    setup(rank, world_size)
    g = torch.Generator().manual_seed(0)
    x = torch.randn(256, 10, generator=g)
    w = torch.randn(10, 5, generator=g)
    dataset = TensorDataset(x, x @ w + 0.1 * torch.randn(256, 5, generator=g))
    sampler = DistributedSampler(dataset, num_replicas=world_size, rank=rank, shuffle=True, seed=0)
    loader = DataLoader(dataset, batch_size=16, sampler=sampler)

    torch.manual_seed(0)
    ddp_model = DDP(ToyModel())
    optimizer = optim.Adam(ddp_model.parameters(), lr=0.01)
    loss_fn = nn.MSELoss(reduction='sum')
    for epoch in range(epochs):
        sampler.set_epoch(epoch)
        ddp_model.train()
        stats = torch.zeros(2)
        for data, target in loader:
            optimizer.zero_grad()
            loss = loss_fn(ddp_model(data), target)
            loss.backward()
            optimizer.step()
            stats += torch.tensor([loss.item(), float(len(data))])
        dist.all_reduce(stats, op=dist.ReduceOp.SUM)
        if rank == 0:
            print(f"epoch {epoch}: samples {int(stats[1].item())} "
                  f"train loss {stats[0].item() / stats[1].item():.4f}", flush=True)
    cleanup()


def run_demo(demo_fn, world_size, *args):
    mp.spawn(demo_fn,
             args=(world_size, *args),
             nprocs=world_size,
             join=True)


def find_free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(('localhost', 0))
        return s.getsockname()[1]


if __name__ == "__main__":
    parser = argparse.ArgumentParser()
    parser.add_argument('--world-size', type=int, default=2)
    parser.add_argument('--epochs', type=int, default=4)
    args = parser.parse_args()
    os.environ['DEMO_PORT'] = str(find_free_port())
    os.environ['DEMO_DIR'] = os.getcwd()
    print(f"dist available: {dist.is_available()}, world size {args.world_size}")
    run_demo(demo_basic, args.world_size)
    run_demo(demo_checkpoint, args.world_size)
    run_demo(demo_train, args.world_size, args.epochs)
    print("initialized in parent:", dist.is_initialized())
