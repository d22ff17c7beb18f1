"""A Conformer encoder (Gulati et al.; in the style of sooftware/conformer and ESPnet): macaron
half-step feed-forward modules, relative positional multi-head self-attention with Transformer-XL's
`rel_shift` pad/view trick and learned u/v biases, the convolution module (pointwise Conv1d, GLU
over channels, depthwise Conv1d, BatchNorm1d, SiLU, pointwise Conv1d), a key padding mask built
from lengths with arange < lengths[:, None], and a frame classification loss that ignores padded
frames (ignore_index=-100), trained with Adam and a Noam-style warmup LambdaLR."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F
from torch import Tensor


class RelPositionalEncoding(nn.Module):
    def __init__(self, d_model: int = 32, max_len: int = 200) -> None:
        super().__init__()
        self.d_model = d_model
        pe = torch.zeros(max_len, d_model, requires_grad=False)
        position = torch.arange(0, max_len, dtype=torch.float).unsqueeze(1)
        div_term = torch.exp(torch.arange(0, d_model, 2).float() * -(math.log(10000.0) / d_model))
        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)
        pe = pe.unsqueeze(0)
        self.register_buffer('pe', pe)

    def forward(self, length: int) -> Tensor:
        return self.pe[:, :length]


class FeedForwardModule(nn.Module):
    def __init__(self, encoder_dim: int, expansion_factor: int = 4, dropout_p: float = 0.1):
        super().__init__()
        self.sequential = nn.Sequential(
            nn.LayerNorm(encoder_dim),
            nn.Linear(encoder_dim, encoder_dim * expansion_factor, bias=True),
            nn.SiLU(),
            nn.Dropout(p=dropout_p),
            nn.Linear(encoder_dim * expansion_factor, encoder_dim, bias=True),
            nn.Dropout(p=dropout_p),
        )

    def forward(self, inputs: Tensor) -> Tensor:
        return self.sequential(inputs)


class RelativeMultiHeadAttention(nn.Module):
    def __init__(self, d_model: int = 32, num_heads: int = 4, dropout_p: float = 0.1):
        super().__init__()
        assert d_model % num_heads == 0, "d_model % num_heads should be zero."
        self.d_model = d_model
        self.d_head = int(d_model / num_heads)
        self.num_heads = num_heads
        self.sqrt_dim = math.sqrt(d_model)

        self.query_proj = nn.Linear(d_model, d_model)
        self.key_proj = nn.Linear(d_model, d_model)
        self.value_proj = nn.Linear(d_model, d_model)
        self.pos_proj = nn.Linear(d_model, d_model, bias=False)

        self.dropout = nn.Dropout(p=dropout_p)
        self.u_bias = nn.Parameter(torch.Tensor(self.num_heads, self.d_head))
        self.v_bias = nn.Parameter(torch.Tensor(self.num_heads, self.d_head))
        torch.nn.init.xavier_uniform_(self.u_bias)
        torch.nn.init.xavier_uniform_(self.v_bias)

        self.out_proj = nn.Linear(d_model, d_model)

    def forward(self, query, key, value, pos_embedding, mask=None):
        batch_size = value.size(0)

        query = self.query_proj(query).view(batch_size, -1, self.num_heads, self.d_head)
        key = self.key_proj(key).view(batch_size, -1, self.num_heads, self.d_head).permute(0, 2, 1, 3)
        value = self.value_proj(value).view(batch_size, -1, self.num_heads, self.d_head).permute(0, 2, 1, 3)
        pos_embedding = self.pos_proj(pos_embedding).view(batch_size, -1, self.num_heads, self.d_head)

        content_score = torch.matmul((query + self.u_bias).transpose(1, 2), key.transpose(2, 3))
        pos_score = torch.matmul((query + self.v_bias).transpose(1, 2), pos_embedding.permute(0, 2, 3, 1))
        pos_score = self._relative_shift(pos_score)

        score = (content_score + pos_score) / self.sqrt_dim

        if mask is not None:
            mask = mask.unsqueeze(1)
            score.masked_fill_(mask, -1e9)

        attn = F.softmax(score, -1)
        attn = self.dropout(attn)

        context = torch.matmul(attn, value).transpose(1, 2)
        context = context.contiguous().view(batch_size, -1, self.d_model)

        return self.out_proj(context), attn

    def _relative_shift(self, pos_score: Tensor) -> Tensor:
        batch_size, num_heads, seq_length1, seq_length2 = pos_score.size()
        zeros = pos_score.new_zeros(batch_size, num_heads, seq_length1, 1)
        padded_pos_score = torch.cat([zeros, pos_score], dim=-1)

        padded_pos_score = padded_pos_score.view(batch_size, num_heads, seq_length2 + 1, seq_length1)
        pos_score = padded_pos_score[:, :, 1:].view_as(pos_score)[:, :, :, : seq_length2 // 2 + 1]

        return pos_score


class MultiHeadedSelfAttentionModule(nn.Module):
    def __init__(self, d_model: int, num_heads: int, dropout_p: float = 0.1):
        super().__init__()
        self.positional_encoding = RelPositionalEncoding(d_model)
        self.layer_norm = nn.LayerNorm(d_model)
        self.attention = RelativeMultiHeadAttention(d_model, num_heads, dropout_p)
        self.dropout = nn.Dropout(p=dropout_p)

    def forward(self, inputs: Tensor, mask=None):
        batch_size = inputs.size(0)
        # positions -(T-1) .. (T-1) reversed, as in Transformer-XL: 2T-1 relative embeddings
        T = inputs.size(1)
        pos = self.positional_encoding(2 * T - 1).flip(1)
        pos_embedding = pos.repeat(batch_size, 1, 1)

        inputs = self.layer_norm(inputs)
        outputs, attn = self.attention(inputs, inputs, inputs, pos_embedding=pos_embedding,
                                       mask=mask)
        return self.dropout(outputs), attn


class ConformerConvModule(nn.Module):
    def __init__(self, in_channels: int, kernel_size: int = 7, expansion_factor: int = 2,
                 dropout_p: float = 0.1) -> None:
        super().__init__()
        assert (kernel_size - 1) % 2 == 0, "kernel_size should be a odd number for 'SAME' padding"
        self.layer_norm = nn.LayerNorm(in_channels)
        self.sequential = nn.Sequential(
            nn.Conv1d(in_channels, in_channels * expansion_factor, kernel_size=1),
            nn.GLU(dim=1),
            nn.Conv1d(in_channels, in_channels, kernel_size, stride=1,
                      padding=(kernel_size - 1) // 2, groups=in_channels, bias=False),
            nn.BatchNorm1d(in_channels),
            nn.SiLU(),
            nn.Conv1d(in_channels, in_channels, kernel_size=1),
            nn.Dropout(p=dropout_p),
        )

    def forward(self, inputs: Tensor, pad_mask=None) -> Tensor:
        x = self.layer_norm(inputs).transpose(1, 2)
        if pad_mask is not None:
            x = x.masked_fill(pad_mask.unsqueeze(1), 0.0)
        return self.sequential(x).transpose(1, 2)


class ResidualConnectionModule(nn.Module):
    def __init__(self, module: nn.Module, module_factor: float = 1.0, input_factor: float = 1.0):
        super().__init__()
        self.module = module
        self.module_factor = module_factor
        self.input_factor = input_factor

    def forward(self, inputs: Tensor) -> Tensor:
        return (self.module(inputs) * self.module_factor) + (inputs * self.input_factor)


class ConformerBlock(nn.Module):
    def __init__(self, encoder_dim=32, num_attention_heads=4, feed_forward_expansion_factor=4,
                 conv_expansion_factor=2, dropout_p=0.1, conv_kernel_size=7,
                 half_step_residual=True):
        super().__init__()
        self.feed_forward_residual_factor = 0.5 if half_step_residual else 1
        self.ff1 = ResidualConnectionModule(
            FeedForwardModule(encoder_dim, feed_forward_expansion_factor, dropout_p),
            module_factor=self.feed_forward_residual_factor)
        self.mhsa = MultiHeadedSelfAttentionModule(encoder_dim, num_attention_heads, dropout_p)
        self.conv = ConformerConvModule(encoder_dim, conv_kernel_size, conv_expansion_factor,
                                        dropout_p)
        self.ff2 = ResidualConnectionModule(
            FeedForwardModule(encoder_dim, feed_forward_expansion_factor, dropout_p),
            module_factor=self.feed_forward_residual_factor)
        self.norm = nn.LayerNorm(encoder_dim)

    def forward(self, x, attn_mask=None, pad_mask=None):
        x = self.ff1(x)
        att, attn = self.mhsa(x, attn_mask)
        x = x + att
        x = x + self.conv(x, pad_mask)
        x = self.ff2(x)
        return self.norm(x), attn


class Conv2dSubampling(nn.Module):
    def __init__(self, in_channels: int, out_channels: int) -> None:
        super().__init__()
        self.sequential = nn.Sequential(
            nn.Conv2d(in_channels, out_channels, kernel_size=3, stride=2),
            nn.ReLU(),
            nn.Conv2d(out_channels, out_channels, kernel_size=3, stride=2),
            nn.ReLU(),
        )

    def forward(self, inputs: Tensor, input_lengths: Tensor):
        outputs = self.sequential(inputs.unsqueeze(1))
        batch_size, channels, subsampled_lengths, sumsampled_dim = outputs.size()

        outputs = outputs.permute(0, 2, 1, 3)
        outputs = outputs.contiguous().view(batch_size, subsampled_lengths, channels * sumsampled_dim)

        output_lengths = input_lengths >> 2
        output_lengths -= 1

        return outputs, output_lengths


class ConformerEncoder(nn.Module):
    def __init__(self, input_dim=20, encoder_dim=32, num_layers=2, num_attention_heads=4,
                 num_classes=6, dropout_p=0.1):
        super().__init__()
        self.conv_subsample = Conv2dSubampling(in_channels=1, out_channels=encoder_dim // 4)
        self.input_projection = nn.Sequential(
            nn.Linear(encoder_dim // 4 * (((input_dim - 1) // 2 - 1) // 2), encoder_dim),
            nn.Dropout(p=dropout_p),
        )
        self.layers = nn.ModuleList([ConformerBlock(encoder_dim, num_attention_heads,
                                                    dropout_p=dropout_p)
                                     for _ in range(num_layers)])
        self.fc = nn.Linear(encoder_dim, num_classes, bias=False)

    def count_parameters(self) -> int:
        return sum([p.numel() for p in self.parameters()])

    def forward(self, inputs: Tensor, input_lengths: Tensor):
        outputs, output_lengths = self.conv_subsample(inputs, input_lengths)
        outputs = self.input_projection(outputs)
        T = outputs.size(1)
        valid = torch.arange(T, device=outputs.device)[None, :] < output_lengths[:, None]
        pad_mask = ~valid
        attn_mask = pad_mask.unsqueeze(1).expand(-1, T, -1)
        attns = []
        for layer in self.layers:
            outputs, attn = layer(outputs, attn_mask, pad_mask)
            attns.append(attn)
        return self.fc(outputs).log_softmax(dim=-1), output_lengths, valid, attns


def main():
    torch.manual_seed(0)
    torch.set_printoptions(precision=4)

    # rel_shift on a tiny score matrix: row i keeps relative positions i..i+T-1 (reversed)
    attn = RelativeMultiHeadAttention(8, 2)
    s = torch.arange(1 * 1 * 3 * 5, dtype=torch.float32).view(1, 1, 3, 5)
    print("rel_shift input\n", s[0, 0])
    print("rel_shift output\n", attn._relative_shift(s)[0, 0])

    model = ConformerEncoder()
    print(model)
    print("parameters", model.count_parameters())

    B, T_in, F_in = 4, 40, 20
    lengths = torch.tensor([40, 36, 28, 20])
    feats = torch.randn(B, T_in, F_in)
    for b, n in enumerate(lengths.tolist()):
        feats[b, n:] = 0.0
    # frame labels: a class per 4 frames derived from the features
    T_out = ((T_in - 1) // 2 - 1) // 2
    labels = (feats[:, : T_out * 4].reshape(B, T_out, 4 * F_in).mean(-1) * 20).long().clamp(-2, 3) + 2
    out_len = (lengths >> 2) - 1
    labels = labels.masked_fill(torch.arange(T_out)[None, :] >= out_len[:, None], -100)
    print("labels", labels.shape, labels.dtype)
    print(labels[3])

    model.eval()
    with torch.no_grad():
        logp, olen, valid, attns = model(feats, lengths)
    print("log_probs", tuple(logp.shape), "output_lengths", olen.tolist())
    print("valid frames per row", valid.sum(1).tolist())
    print("attention rows sum to 1:", torch.allclose(attns[0].sum(-1), torch.ones(B, 4, T_out)))
    print("masked attention weight (row 3, last key)", f"{attns[0][3, :, :, -1].max().item():.3e}")
    print("first frame log-probs", logp[0, 0])

    optimizer = torch.optim.Adam(model.parameters(), lr=1.0, betas=(0.9, 0.98), eps=1e-9)
    warmup, d_model = 10, 32
    scheduler = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda step: d_model ** -0.5 * min((step + 1) ** -0.5, (step + 1) * warmup ** -1.5))
    model.train()
    for step in range(12):
        logp, olen, valid, _ = model(feats, lengths)
        loss = F.nll_loss(logp.transpose(1, 2), labels, ignore_index=-100)
        optimizer.zero_grad(set_to_none=True)
        loss.backward()
        gnorm = nn.utils.clip_grad_norm_(model.parameters(), max_norm=5.0)
        optimizer.step()
        scheduler.step()
        if step % 3 == 0 or step == 11:
            print(f"step {step:2d} loss {loss.item():.4f} grad_norm {gnorm.item():.3f} "
                  f"lr {scheduler.get_last_lr()[0]:.5f}")

    model.eval()
    with torch.no_grad():
        logp, _, valid, _ = model(feats, lengths)
        pred = logp.argmax(-1)
        acc = (pred[valid] == labels[valid]).float().mean()
    print(f"frame accuracy {acc.item():.3f}")
    print("running_var", model.layers[0].conv.sequential[3].running_var[:4])
    print("bn num_batches_tracked", model.layers[0].conv.sequential[3].num_batches_tracked)


if __name__ == "__main__":
    main()
