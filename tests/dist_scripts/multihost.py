"""One rank per network namespace: each says which namespace it is in, and they
all-reduce 1 MiB across the veth link between them."""

import os

import numpy as np

import ember
import ember.distributed as dist

dist.init_process_group("mpi")
rank, size = dist.get_rank(), dist.get_world_size()
t = ember.full((262144,), float(rank + 1))  # 1 MiB of float32
dist.all_reduce(t)
assert np.all(t.numpy() == sum(range(1, size + 1))), t
names = [None] * size
dist.all_gather_object(names, os.readlink("/proc/self/ns/net"))
os.write(1, f"rank {rank} netns {names[rank]} master {os.environ['MASTER_ADDR']} "
            f"all {names} ok\n".encode())
