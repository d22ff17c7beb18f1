"""LoRA fine-tuning written by hand, as microsoft/LoRA's loralib/layers.py writes it
(lora_A / lora_B as nn.Parameter of zeros, kaiming_uniform_(a=math.sqrt(5)) on A, zeros on
B, a scaling of lora_alpha / r, merge / unmerge into the frozen base weight on eval/train),
mark_only_lora_as_trainable through named_parameters, the trainable count printed with `:,`
and peft's print_trainable_parameters. A small MLP classifier is pretrained on one task,
then adapted with LoRA to a shifted task; the merged and unmerged models must agree and
the LoRA-only state_dict is saved and loaded back."""
import math
import os
import tempfile

import torch
import torch.nn as nn
import torch.nn.functional as F


class LoRALayer():
    def __init__(self, r: int, lora_alpha: int, lora_dropout: float, merge_weights: bool):
        self.r = r
        self.lora_alpha = lora_alpha
        # Optional dropout
        if lora_dropout > 0.:
            self.lora_dropout = nn.Dropout(p=lora_dropout)
        else:
            self.lora_dropout = lambda x: x
        # Mark the weight as unmerged
        self.merged = False
        self.merge_weights = merge_weights


class Linear(nn.Linear, LoRALayer):
    # LoRA implemented in a dense layer
    def __init__(self, in_features: int, out_features: int, r: int = 0, lora_alpha: int = 1,
                 lora_dropout: float = 0., fan_in_fan_out: bool = False,
                 merge_weights: bool = True, **kwargs):
        nn.Linear.__init__(self, in_features, out_features, **kwargs)
        LoRALayer.__init__(self, r=r, lora_alpha=lora_alpha, lora_dropout=lora_dropout,
                           merge_weights=merge_weights)
        self.fan_in_fan_out = fan_in_fan_out
        # Actual trainable parameters
        if r > 0:
            self.lora_A = nn.Parameter(self.weight.new_zeros((r, in_features)))
            self.lora_B = nn.Parameter(self.weight.new_zeros((out_features, r)))
            self.scaling = self.lora_alpha / self.r
            # Freezing the pre-trained weight matrix
            self.weight.requires_grad = False
        self.reset_parameters()
        if fan_in_fan_out:
            self.weight.data = self.weight.data.transpose(0, 1)

    def reset_parameters(self):
        nn.Linear.reset_parameters(self)
        if hasattr(self, 'lora_A'):
            # initialize B the same way as the default for nn.Linear and A to zero
            # this is different than what is described in the paper but should not affect performance
            nn.init.kaiming_uniform_(self.lora_A, a=math.sqrt(5))
            nn.init.zeros_(self.lora_B)

    def train(self, mode: bool = True):
        def T(w):
            return w.transpose(0, 1) if self.fan_in_fan_out else w
        nn.Linear.train(self, mode)
        if mode:
            if self.merge_weights and self.merged:
                # Make sure that the weights are not merged
                if self.r > 0:
                    self.weight.data -= T(self.lora_B @ self.lora_A) * self.scaling
                self.merged = False
        else:
            if self.merge_weights and not self.merged:
                # Merge the weights and mark it
                if self.r > 0:
                    self.weight.data += T(self.lora_B @ self.lora_A) * self.scaling
                self.merged = True
        return self

    def forward(self, x: torch.Tensor):
        def T(w):
            return w.transpose(0, 1) if self.fan_in_fan_out else w
        if self.r > 0 and not self.merged:
            result = F.linear(x, T(self.weight), bias=self.bias)
            result += (self.lora_dropout(x) @ self.lora_A.transpose(0, 1)
                       @ self.lora_B.transpose(0, 1)) * self.scaling
            return result
        else:
            return F.linear(x, T(self.weight), bias=self.bias)

    def extra_repr(self) -> str:
        return super().extra_repr() + f", r={self.r}, lora_alpha={self.lora_alpha}"


def mark_only_lora_as_trainable(model: nn.Module, bias: str = 'none') -> None:
    for n, p in model.named_parameters():
        if 'lora_' not in n:
            p.requires_grad = False
    if bias == 'none':
        return
    elif bias == 'all':
        for n, p in model.named_parameters():
            if 'bias' in n:
                p.requires_grad = True
    elif bias == 'lora_only':
        for m in model.modules():
            if isinstance(m, LoRALayer) and hasattr(m, 'bias') and m.bias is not None:
                m.bias.requires_grad = True
    else:
        raise NotImplementedError


def lora_state_dict(model: nn.Module, bias: str = 'none'):
    my_state_dict = model.state_dict()
    if bias == 'none':
        return {k: my_state_dict[k] for k in my_state_dict if 'lora_' in k}
    elif bias == 'all':
        return {k: my_state_dict[k] for k in my_state_dict if 'lora_' in k or 'bias' in k}
    raise NotImplementedError


def print_trainable_parameters(model):
    """Prints the number of trainable parameters in the model (peft's PeftModel method)."""
    trainable_params = 0
    all_param = 0
    for _, param in model.named_parameters():
        num_params = param.numel()
        all_param += num_params
        if param.requires_grad:
            trainable_params += num_params
    print(f"trainable params: {trainable_params:,d} || all params: {all_param:,d} "
          f"|| trainable%: {100 * trainable_params / all_param:.4f}")


class MLP(nn.Module):
    def __init__(self, d_in=16, hidden=128, n_classes=4, r=0, lora_alpha=1):
        super().__init__()
        self.fc1 = Linear(d_in, hidden, r=r, lora_alpha=lora_alpha)
        self.fc2 = Linear(hidden, hidden, r=r, lora_alpha=lora_alpha)
        self.head = nn.Linear(hidden, n_classes)

    def forward(self, x):
        return self.head(F.relu(self.fc2(F.relu(self.fc1(x)))))


def make_task(generator, n, proj):
    x = torch.randn(n, 16, generator=generator)
    y = (x @ proj).argmax(dim=1)
    return x, y


def train(model, x, y, steps, lr, tag):
    params = [p for p in model.parameters() if p.requires_grad]
    optimizer = torch.optim.Adam(params, lr=lr)
    model.train()
    for step in range(steps):
        logits = model(x)
        loss = F.cross_entropy(logits, y)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 10 == 0 or step == steps - 1:
            print(f"{tag} step {step:3d} loss {loss.item():.4f}")


@torch.no_grad()
def accuracy(model, x, y):
    model.eval()
    return (model(x).argmax(1) == y).float().mean().item()


def main():
    torch.manual_seed(0)
    g = torch.Generator().manual_seed(0)
    proj_a = torch.randn(16, 4, generator=g)
    proj_b = proj_a + 0.8 * torch.randn(16, 4, generator=g)
    xa, ya = make_task(g, 512, proj_a)
    xb, yb = make_task(g, 512, proj_b)

    base = MLP()
    train(base, xa, ya, 21, 5e-3, "pretrain")
    print(f"pretrained: task A {accuracy(base, xa, ya):.3f} task B {accuracy(base, xb, yb):.3f}")

    model = MLP(r=4, lora_alpha=8)
    print(model)
    missing, unexpected = model.load_state_dict(base.state_dict(), strict=False)
    print("missing:", missing)
    print("unexpected:", unexpected)
    mark_only_lora_as_trainable(model, bias='lora_only')
    model.head.requires_grad_(False)
    trainable = sum(p.numel() for p in model.parameters() if p.requires_grad)
    print(f"trainable parameters: {trainable:,}")
    print_trainable_parameters(model)
    print("lora_A", model.fc1.lora_A.shape, "bound", f"{1 / math.sqrt(16):.4f}",
          "max |A| within:", model.fc1.lora_A.abs().max().item() <= 1 / math.sqrt(16))
    print("lora_B all zero:", bool((model.fc1.lora_B == 0).all()))
    print("frozen:", [n for n, p in model.named_parameters() if not p.requires_grad])

    w_before = model.fc1.weight.detach().clone()
    train(model, xb, yb, 31, 1e-2, "lora")
    print("base weight unchanged by training:", torch.equal(model.fc1.weight, w_before))
    print("base weight has no grad:", model.fc1.weight.grad is None)
    print(f"adapted: task B {accuracy(model, xb, yb):.3f}")

    # merge on eval, unmerge on train
    model.eval()
    print("merged:", model.fc1.merged, model.fc2.merged)
    with torch.no_grad():
        merged_out = model(xb[:8])
    model.train()
    print("unmerged:", model.fc1.merged,
          "weight restored:", torch.allclose(model.fc1.weight, w_before, atol=1e-6))
    with torch.no_grad():
        unmerged_out = model(xb[:8])
    print("merged == unmerged:", torch.allclose(merged_out, unmerged_out, atol=1e-5))

    # save only the LoRA weights, load them into a fresh copy of the base model
    sd = lora_state_dict(model, bias='none')
    print("lora keys:", sorted(sd))
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "lora.pt")
        torch.save(sd, path)
        fresh = MLP(r=4, lora_alpha=8)
        fresh.load_state_dict(base.state_dict(), strict=False)
        fresh.load_state_dict({k: v for k, v in model.state_dict().items() if 'bias' in k},
                              strict=False)
        result = fresh.load_state_dict(torch.load(path), strict=False)
        print("missing after lora load:", len(result.missing_keys),
              "unexpected:", result.unexpected_keys)
    fresh.eval()
    with torch.no_grad():
        print("reloaded adapter agrees:", torch.allclose(fresh(xb[:8]), merged_out, atol=1e-5))


if __name__ == "__main__":
    main()
