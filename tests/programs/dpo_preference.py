"""DPO preference training of a tiny causal LM, as HuggingFace TRL's DPOTrainer and Eric
Mitchell's reference implementation write it: a policy and a frozen reference model
(copy.deepcopy + requires_grad_(False)), per-token log-probs from
torch.gather(logits.log_softmax(-1), 2, labels.unsqueeze(2)).squeeze(2) under a loss mask,
the sigmoid DPO loss -F.logsigmoid(beta * (pi_logratios - ref_logratios)), chosen/rejected
rewards and reward accuracies, AdamW with a get_linear_schedule_with_warmup LambdaLR and
clip_grad_norm_, then torch.no_grad() sampling with temperature, top-p filtering (sort
descending, cumsum, scatter) and torch.multinomial."""
import copy
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.optim.lr_scheduler import LambdaLR

torch.manual_seed(0)
VOCAB, BLOCK, PAD = 16, 12, 0


class CausalSelfAttention(nn.Module):
    def __init__(self, n_embd, n_head):
        super().__init__()
        self.c_attn = nn.Linear(n_embd, 3 * n_embd)
        self.c_proj = nn.Linear(n_embd, n_embd)
        self.n_head = n_head
        self.register_buffer("bias", torch.tril(torch.ones(BLOCK, BLOCK)).view(1, 1, BLOCK, BLOCK))

    def forward(self, x):
        B, T, C = x.size()
        q, k, v = self.c_attn(x).split(C, dim=2)
        q = q.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        k = k.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        v = v.view(B, T, self.n_head, C // self.n_head).transpose(1, 2)
        att = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(k.size(-1)))
        att = att.masked_fill(self.bias[:, :, :T, :T] == 0, float("-inf"))
        att = F.softmax(att, dim=-1)
        y = (att @ v).transpose(1, 2).contiguous().view(B, T, C)
        return self.c_proj(y)


class Block(nn.Module):
    def __init__(self, n_embd, n_head):
        super().__init__()
        self.ln_1 = nn.LayerNorm(n_embd)
        self.attn = CausalSelfAttention(n_embd, n_head)
        self.ln_2 = nn.LayerNorm(n_embd)
        self.mlp = nn.Sequential(nn.Linear(n_embd, 4 * n_embd), nn.GELU(approximate="tanh"),
                                 nn.Linear(4 * n_embd, n_embd))

    def forward(self, x):
        x = x + self.attn(self.ln_1(x))
        return x + self.mlp(self.ln_2(x))


class TinyLM(nn.Module):
    def __init__(self, n_embd=32, n_head=2, n_layer=2):
        super().__init__()
        self.wte = nn.Embedding(VOCAB, n_embd)
        self.wpe = nn.Embedding(BLOCK, n_embd)
        self.h = nn.ModuleList([Block(n_embd, n_head) for _ in range(n_layer)])
        self.ln_f = nn.LayerNorm(n_embd)
        self.lm_head = nn.Linear(n_embd, VOCAB, bias=False)
        self.wte.weight = self.lm_head.weight
        self.apply(self._init_weights)

    def _init_weights(self, module):
        if isinstance(module, nn.Linear):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)
            if module.bias is not None:
                torch.nn.init.zeros_(module.bias)
        elif isinstance(module, nn.Embedding):
            torch.nn.init.normal_(module.weight, mean=0.0, std=0.02)

    def forward(self, idx):
        b, t = idx.size()
        pos = torch.arange(0, t, dtype=torch.long, device=idx.device)
        x = self.wte(idx) + self.wpe(pos)
        for block in self.h:
            x = block(x)
        return self.lm_head(self.ln_f(x))


def get_batch_logps(logits, labels, average_log_prob=False):
    """TRL's / the DPO reference code's per-sequence log-probs of the labels."""
    assert logits.shape[:-1] == labels.shape
    labels = labels[:, 1:].clone()
    logits = logits[:, :-1, :]
    loss_mask = labels != -100
    labels[labels == -100] = 0  # dummy token; masked out below
    per_token_logps = torch.gather(logits.log_softmax(-1), dim=2,
                                   index=labels.unsqueeze(2)).squeeze(2)
    if average_log_prob:
        return (per_token_logps * loss_mask).sum(-1) / loss_mask.sum(-1)
    return (per_token_logps * loss_mask).sum(-1)


def preference_loss(policy_chosen_logps, policy_rejected_logps, reference_chosen_logps,
                    reference_rejected_logps, beta, label_smoothing=0.0):
    pi_logratios = policy_chosen_logps - policy_rejected_logps
    ref_logratios = reference_chosen_logps - reference_rejected_logps
    logits = pi_logratios - ref_logratios
    losses = (-F.logsigmoid(beta * logits) * (1 - label_smoothing)
              - F.logsigmoid(-beta * logits) * label_smoothing)
    chosen_rewards = beta * (policy_chosen_logps - reference_chosen_logps).detach()
    rejected_rewards = beta * (policy_rejected_logps - reference_rejected_logps).detach()
    return losses, chosen_rewards, rejected_rewards


def get_linear_schedule_with_warmup(optimizer, num_warmup_steps, num_training_steps,
                                    last_epoch=-1):
    def lr_lambda(current_step: int):
        if current_step < num_warmup_steps:
            return float(current_step) / float(max(1, num_warmup_steps))
        return max(0.0, float(num_training_steps - current_step)
                   / float(max(1, num_training_steps - num_warmup_steps)))
    return LambdaLR(optimizer, lr_lambda, last_epoch)


def make_pairs(n):
    """Prompts of random tokens; the chosen answer repeats the prompt sorted, the rejected
    one reversed; answers padded to BLOCK with PAD and prompt tokens labelled -100."""
    prompt_len = 4
    prompts = torch.randint(1, VOCAB, (n, prompt_len))
    chosen_ans = prompts.sort(dim=1).values
    rejected_ans = prompts.flip(1)
    def build(ans):
        ids = torch.full((n, BLOCK), PAD, dtype=torch.long)
        ids[:, :prompt_len] = prompts
        ids[:, prompt_len:2 * prompt_len] = ans
        labels = ids.clone()
        labels[:, :prompt_len] = -100
        labels[ids == PAD] = -100
        return ids, labels
    return build(chosen_ans), build(rejected_ans)


def concatenated_forward(model, chosen, rejected):
    ids = torch.cat([chosen[0], rejected[0]], dim=0)
    labels = torch.cat([chosen[1], rejected[1]], dim=0)
    logits = model(ids).to(torch.float32)
    all_logps = get_batch_logps(logits, labels)
    n = chosen[0].shape[0]
    return all_logps[:n], all_logps[n:]


def top_p_filter(logits, top_p=0.9, filter_value=-float("Inf")):
    sorted_logits, sorted_indices = torch.sort(logits, descending=True)
    cumulative_probs = torch.cumsum(F.softmax(sorted_logits, dim=-1), dim=-1)
    sorted_indices_to_remove = cumulative_probs > top_p
    sorted_indices_to_remove[..., 1:] = sorted_indices_to_remove[..., :-1].clone()
    sorted_indices_to_remove[..., 0] = 0
    indices_to_remove = sorted_indices_to_remove.scatter(1, sorted_indices,
                                                         sorted_indices_to_remove)
    return logits.masked_fill(indices_to_remove, filter_value)


@torch.no_grad()
def generate(model, idx, max_new_tokens, temperature=1.0, top_p=0.9):
    for _ in range(max_new_tokens):
        logits = model(idx[:, -BLOCK:])[:, -1, :] / temperature
        logits = top_p_filter(logits, top_p)
        probs = F.softmax(logits, dim=-1)
        idx_next = torch.multinomial(probs, num_samples=1)
        idx = torch.cat((idx, idx_next), dim=1)
    return idx


policy = TinyLM()
print(policy)
print("parameters", sum(p.numel() for p in policy.parameters()))
print("tied", policy.wte.weight is policy.lm_head.weight)
reference = copy.deepcopy(policy)
reference.requires_grad_(False)
reference.eval()
print("reference frozen", all(not p.requires_grad for p in reference.parameters()),
      "policy trains", all(p.requires_grad for p in policy.parameters()))
print("deepcopy shares", reference.wte.weight is policy.wte.weight,
      "ref tied", reference.wte.weight is reference.lm_head.weight)

# the DPO pieces on fixed numbers
fixed = torch.tensor([[[2.0, 0.5, -1.0], [0.1, 0.2, 0.3], [1.0, -1.0, 0.0]]])
lab = torch.tensor([[-100, 2, 0]])
print("batch logps", get_batch_logps(fixed, lab), get_batch_logps(fixed, lab, True))
pl = torch.tensor([-3.0, -2.0])
losses, cr, rr = preference_loss(pl, torch.tensor([-4.0, -1.0]), torch.tensor([-3.5, -2.0]),
                                 torch.tensor([-3.5, -1.5]), beta=0.1, label_smoothing=0.1)
print("losses", losses, "rewards", cr, rr, "acc", (cr > rr).float())
print("logsigmoid", F.logsigmoid(torch.tensor([-100.0, -1.0, 0.0, 30.0])))
sched_lambda = [round(get_linear_schedule_with_warmup(
    torch.optim.SGD([nn.Parameter(torch.zeros(1))], lr=1.0), 2, 10).lr_lambdas[0](s), 4)
    for s in range(0, 11, 2)]
print("schedule", sched_lambda)
filt = top_p_filter(torch.tensor([[1.0, 3.0, 2.0, 0.5], [0.0, 0.0, 0.0, 5.0]]), 0.8)
print("top_p", filt)

chosen, rejected = make_pairs(16)
print("chosen ids", chosen[0][:2])
print("chosen labels", chosen[1][:2])

steps, beta = 20, 0.1
optimizer = torch.optim.AdamW(policy.parameters(), lr=3e-3, weight_decay=0.0)
scheduler = get_linear_schedule_with_warmup(optimizer, 3, steps)
for step in range(steps):
    policy.train()
    pc, pr = concatenated_forward(policy, chosen, rejected)
    with torch.no_grad():
        rc, rr_ = concatenated_forward(reference, chosen, rejected)
    losses, chosen_rewards, rejected_rewards = preference_loss(pc, pr, rc, rr_, beta)
    loss = losses.mean()
    reward_accuracies = (chosen_rewards > rejected_rewards).float()
    optimizer.zero_grad(set_to_none=True)
    loss.backward()
    grad_norm = torch.nn.utils.clip_grad_norm_(policy.parameters(), 1.0)
    optimizer.step()
    scheduler.step()
    if step % 5 == 0 or step == steps - 1:
        print(f"step {step:3d} lr {scheduler.get_last_lr()[0]:.6f} loss {loss.item():.4f} "
              f"margin {(chosen_rewards - rejected_rewards).mean().item():.4f} "
              f"acc {reward_accuracies.mean().item():.3f} grad_norm {grad_norm.item():.3f}")

print("reference unchanged", all(p.grad is None for p in reference.parameters()))
print("loss grad_fn", loss.grad_fn.__class__.__name__, losses.shape, losses.dtype)
policy.eval()
prompt = chosen[0][:2, :4]
out = generate(policy, prompt, 4, temperature=0.7, top_p=0.9)
print("generated", out.shape, out.dtype, bool((out[:, :4] == prompt).all()))
with torch.no_grad():
    pc, pr = concatenated_forward(policy, chosen, rejected)
    rc, rr_ = concatenated_forward(reference, chosen, rejected)
print("final accuracy", ((pc - rc) > (pr - rr_)).float().mean().item() > 0.5)
