"""Mixture-of-experts decoder layers as Hugging Face's modeling_mixtral.py / modeling_qwen2_moe.py
and DeepSeek-V3's reference model write them: a float32 router softmax, topk and renormalised
weights, a one_hot expert mask permuted to (expert, k, token), torch.where(expert_mask[e]) and
index_add_ of the weighted expert outputs; DeepSeek's sigmoid router with a correction bias,
group-limited top-k (scatter_ of a group mask, masked_fill), sorted-token dispatch (argsort,
bincount, split, new_x[idxs] = outs) and shared experts; Qwen2-MoE's sigmoid-gated shared
expert; the Switch/Mixtral load-balancing loss with an attention mask; trained a few steps,
then run in bfloat16."""
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn


@dataclass
class MoEConfig:
    hidden_size: int = 16
    intermediate_size: int = 24
    moe_intermediate_size: int = 12
    num_local_experts: int = 4
    num_experts_per_tok: int = 2
    n_routed_experts: int = 8
    n_group: int = 4
    topk_group: int = 2
    n_shared_experts: int = 1
    routed_scaling_factor: float = 2.5
    norm_topk_prob: bool = True
    router_jitter_noise: float = 0.0
    router_aux_loss_coef: float = 0.02
    vocab_size: int = 20


class MixtralBlockSparseTop2MLP(nn.Module):
    def __init__(self, config: MoEConfig, intermediate_size=None):
        super().__init__()
        self.ffn_dim = intermediate_size or config.intermediate_size
        self.hidden_dim = config.hidden_size
        self.w1 = nn.Linear(self.hidden_dim, self.ffn_dim, bias=False)
        self.w2 = nn.Linear(self.ffn_dim, self.hidden_dim, bias=False)
        self.w3 = nn.Linear(self.hidden_dim, self.ffn_dim, bias=False)
        self.act_fn = nn.SiLU()

    def forward(self, hidden_states):
        current_hidden_states = self.act_fn(self.w1(hidden_states)) * self.w3(hidden_states)
        return self.w2(current_hidden_states)


class MixtralSparseMoeBlock(nn.Module):
    def __init__(self, config: MoEConfig):
        super().__init__()
        self.hidden_dim = config.hidden_size
        self.ffn_dim = config.intermediate_size
        self.num_experts = config.num_local_experts
        self.top_k = config.num_experts_per_tok
        self.gate = nn.Linear(self.hidden_dim, self.num_experts, bias=False)
        self.experts = nn.ModuleList([MixtralBlockSparseTop2MLP(config)
                                      for _ in range(self.num_experts)])
        self.jitter_noise = config.router_jitter_noise

    def forward(self, hidden_states: torch.Tensor):
        batch_size, sequence_length, hidden_dim = hidden_states.shape
        if self.training and self.jitter_noise > 0:
            hidden_states *= torch.empty_like(hidden_states).uniform_(
                1.0 - self.jitter_noise, 1.0 + self.jitter_noise)
        hidden_states = hidden_states.view(-1, hidden_dim)
        # router_logits: (batch * sequence_length, n_experts)
        router_logits = self.gate(hidden_states)

        routing_weights = F.softmax(router_logits, dim=1, dtype=torch.float)
        routing_weights, selected_experts = torch.topk(routing_weights, self.top_k, dim=-1)
        routing_weights /= routing_weights.sum(dim=-1, keepdim=True)
        # we cast back to the input dtype
        routing_weights = routing_weights.to(hidden_states.dtype)

        final_hidden_states = torch.zeros((batch_size * sequence_length, hidden_dim),
                                          dtype=hidden_states.dtype,
                                          device=hidden_states.device)
        # One hot encode the selected experts to create an expert mask
        expert_mask = torch.nn.functional.one_hot(selected_experts,
                                                  num_classes=self.num_experts).permute(2, 1, 0)
        expert_hit = torch.greater(expert_mask.sum(dim=(-1, -2)), 0).nonzero()
        for expert_idx in expert_hit:
            expert_layer = self.experts[expert_idx]
            idx, top_x = torch.where(expert_mask[expert_idx].squeeze(0))
            # Index the correct hidden states and compute the expert hidden state for
            # the current expert.
            current_state = hidden_states[None, top_x].reshape(-1, hidden_dim)
            current_hidden_states = expert_layer(current_state) * \
                routing_weights[top_x, idx, None]
            final_hidden_states.index_add_(0, top_x,
                                           current_hidden_states.to(hidden_states.dtype))
        final_hidden_states = final_hidden_states.reshape(batch_size, sequence_length,
                                                          hidden_dim)
        return final_hidden_states, router_logits


class DeepseekGate(nn.Module):
    def __init__(self, config: MoEConfig):
        super().__init__()
        self.topk = config.num_experts_per_tok
        self.n_groups = config.n_group
        self.topk_groups = config.topk_group
        self.route_scale = config.routed_scaling_factor
        self.weight = nn.Parameter(torch.empty(config.n_routed_experts, config.hidden_size))
        self.bias = nn.Parameter(torch.zeros(config.n_routed_experts, dtype=torch.float32),
                                 requires_grad=False)
        nn.init.normal_(self.weight, std=0.2)

    def forward(self, x: torch.Tensor):
        scores = F.linear(x, self.weight)
        scores = scores.sigmoid()
        original_scores = scores
        scores = scores + self.bias
        if self.n_groups > 1:
            scores = scores.view(x.size(0), self.n_groups, -1)
            group_scores = scores.topk(2, dim=-1)[0].sum(dim=-1)
            indices = group_scores.topk(self.topk_groups, dim=-1)[1]
            mask = scores.new_ones(x.size(0), self.n_groups, dtype=bool).scatter_(1, indices,
                                                                                 False)
            scores = scores.masked_fill_(mask.unsqueeze(-1), float("-inf")).flatten(1)
        indices = torch.topk(scores, self.topk, dim=-1)[1]
        weights = original_scores.gather(1, indices)
        weights /= weights.sum(dim=-1, keepdim=True)
        weights *= self.route_scale
        return weights.type_as(x), indices


class DeepseekMoE(nn.Module):
    def __init__(self, config: MoEConfig):
        super().__init__()
        self.n_routed_experts = config.n_routed_experts
        self.gate = DeepseekGate(config)
        self.experts = nn.ModuleList([MixtralBlockSparseTop2MLP(config,
                                                                config.moe_intermediate_size)
                                      for _ in range(config.n_routed_experts)])
        self.shared_experts = MixtralBlockSparseTop2MLP(
            config, config.moe_intermediate_size * config.n_shared_experts)

    def moe_infer(self, x, topk_ids, topk_weight):
        cnts = topk_ids.new_zeros((topk_ids.shape[0], len(self.experts)))
        cnts.scatter_(1, topk_ids, 1)
        tokens_per_expert = cnts.sum(dim=0)
        idxs = topk_ids.view(-1).argsort(stable=True)
        sorted_tokens = x[idxs // topk_ids.shape[1]]
        tokens_per_expert = tokens_per_expert.cpu().numpy()
        outputs = []
        start_idx = 0
        for i, num_tokens in enumerate(tokens_per_expert):
            end_idx = start_idx + num_tokens
            if num_tokens == 0:
                continue
            expert = self.experts[i]
            tokens_for_this_expert = sorted_tokens[start_idx:end_idx]
            expert_out = expert(tokens_for_this_expert)
            outputs.append(expert_out)
            start_idx = end_idx
        outs = torch.cat(outputs, dim=0) if len(outputs) else sorted_tokens.new_empty(0)
        new_x = torch.empty_like(outs)
        new_x[idxs] = outs
        final_out = (new_x.view(*topk_ids.shape, -1).type(topk_weight.dtype)
                     .mul_(topk_weight.unsqueeze(dim=-1)).sum(dim=1).type(new_x.dtype))
        return final_out

    def forward(self, hidden_states):
        identity = hidden_states
        orig_shape = hidden_states.shape
        x = hidden_states.view(-1, hidden_states.shape[-1])
        topk_weight, topk_idx = self.gate(x)
        y = self.moe_infer(x, topk_idx, topk_weight).view(*orig_shape)
        # the reference model's per-expert loop: bincount and torch.where
        counts = torch.bincount(topk_idx.flatten(), minlength=self.n_routed_experts).tolist()
        z = torch.zeros_like(x)
        for i in range(self.n_routed_experts):
            if counts[i] == 0:
                continue
            idx, top = torch.where(topk_idx == i)
            z[idx] += self.experts[i](x[idx]) * topk_weight[idx, top, None]
        y = y + self.shared_experts(identity)
        return y, z.view(*orig_shape) + self.shared_experts(identity), topk_idx


class Qwen2MoeSharedExpertGate(nn.Module):
    def __init__(self, config: MoEConfig):
        super().__init__()
        self.sparse = MixtralSparseMoeBlock(config)
        self.shared_expert = MixtralBlockSparseTop2MLP(config)
        self.shared_expert_gate = nn.Linear(config.hidden_size, 1, bias=False)

    def forward(self, hidden_states):
        out, router_logits = self.sparse(hidden_states)
        shared = self.shared_expert(hidden_states)
        shared = F.sigmoid(self.shared_expert_gate(hidden_states)) * shared
        return out + shared, router_logits


def load_balancing_loss_func(gate_logits, num_experts, top_k=2, attention_mask=None):
    compute_device = gate_logits[0].device
    concatenated_gate_logits = torch.cat([layer_gate.to(compute_device)
                                          for layer_gate in gate_logits], dim=0)
    routing_weights = torch.nn.functional.softmax(concatenated_gate_logits, dim=-1)
    _, selected_experts = torch.topk(routing_weights, top_k, dim=-1)
    expert_mask = torch.nn.functional.one_hot(selected_experts, num_experts)
    if attention_mask is None:
        # Compute the percentage of tokens routed to each experts
        tokens_per_expert = torch.mean(expert_mask.float(), dim=0)
        # Compute the average probability of routing to these experts
        router_prob_per_expert = torch.mean(routing_weights, dim=0)
    else:
        batch_size, sequence_length = attention_mask.shape
        num_hidden_layers = concatenated_gate_logits.shape[0] // (batch_size * sequence_length)
        # Compute the mask that masks all padding tokens as 0 with the same shape of
        # expert_mask
        expert_attention_mask = (
            attention_mask[None, :, :, None, None]
            .expand((num_hidden_layers, batch_size, sequence_length, top_k, num_experts))
            .reshape(-1, top_k, num_experts)
            .to(compute_device))
        tokens_per_expert = torch.sum(expert_mask.float() * expert_attention_mask, dim=0) / \
            torch.sum(expert_attention_mask, dim=0)
        router_per_expert_attention_mask = (
            attention_mask[None, :, :, None]
            .expand((num_hidden_layers, batch_size, sequence_length, num_experts))
            .reshape(-1, num_experts)
            .to(compute_device))
        router_prob_per_expert = torch.sum(routing_weights * router_per_expert_attention_mask,
                                           dim=0) / \
            torch.sum(router_per_expert_attention_mask, dim=0)
    overall_loss = torch.sum(tokens_per_expert * router_prob_per_expert.unsqueeze(0))
    return overall_loss * num_experts


class TinyMoELM(nn.Module):
    def __init__(self, config: MoEConfig):
        super().__init__()
        self.config = config
        self.embed = nn.Embedding(config.vocab_size, config.hidden_size)
        self.mixtral = MixtralSparseMoeBlock(config)
        self.qwen = Qwen2MoeSharedExpertGate(config)
        self.deepseek = DeepseekMoE(config)
        self.norm = nn.RMSNorm(config.hidden_size, eps=1e-6)
        self.head = nn.Linear(config.hidden_size, config.vocab_size, bias=False)

    def forward(self, input_ids, attention_mask=None, labels=None):
        h = self.embed(input_ids)
        m, logits1 = self.mixtral(h)
        h = h + m
        q, logits2 = self.qwen(h)
        h = h + q
        d, _, _ = self.deepseek(h)
        h = h + d
        logits = self.head(self.norm(h))
        aux = load_balancing_loss_func((logits1, logits2), self.config.num_local_experts,
                                       self.config.num_experts_per_tok, attention_mask)
        loss = None
        if labels is not None:
            loss = F.cross_entropy(logits.view(-1, logits.size(-1)), labels.reshape(-1))
            loss = loss + self.config.router_aux_loss_coef * aux
        return logits, loss, aux


def fmt(t, n=6):
    return " ".join(f"{v:.4f}" for v in t.flatten()[:n].float().tolist())


def main():
    torch.manual_seed(0)
    config = MoEConfig()
    model = TinyMoELM(config)
    print(model.mixtral)
    print(model.deepseek.gate.bias.requires_grad, model.deepseek.gate.weight.shape)
    print("parameters", sum(p.numel() for p in model.parameters()),
          "trainable", sum(p.numel() for p in model.parameters() if p.requires_grad))

    x = torch.randn(2, 5, config.hidden_size)
    with torch.no_grad():
        out, router_logits = model.mixtral(x)
        print("mixtral out", tuple(out.shape), fmt(out[0, 0]),
              "router", tuple(router_logits.shape))
        routing = F.softmax(router_logits, dim=1, dtype=torch.float)
        w, sel = torch.topk(routing, 2, dim=-1)
        print("selected", sel.tolist())
        mask = F.one_hot(sel, num_classes=4).permute(2, 1, 0)
        print("expert mask", tuple(mask.shape), mask.stride(), mask.dtype,
              mask.sum(dim=(-1, -2)).tolist())
        hit = torch.greater(mask.sum(dim=(-1, -2)), 0).nonzero()
        print("expert hit", hit.tolist(), hit.shape)
        idx, top_x = torch.where(mask[hit[0]].squeeze(0))
        print("where", idx.tolist(), top_x.tolist())
        y, z, topk_idx = model.deepseek(x)
        print("deepseek topk", topk_idx.tolist())
        print("sorted dispatch == loop", torch.allclose(y, z, atol=1e-5), fmt(y[1, 2]))
        print("counts", torch.bincount(topk_idx.flatten(), minlength=8).tolist(),
              torch.histc(topk_idx.flatten().float(), bins=8, min=0, max=7).tolist())
        am = torch.tensor([[1, 1, 1, 0, 0], [1, 1, 1, 1, 1]])
        print("aux", f"{load_balancing_loss_func((router_logits,), 4, 2).item():.5f}",
              "masked aux", f"{load_balancing_loss_func((router_logits,), 4, 2, am).item():.5f}")

    data = torch.randint(0, config.vocab_size, (4, 9))
    attention_mask = torch.ones(4, 8, dtype=torch.long)
    attention_mask[0, 6:] = 0
    opt = torch.optim.AdamW([p for p in model.parameters() if p.requires_grad], lr=2e-2)
    for step in range(12):
        logits, loss, aux = model(data[:, :-1], attention_mask, labels=data[:, 1:])
        opt.zero_grad()
        loss.backward()
        opt.step()
        with torch.no_grad():  # DeepSeek-V3's auxiliary-loss-free balancing: nudge the bias
            _, idx = model.deepseek.gate(model.embed(data[:, :-1]).view(-1, config.hidden_size))
            load = torch.bincount(idx.flatten(), minlength=config.n_routed_experts).float()
            model.deepseek.gate.bias.add_(1e-3 * torch.sign(load.mean() - load))
        print(f"step {step:2d} loss {loss.item():.4f} aux {aux.item():.4f}")
    print("gate grad", model.mixtral.gate.weight.grad is not None,
          "bias grad", model.deepseek.gate.bias.grad)
    print("bias", fmt(model.deepseek.gate.bias, 8))

    model.eval()
    model_bf16 = model.to(torch.bfloat16)
    with torch.no_grad():
        logits, _, aux = model_bf16(data[:, :-1])
        print("bf16", logits.dtype, tuple(logits.shape), aux.dtype, fmt(logits[0, 0], 4))
        out, rl = model_bf16.mixtral(x.bfloat16())
        print("bf16 mixtral", out.dtype, rl.dtype, fmt(out[0, 0], 4))
        y, z, _ = model_bf16.deepseek(x.bfloat16())
        print("bf16 deepseek", y.dtype, fmt(y[0, 0], 4))


if __name__ == "__main__":
    main()
