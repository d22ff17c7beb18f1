"""torch.distributed.checkpoint in one process: the FQN-keyed model and optimizer state
dicts, save and in-place load (tensors and values), a missing key's CheckpointException,
the Hugging Face safetensors storage."""
import os
import sys
import warnings

import torch
import torch.distributed.checkpoint as dcp
import torch.nn as nn
from torch.distributed.checkpoint.hf_storage import (
    HuggingFaceStorageReader,
    HuggingFaceStorageWriter,
)
from torch.distributed.checkpoint.state_dict import (
    StateDictOptions,
    get_model_state_dict,
    get_optimizer_state_dict,
    get_state_dict,
    set_state_dict,
)

torch.manual_seed(0)
m = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
opt = torch.optim.Adam(m.parameters())
m(torch.randn(4, 2)).sum().backward()
opt.step()
osd = get_optimizer_state_dict(m, opt)
print({k: (list(v.keys()) if isinstance(v, dict) else v) for k, v in osd.items()})
print(StateDictOptions())
d = sys.argv[1]
with warnings.catch_warnings(record=True) as w:
    warnings.simplefilter("always")
    md = dcp.save({"model": m.state_dict(), "optim": osd, "step": 3},
                  checkpoint_id=os.path.join(d, "ck"))
    print([str(x.message) for x in w])
print(type(md).__name__, sorted(md.state_dict_metadata)[:4])
print(sorted(os.listdir(os.path.join(d, "ck"))))
m2 = nn.Sequential(nn.Linear(2, 3), nn.ReLU(), nn.Linear(3, 1))
opt2 = torch.optim.Adam(m2.parameters())
msd, osd2 = get_state_dict(m2, opt2)
sd = {"model": msd, "optim": get_optimizer_state_dict(m2, opt2), "step": 0}
print(sd["optim"])
sd = {"model": get_model_state_dict(m2), "step": 0}
dcp.load(sd, checkpoint_id=os.path.join(d, "ck"), no_dist=True)
set_state_dict(m2, opt2, model_state_dict=sd["model"], optim_state_dict=osd)
print(sd["step"], all(torch.equal(a, b) for a, b in zip(m.state_dict().values(),
                                                       m2.state_dict().values())))
print(opt2.state_dict()["state"][0]["exp_avg"].tolist()
      == opt.state_dict()["state"][0]["exp_avg"].tolist())
try:
    dcp.load({"nope": torch.zeros(2)}, checkpoint_id=os.path.join(d, "ck"), no_dist=True)
except BaseException as e:  # (a BaseException, as PyTorch's)
    print(type(e).__name__, [line for line in str(e).splitlines()
                             if line.startswith(("RuntimeError", "CheckpointException"))])
dcp.save({"a.weight": torch.ones(2), "b": torch.zeros(3)},
         storage_writer=HuggingFaceStorageWriter(os.path.join(d, "hf")), no_dist=True)
print(sorted(os.listdir(os.path.join(d, "hf"))))
s = {"a.weight": torch.zeros(2)}
dcp.load(s, storage_reader=HuggingFaceStorageReader(os.path.join(d, "hf")), no_dist=True)
print(s)
