"""Temporal Fusion Transformer pieces as pytorch-forecasting's sub_modules.py and the
original google-research TFT port write them: GatedLinearUnit (Linear to 2x then F.glu),
GateAddNorm, GatedResidualNetwork with an optional context vector and a skip projection,
the VariableSelectionNetwork (flattened-input GRN, softmax(dim=-1).unsqueeze(-2) weights,
torch.stack of per-variable GRNs, weighted sum), InterpretableMultiHeadAttention sharing
one value projection across heads and averaging heads, a causal mask from torch.triu,
an LSTM encoder, and the QuantileLoss `torch.max((q - 1) * errors, q * errors)`.
Trained a few steps with Adam and ReduceLROnPlateau, gradient clipping."""
import math
from typing import Dict, List, Tuple

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class TimeDistributedInterpolation(nn.Module):
    def __init__(self, output_size: int, batch_first: bool = False, trainable: bool = False):
        super().__init__()
        self.output_size = output_size
        self.batch_first = batch_first
        self.trainable = trainable
        if self.trainable:
            self.mask = nn.Parameter(torch.zeros(self.output_size, dtype=torch.float32))
            self.gate = nn.Sigmoid()

    def interpolate(self, x):
        upsampled = F.interpolate(x.unsqueeze(1), self.output_size, mode="linear", align_corners=True).squeeze(1)
        if self.trainable:
            upsampled = upsampled * self.gate(self.mask.unsqueeze(0)) * 2.0
        return upsampled

    def forward(self, x):
        if len(x.size()) <= 2:
            return self.interpolate(x)

        # Squash samples and timesteps into a single axis
        x_reshape = x.contiguous().view(-1, x.size(-1))  # (samples * timesteps, input_size)

        y = self.interpolate(x_reshape)

        # We have to reshape Y
        if self.batch_first:
            y = y.contiguous().view(x.size(0), -1, y.size(-1))  # (samples, timesteps, output_size)
        else:
            y = y.view(-1, x.size(1), y.size(-1))  # (timesteps, samples, output_size)

        return y


class GatedLinearUnit(nn.Module):
    """Gated Linear Unit"""

    def __init__(self, input_size: int, hidden_size: int = None, dropout: float = None):
        super().__init__()

        if dropout is not None:
            self.dropout = nn.Dropout(dropout)
        else:
            self.dropout = dropout
        self.hidden_size = hidden_size or input_size
        self.fc = nn.Linear(input_size, self.hidden_size * 2)

        self.init_weights()

    def init_weights(self):
        for n, p in self.named_parameters():
            if "bias" in n:
                torch.nn.init.zeros_(p)
            elif "fc" in n:
                torch.nn.init.xavier_uniform_(p)

    def forward(self, x):
        if self.dropout is not None:
            x = self.dropout(x)
        x = self.fc(x)
        x = F.glu(x, dim=-1)
        return x


class AddNorm(nn.Module):
    def __init__(self, input_size: int, skip_size: int = None, trainable_add: bool = True):
        super().__init__()

        self.input_size = input_size
        self.trainable_add = trainable_add
        self.skip_size = skip_size or input_size

        if self.input_size != self.skip_size:
            self.resample = TimeDistributedInterpolation(self.input_size, batch_first=True, trainable=False)

        if self.trainable_add:
            self.mask = nn.Parameter(torch.zeros(self.input_size, dtype=torch.float))
            self.gate = nn.Sigmoid()
        self.norm = nn.LayerNorm(self.input_size)

    def forward(self, x: torch.Tensor, skip: torch.Tensor):
        if self.input_size != self.skip_size:
            skip = self.resample(skip)

        if self.trainable_add:
            skip = skip * self.gate(self.mask) * 2.0

        output = self.norm(x + skip)
        return output


class GateAddNorm(nn.Module):
    def __init__(
        self,
        input_size: int,
        hidden_size: int = None,
        skip_size: int = None,
        trainable_add: bool = False,
        dropout: float = None,
    ):
        super().__init__()

        self.input_size = input_size
        self.hidden_size = hidden_size or input_size
        self.skip_size = skip_size or self.hidden_size
        self.dropout = dropout

        self.glu = GatedLinearUnit(self.input_size, hidden_size=self.hidden_size, dropout=self.dropout)
        self.add_norm = AddNorm(self.hidden_size, skip_size=self.skip_size, trainable_add=trainable_add)

    def forward(self, x, skip):
        output = self.glu(x)
        output = self.add_norm(output, skip)
        return output


class GatedResidualNetwork(nn.Module):
    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        output_size: int,
        dropout: float = 0.1,
        context_size: int = None,
        residual: bool = False,
    ):
        super().__init__()
        self.input_size = input_size
        self.output_size = output_size
        self.context_size = context_size
        self.hidden_size = hidden_size
        self.dropout = dropout
        self.residual = residual

        if self.input_size != self.output_size and not self.residual:
            residual_size = self.input_size
        else:
            residual_size = self.output_size

        if self.output_size != residual_size:
            self.resample_norm = nn.Linear(residual_size, self.output_size)

        self.fc1 = nn.Linear(self.input_size, self.hidden_size)
        self.elu = nn.ELU()

        if self.context_size is not None:
            self.context = nn.Linear(self.context_size, self.hidden_size, bias=False)

        self.fc2 = nn.Linear(self.hidden_size, self.hidden_size)
        self.init_weights()

        self.gate_norm = GateAddNorm(
            input_size=self.hidden_size,
            skip_size=self.output_size,
            hidden_size=self.output_size,
            dropout=self.dropout,
            trainable_add=False,
        )

    def init_weights(self):
        for name, p in self.named_parameters():
            if "bias" in name:
                torch.nn.init.zeros_(p)
            elif "fc1" in name or "fc2" in name:
                torch.nn.init.kaiming_normal_(p, a=0, mode="fan_in", nonlinearity="leaky_relu")
            elif "context" in name:
                torch.nn.init.xavier_uniform_(p)

    def forward(self, x, context=None, residual=None):
        if residual is None:
            residual = x

        if self.input_size != self.output_size and not self.residual:
            residual = self.resample_norm(residual)

        x = self.fc1(x)
        if context is not None:
            context = self.context(context)
            x = x + context
        x = self.elu(x)
        x = self.fc2(x)
        x = self.gate_norm(x, residual)
        return x


class VariableSelectionNetwork(nn.Module):
    def __init__(
        self,
        input_sizes: Dict[str, int],
        hidden_size: int,
        dropout: float = 0.1,
        context_size: int = None,
    ):
        super().__init__()

        self.hidden_size = hidden_size
        self.input_sizes = input_sizes
        self.dropout = dropout
        self.context_size = context_size

        if self.num_inputs > 1:
            if self.context_size is not None:
                self.flattened_grn = GatedResidualNetwork(
                    self.input_size_total,
                    min(self.hidden_size, self.num_inputs),
                    self.num_inputs,
                    self.dropout,
                    self.context_size,
                    residual=False,
                )
            else:
                self.flattened_grn = GatedResidualNetwork(
                    self.input_size_total,
                    min(self.hidden_size, self.num_inputs),
                    self.num_inputs,
                    self.dropout,
                    residual=False,
                )

        self.single_variable_grns = nn.ModuleDict()
        self.prescalers = nn.ModuleDict()
        for name, input_size in self.input_sizes.items():
            self.single_variable_grns[name] = GatedResidualNetwork(
                input_size,
                min(input_size, self.hidden_size),
                output_size=self.hidden_size,
                dropout=self.dropout,
            )
            self.prescalers[name] = nn.Linear(1, input_size)

        self.softmax = nn.Softmax(dim=-1)

    @property
    def input_size_total(self):
        return sum(size for size in self.input_sizes.values())

    @property
    def num_inputs(self):
        return len(self.input_sizes)

    def forward(self, x: Dict[str, torch.Tensor], context: torch.Tensor = None):
        # transform single variables
        var_outputs = []
        weight_inputs = []
        for name in self.input_sizes.keys():
            # select embedding belonging to a single input
            variable_embedding = x[name]
            variable_embedding = self.prescalers[name](variable_embedding)
            weight_inputs.append(variable_embedding)
            var_outputs.append(self.single_variable_grns[name](variable_embedding))
        var_outputs = torch.stack(var_outputs, dim=-1)

        # calculate variable weights
        flat_embedding = torch.cat(weight_inputs, dim=-1)
        sparse_weights = self.flattened_grn(flat_embedding, context)
        sparse_weights = self.softmax(sparse_weights).unsqueeze(-2)

        outputs = var_outputs * sparse_weights
        outputs = outputs.sum(dim=-1)
        if outputs.ndim == 3:  # -> batch size, time, hidden size, n_variables
            sparse_weights = sparse_weights.squeeze(-2)  # batch, time, n_variables
        return outputs, sparse_weights


class ScaledDotProductAttention(nn.Module):
    def __init__(self, dropout: float = None, scale: bool = True):
        super(ScaledDotProductAttention, self).__init__()
        if dropout is None:
            self.dropout = dropout
        else:
            self.dropout = nn.Dropout(p=dropout)
        self.softmax = nn.Softmax(dim=2)
        self.scale = scale

    def forward(self, q, k, v, mask=None):
        attn = torch.bmm(q, k.permute(0, 2, 1))  # query-key overlap

        if self.scale:
            dimension = torch.as_tensor(k.size(-1), dtype=attn.dtype, device=attn.device).sqrt()
            attn = attn / dimension

        if mask is not None:
            attn = attn.masked_fill(mask, -1e9)
        attn = self.softmax(attn)

        if self.dropout is not None:
            attn = self.dropout(attn)
        output = torch.bmm(attn, v)
        return output, attn


class InterpretableMultiHeadAttention(nn.Module):
    def __init__(self, n_head: int, d_model: int, dropout: float = 0.0):
        super(InterpretableMultiHeadAttention, self).__init__()

        self.n_head = n_head
        self.d_model = d_model
        self.d_k = self.d_q = self.d_v = d_model // n_head
        self.dropout = nn.Dropout(p=dropout)

        self.v_layer = nn.Linear(self.d_model, self.d_v)
        self.q_layers = nn.ModuleList([nn.Linear(self.d_model, self.d_q) for _ in range(self.n_head)])
        self.k_layers = nn.ModuleList([nn.Linear(self.d_model, self.d_k) for _ in range(self.n_head)])
        self.attention = ScaledDotProductAttention()
        self.w_h = nn.Linear(self.d_v, self.d_model, bias=False)

        self.init_weights()

    def init_weights(self):
        for name, p in self.named_parameters():
            if "bias" not in name:
                torch.nn.init.xavier_uniform_(p)
            else:
                torch.nn.init.zeros_(p)

    def forward(self, q, k, v, mask=None) -> Tuple[torch.Tensor, torch.Tensor]:
        heads = []
        attns = []
        vs = self.v_layer(v)
        for i in range(self.n_head):
            qs = self.q_layers[i](q)
            ks = self.k_layers[i](k)
            head, attn = self.attention(qs, ks, vs, mask)
            head_dropout = self.dropout(head)
            heads.append(head_dropout)
            attns.append(attn)

        head = torch.stack(heads, dim=2) if self.n_head > 1 else heads[0]
        attn = torch.stack(attns, dim=2)

        outputs = torch.mean(head, dim=2) if self.n_head > 1 else head
        outputs = self.w_h(outputs)
        outputs = self.dropout(outputs)

        return outputs, attn


class QuantileLoss(nn.Module):
    def __init__(self, quantiles: List[float] = [0.1, 0.5, 0.9]):
        super().__init__()
        self.quantiles = quantiles

    def loss(self, y_pred: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
        # calculate quantile loss
        losses = []
        for i, q in enumerate(self.quantiles):
            errors = target - y_pred[..., i]
            losses.append(torch.max((q - 1) * errors, q * errors).unsqueeze(-1))
        losses = 2 * torch.cat(losses, dim=2)

        return losses

    def forward(self, y_pred, target):
        return self.loss(y_pred, target).mean()


class TinyTFT(nn.Module):
    def __init__(self, variables, hidden=16, heads=2, quantiles=3, dropout=0.1):
        super().__init__()
        self.static_vsn = VariableSelectionNetwork({"store_level": 1, "store_size": 1}, hidden,
                                                   dropout)
        self.static_context_variable_selection = GatedResidualNetwork(hidden, hidden, hidden, dropout)
        self.encoder_vsn = VariableSelectionNetwork({v: 1 for v in variables}, hidden, dropout,
                                                    context_size=hidden)
        self.lstm_encoder = nn.LSTM(hidden, hidden, batch_first=True)
        self.post_lstm_gate = GateAddNorm(hidden, dropout=dropout)
        self.static_enrichment = GatedResidualNetwork(hidden, hidden, hidden, dropout, context_size=hidden)
        self.multihead_attn = InterpretableMultiHeadAttention(heads, hidden, dropout)
        self.post_attn_gate_norm = GateAddNorm(hidden, dropout=dropout, trainable_add=False)
        self.pos_wise_ff = GatedResidualNetwork(hidden, hidden, hidden, dropout)
        self.output_layer = nn.Linear(hidden, quantiles)
        self.variables = variables

    def forward(self, x, static):
        T = x.size(1)
        static_embedding, static_weights = self.static_vsn(
            {"store_level": static[:, 0:1], "store_size": static[:, 1:2]})
        context = self.static_context_variable_selection(static_embedding)
        inputs = {name: x[..., i:i + 1] for i, name in enumerate(self.variables)}
        emb, weights = self.encoder_vsn(inputs, context[:, None].expand(-1, T, -1))
        out, _ = self.lstm_encoder(emb)
        out = self.post_lstm_gate(out, emb)
        enriched = self.static_enrichment(out, context[:, None].expand(-1, T, -1))
        mask = torch.triu(torch.ones(T, T, dtype=torch.bool), diagonal=1)
        attn_out, attn = self.multihead_attn(enriched, enriched, enriched,
                                             mask=mask.unsqueeze(0).expand(x.size(0), -1, -1))
        attn_out = self.post_attn_gate_norm(attn_out, enriched)
        out = self.pos_wise_ff(attn_out)
        return self.output_layer(out), weights, static_weights, attn


def main():
    torch.manual_seed(42)
    glu = GatedLinearUnit(4, 3)
    print(glu)
    print("glu", glu(torch.ones(2, 4)).shape, F.glu(torch.arange(4.).view(1, 4), dim=-1))
    grn = GatedResidualNetwork(5, 8, 6, 0.1, context_size=3)
    print(grn)
    y = grn(torch.randn(2, 7, 5), torch.randn(2, 7, 3))
    print("grn", y.shape, y.mean(-1).abs().max().item() < 1e-5)
    interp = TimeDistributedInterpolation(6, batch_first=True)
    print("interpolate", interp(torch.arange(8.).view(1, 2, 4)))
    ql = QuantileLoss()
    pred = torch.tensor([[[0.0, 1.0, 2.0]], [[1.0, 1.0, 1.0]]])
    target = torch.tensor([[1.5], [0.5]])
    print("quantile losses", ql.loss(pred, target), ql(pred, target))
    print("max", torch.max(torch.tensor([1., -2.]), torch.tensor([0., 3.])))

    variables = ["target", "price", "dow_sin", "dow_cos"]
    rng = np.random.RandomState(7)
    n, T = 64, 12
    t = np.arange(T + 1)[None] + rng.randint(0, 50, size=(n, 1))
    store = rng.randint(0, 4, size=n)
    level = 1.0 + 0.5 * store[:, None]
    price = rng.rand(n, T + 1)
    series = level + np.sin(2 * np.pi * t / 7) - 0.5 * price + 0.05 * rng.randn(n, T + 1)
    feats = np.stack([series[:, :-1], price[:, 1:], np.sin(2 * np.pi * (t[:, 1:]) / 7),
                      np.cos(2 * np.pi * (t[:, 1:]) / 7)], axis=-1).astype(np.float32)
    x = torch.from_numpy(feats)
    yt = torch.from_numpy(series[:, 1:].astype(np.float32))
    onehot = F.one_hot(torch.from_numpy(store), 4)
    print("one_hot", onehot.dtype, onehot[:3].tolist())
    static = torch.stack([torch.from_numpy(store).float() / 3, onehot[:, :2].sum(1).float()], 1)
    print("data", x.shape, yt.shape, static.shape, static.dtype)

    model = TinyTFT(variables)
    print(model.encoder_vsn)
    print("params", sum(p.numel() for p in model.parameters()))
    quantile_loss = QuantileLoss([0.1, 0.5, 0.9])
    optimizer = torch.optim.Adam(model.parameters(), lr=0.01)
    scheduler = torch.optim.lr_scheduler.ReduceLROnPlateau(optimizer, mode="min", factor=0.5,
                                                           patience=1)
    for epoch in range(8):
        model.train()
        perm = torch.randperm(n)
        total = 0.0
        for i in range(0, n, 32):
            idx = perm[i:i + 32]
            pred, weights, sweights, attn = model(x[idx], static[idx])
            loss = quantile_loss(pred, yt[idx])
            optimizer.zero_grad()
            loss.backward()
            nn.utils.clip_grad_norm_(model.parameters(), 0.1)
            optimizer.step()
            total += loss.item() * len(idx)
        scheduler.step(total / n)
        print(f"epoch {epoch} train_loss {total / n:.4f} lr {optimizer.param_groups[0]['lr']:.5f}")
    model.eval()
    with torch.no_grad():
        pred, weights, sweights, attn = model(x, static)
    print("prediction", pred.shape, "weights", weights.shape, "attention", attn.shape)
    print("weights sum to one", torch.allclose(weights.sum(-1), torch.ones(n, T)))
    print("causal", bool((attn[:, 0, :, 1:] == 0).all()), attn[0, 1, 0, :3])
    p50 = pred[..., 1]
    mae = (p50 - yt).abs().mean()
    covered = ((yt >= pred[..., 0]) & (yt <= pred[..., 2])).float().mean()
    print(f"p50 MAE {mae.item():.4f} coverage {covered.item():.3f}")
    importance = weights.mean((0, 1))
    print("variable importance", {v: round(w, 3) for v, w in zip(variables, importance.tolist())})


if __name__ == "__main__":
    main()
