"""Distributed data-parallel training: one process per rank, each on its share of the data.

    ember run -n 2 examples/ddp_train.py --epochs 3 --checkpoint /tmp/ddp.pt

Every rank builds the same model; DistributedDataParallel broadcasts rank 0's weights and
averages the gradients over the ranks during backward, so all ranks take the same steps.
DistributedSampler gives each rank its own part of the training set, reshuffled each
epoch. Rank 0 evaluates and saves the checkpoint; the others wait at a barrier.
(PyTorch's classic DDP example, with ember's names and without apex.)
"""

from __future__ import annotations

import argparse

import ember
from ember import distributed as dist
from ember import nn
from ember.nn.parallel import DistributedDataParallel as DDP
from ember.utils.data import DataLoader, DistributedSampler
from ember.utils.data.datasets import Digits


def build_model() -> nn.Module:
    return nn.Sequential(nn.Conv2d(1, 8, 3, padding=1), nn.ReLU(), nn.MaxPool2d(2),
                         nn.Flatten(), nn.Linear(8 * 4 * 4, 64), nn.ReLU(), nn.Linear(64, 10))


def evaluate(model: nn.Module, loader: DataLoader) -> float:
    model.eval()
    correct = total = 0
    with ember.no_grad():
        for x, y in loader:
            correct += int((model(x).argmax(1) == y).sum())
            total += len(y)
    model.train()
    return correct / total


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--batch-size", type=int, default=32, help="per rank")
    parser.add_argument("--lr", type=float, default=0.05)
    parser.add_argument("--checkpoint", default="ddp_checkpoint.pt")
    args = parser.parse_args()

    dist.init_process_group("mpi")
    rank, world = dist.get_rank(), dist.get_world_size()
    ember.manual_seed(rank)  # different initial weights: DDP's broadcast makes them rank 0's

    train = Digits(train=True)
    sampler = DistributedSampler(train, shuffle=True, seed=0)
    loader = DataLoader(train, batch_size=args.batch_size, sampler=sampler)
    model = DDP(build_model())
    optimizer = ember.optim.SGD(model.parameters(), lr=args.lr, momentum=0.9)
    loss_fn = nn.CrossEntropyLoss()

    for epoch in range(args.epochs):
        sampler.set_epoch(epoch)  # a new shuffle each epoch, the same on every rank
        for x, y in loader:
            optimizer.zero_grad()
            loss = loss_fn(model(x), y)
            loss.backward()  # gradients averaged over the ranks here
            optimizer.step()
        if rank == 0:
            print(f"epoch {epoch}: loss {loss.item():.4f} (last batch, rank 0)", flush=True)

    dist.barrier()  # every rank has finished training
    if rank == 0:
        accuracy = evaluate(model.module, DataLoader(Digits(train=False), batch_size=256))
        ember.save(model.module.state_dict(), args.checkpoint)
        print(f"ranks {world}, test accuracy {accuracy:.3f}, checkpoint {args.checkpoint}",
              flush=True)
    dist.barrier()  # no rank exits before the checkpoint is written
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
