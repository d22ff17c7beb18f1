"""A sparsely-gated mixture-of-experts layer (Shazeer et al.; in the style of the
Switch/Mixtral reference implementations): top-k gating with torch.topk, softmax over the
k chosen logits, one_hot dispatch masks, a load-balancing auxiliary loss with torch.einsum,
and expert outputs combined with index_add_. Trained on a synthetic piecewise regression."""
import argparse

import torch
import torch.nn as nn
import torch.nn.functional as F

parser = argparse.ArgumentParser()
parser.add_argument('--num_experts', type=int, default=4)
parser.add_argument('--top_k', type=int, default=2)
parser.add_argument('--steps', type=int, default=100)
parser.add_argument('--aux_loss_coef', type=float, default=0.01)
args = parser.parse_args()

torch.manual_seed(1337)
device = "cuda" if torch.cuda.is_available() else "cpu"


class Expert(nn.Module):
    def __init__(self, dim, hidden):
        super().__init__()
        self.w1 = nn.Linear(dim, hidden, bias=False)
        self.w2 = nn.Linear(hidden, dim, bias=False)
        self.w3 = nn.Linear(dim, hidden, bias=False)

    def forward(self, x):
        return self.w2(F.silu(self.w1(x)) * self.w3(x))


class MoE(nn.Module):
    def __init__(self, dim, hidden, num_experts, top_k):
        super().__init__()
        self.num_experts = num_experts
        self.top_k = top_k
        self.gate = nn.Linear(dim, num_experts, bias=False)
        self.experts = nn.ModuleList([Expert(dim, hidden) for _ in range(num_experts)])

    def forward(self, hidden_states):
        batch_size, sequence_length, hidden_dim = hidden_states.shape
        hidden_states = hidden_states.view(-1, hidden_dim)
        router_logits = self.gate(hidden_states)
        routing_weights = F.softmax(router_logits, dim=1, dtype=torch.float)
        routing_weights, selected_experts = torch.topk(routing_weights, self.top_k, dim=-1)
        routing_weights /= routing_weights.sum(dim=-1, keepdim=True)
        routing_weights = routing_weights.to(hidden_states.dtype)

        final_hidden_states = torch.zeros(
            (batch_size * sequence_length, hidden_dim), dtype=hidden_states.dtype,
            device=hidden_states.device)
        expert_mask = torch.nn.functional.one_hot(
            selected_experts, num_classes=self.num_experts).permute(2, 1, 0)
        for expert_idx in range(self.num_experts):
            expert_layer = self.experts[expert_idx]
            idx, top_x = torch.where(expert_mask[expert_idx])
            if top_x.shape[0] == 0:
                continue
            current_state = hidden_states[None, top_x].reshape(-1, hidden_dim)
            current_hidden_states = expert_layer(current_state) * routing_weights[top_x, idx, None]
            final_hidden_states.index_add_(0, top_x, current_hidden_states.to(hidden_states.dtype))
        final_hidden_states = final_hidden_states.reshape(batch_size, sequence_length, hidden_dim)
        return final_hidden_states, router_logits


def load_balancing_loss_func(gate_logits, num_experts, top_k):
    routing_weights = torch.nn.functional.softmax(gate_logits, dim=-1)
    _, selected_experts = torch.topk(routing_weights, top_k, dim=-1)
    expert_mask = torch.nn.functional.one_hot(selected_experts, num_experts)
    tokens_per_expert = torch.mean(expert_mask.float(), dim=0)
    router_prob_per_expert = torch.mean(routing_weights, dim=0)
    overall_loss = torch.sum(tokens_per_expert * router_prob_per_expert.unsqueeze(0))
    return overall_loss * num_experts


class Model(nn.Module):
    def __init__(self, dim=16, hidden=32):
        super().__init__()
        self.inp = nn.Linear(4, dim)
        self.norm = nn.LayerNorm(dim)
        self.moe = MoE(dim, hidden, args.num_experts, args.top_k)
        self.out = nn.Linear(dim, 1)

    def forward(self, x):
        h = self.inp(x)
        m, logits = self.moe(self.norm(h))
        return self.out(h + m).squeeze(-1), logits


def make_batch(n=32, seq=8):
    x = torch.randn(n, seq, 4)
    # the target is a different function in each quadrant of (x0, x1)
    region = (x[..., 0] > 0).long() * 2 + (x[..., 1] > 0).long()
    coeffs = torch.tensor([[1., -2., .5, 0.], [0., 1., 1., -1.], [-1., 0., 2., .5], [.5, .5, -1., 1.]])
    y = torch.einsum('bsd,bsd->bs', x, coeffs[region])
    return x.to(device), y.to(device)


model = Model().to(device)
print(model)
n_params = sum(p.numel() for p in model.parameters())
print(f"number of parameters: {n_params}")
optimizer = torch.optim.AdamW(model.parameters(), lr=3e-3, weight_decay=0.01)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, step_size=50, gamma=0.5)

for step in range(args.steps):
    model.train()
    x, y = make_batch()
    pred, logits = model(x)
    mse = F.mse_loss(pred, y)
    aux = load_balancing_loss_func(logits, args.num_experts, args.top_k)
    loss = mse + args.aux_loss_coef * aux
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    optimizer.step()
    scheduler.step()
    if step % 25 == 0 or step == args.steps - 1:
        print(f"step {step:3d} loss {mse.item():.4f} aux {aux.item():.4f} lr {scheduler.get_last_lr()[0]:.2e}")

model.eval()
with torch.no_grad():
    x, y = make_batch(64)
    pred, logits = model(x)
    _, chosen = torch.topk(logits, args.top_k, dim=-1)
    counts = torch.bincount(chosen.flatten(), minlength=args.num_experts)
    print("tokens per expert", counts.sum().item(), counts.shape)
    print(f"eval mse {F.mse_loss(pred, y).item():.4f}")
