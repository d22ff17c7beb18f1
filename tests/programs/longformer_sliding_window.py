"""Longformer / BigBird-style sliding-window attention, scaled down, as HuggingFace
transformers' modeling_longformer.py (LongformerSelfAttention) writes it: overlapping
chunks made with Tensor.as_strided (_chunk) and checked against Tensor.unfold,
torch.einsum("bcxd,bcyd->bcxy") chunk scores, diagonal-to-band conversion with F.pad and
views (_pad_and_transpose_last_two_dims, _pad_and_diagonalize), _mask_invalid_locations
with a flipped tril mask and masked_fill(-inf), attention masks turned into
torch.finfo(dtype).min float masks, fully masked rows zeroed with torch.masked_fill after
softmax, global attention tokens, and a comparison against dense banded attention with
torch.allclose; then a tiny Longformer encoder trained for a few steps."""
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


def _pad_and_transpose_last_two_dims(hidden_states_padded, padding):
    """pads rows and then flips rows and columns"""
    hidden_states_padded = nn.functional.pad(
        hidden_states_padded, padding
    )  # padding value is not important because it will be overwritten
    hidden_states_padded = hidden_states_padded.view(
        *hidden_states_padded.size()[:-2], hidden_states_padded.size(-1), hidden_states_padded.size(-2)
    )
    return hidden_states_padded


def _pad_and_diagonalize(chunked_hidden_states):
    total_num_heads, num_chunks, window_overlap, hidden_dim = chunked_hidden_states.size()
    chunked_hidden_states = nn.functional.pad(
        chunked_hidden_states, (0, window_overlap + 1)
    )  # total_num_heads x num_chunks x window_overlap x (hidden_dim+window_overlap+1).
    chunked_hidden_states = chunked_hidden_states.view(
        total_num_heads, num_chunks, -1
    )  # total_num_heads x num_chunks x window_overlap*window_overlap+window_overlap
    chunked_hidden_states = chunked_hidden_states[
        :, :, :-window_overlap
    ]  # total_num_heads x num_chunks x window_overlap*window_overlap
    chunked_hidden_states = chunked_hidden_states.view(
        total_num_heads, num_chunks, window_overlap, window_overlap + hidden_dim
    )
    chunked_hidden_states = chunked_hidden_states[:, :, :, :-1]
    return chunked_hidden_states


def _chunk(hidden_states, window_overlap, onnx_export: bool = False):
    """convert into overlapping chunks. Chunk size = 2w, overlap size = w"""
    if not onnx_export:
        # non-overlapping chunks of size = 2w
        hidden_states = hidden_states.view(
            hidden_states.size(0),
            torch.div(hidden_states.size(1), (window_overlap * 2), rounding_mode="trunc"),
            window_overlap * 2,
            hidden_states.size(2),
        )
        # use `as_strided` to make the chunks overlap with an overlap size = window_overlap
        chunk_size = list(hidden_states.size())
        chunk_size[1] = chunk_size[1] * 2 - 1

        chunk_stride = list(hidden_states.stride())
        chunk_stride[1] = chunk_stride[1] // 2
        return hidden_states.as_strided(size=chunk_size, stride=chunk_stride)

    # When exporting to ONNX, use this separate logic
    chunk_size = [
        hidden_states.size(0),
        torch.div(hidden_states.size(1), window_overlap, rounding_mode="trunc") - 1,
        window_overlap * 2,
        hidden_states.size(2),
    ]
    overlapping_chunks = torch.empty(chunk_size, device=hidden_states.device)
    for chunk in range(chunk_size[1]):
        overlapping_chunks[:, chunk, :, :] = hidden_states[
            :, chunk * window_overlap : chunk * window_overlap + 2 * window_overlap, :
        ]
    return overlapping_chunks


def _mask_invalid_locations(input_tensor, affected_seq_len) -> torch.Tensor:
    beginning_mask_2d = input_tensor.new_ones(affected_seq_len, affected_seq_len + 1).tril().flip(dims=[0])
    beginning_mask = beginning_mask_2d[None, :, None, :]
    ending_mask = beginning_mask.flip(dims=(1, 3))
    beginning_input = input_tensor[:, :affected_seq_len, :, : affected_seq_len + 1]
    beginning_mask = beginning_mask.expand(beginning_input.size())
    input_tensor[:, :affected_seq_len, :, : affected_seq_len + 1] = torch.full_like(
        beginning_input, -float("inf")
    ).where(beginning_mask.bool(), beginning_input)
    ending_input = input_tensor[:, -affected_seq_len:, :, -(affected_seq_len + 1) :]
    ending_mask = ending_mask.expand(ending_input.size())
    input_tensor[:, -affected_seq_len:, :, -(affected_seq_len + 1) :] = torch.full_like(
        ending_input, -float("inf")
    ).where(ending_mask.bool(), ending_input)


def _sliding_chunks_query_key_matmul(query, key, window_overlap):
    batch_size, seq_len, num_heads, head_dim = query.size()
    assert seq_len % (window_overlap * 2) == 0, (
        f"Sequence length should be multiple of {window_overlap * 2}. Given {seq_len}"
    )
    assert query.size() == key.size()
    chunks_count = torch.div(seq_len, window_overlap, rounding_mode="trunc") - 1
    # group batch_size and num_heads dimensions into one, then chunk seq_len into chunks of size window_overlap * 2
    query = query.transpose(1, 2).reshape(batch_size * num_heads, seq_len, head_dim)
    key = key.transpose(1, 2).reshape(batch_size * num_heads, seq_len, head_dim)
    query = _chunk(query, window_overlap)
    key = _chunk(key, window_overlap)
    # matrix multiplication
    diagonal_chunked_attention_scores = torch.einsum("bcxd,bcyd->bcxy", (query, key))  # multiply
    # convert diagonals into columns
    diagonal_chunked_attention_scores = _pad_and_transpose_last_two_dims(
        diagonal_chunked_attention_scores, padding=(0, 0, 0, 1)
    )
    diagonal_attention_scores = diagonal_chunked_attention_scores.new_zeros(
        (batch_size * num_heads, chunks_count + 1, window_overlap, window_overlap * 2 + 1)
    )
    # copy parts from diagonal_chunked_attention_scores into the combined matrix of attentions
    diagonal_attention_scores[:, :-1, :, window_overlap:] = diagonal_chunked_attention_scores[
        :, :, :window_overlap, : window_overlap + 1
    ]
    diagonal_attention_scores[:, -1, :, window_overlap:] = diagonal_chunked_attention_scores[
        :, -1, window_overlap:, : window_overlap + 1
    ]
    # - copying the lower triangle
    diagonal_attention_scores[:, 1:, :, :window_overlap] = diagonal_chunked_attention_scores[
        :, :, -(window_overlap + 1) : -1, window_overlap + 1 :
    ]
    diagonal_attention_scores[:, 0, 1:window_overlap, 1:window_overlap] = diagonal_chunked_attention_scores[
        :, 0, : window_overlap - 1, 1 - window_overlap :
    ]
    # separate batch_size and num_heads dimensions again
    diagonal_attention_scores = diagonal_attention_scores.view(
        batch_size, num_heads, seq_len, 2 * window_overlap + 1
    ).transpose(2, 1)
    _mask_invalid_locations(diagonal_attention_scores, window_overlap)
    return diagonal_attention_scores


def _sliding_chunks_matmul_attn_probs_value(attn_probs, value, window_overlap):
    batch_size, seq_len, num_heads, head_dim = value.size()
    assert seq_len % (window_overlap * 2) == 0
    assert attn_probs.size()[:3] == value.size()[:3]
    assert attn_probs.size(3) == 2 * window_overlap + 1
    chunks_count = torch.div(seq_len, window_overlap, rounding_mode="trunc") - 1
    # group batch_size and num_heads dimensions into one, then chunk seq_len into chunks of size 2 window overlap
    chunked_attn_probs = attn_probs.transpose(1, 2).reshape(
        batch_size * num_heads,
        torch.div(seq_len, window_overlap, rounding_mode="trunc"),
        window_overlap,
        2 * window_overlap + 1,
    )
    # group batch_size and num_heads dimensions into one
    value = value.transpose(1, 2).reshape(batch_size * num_heads, seq_len, head_dim)
    # pad seq_len with w at the beginning of the sequence and another window overlap at the end
    padded_value = nn.functional.pad(value, (0, 0, window_overlap, window_overlap), value=-1)
    # chunk padded_value into chunks of size 3 window overlap and an overlap of size window overlap
    chunked_value_size = (batch_size * num_heads, chunks_count + 1, 3 * window_overlap, head_dim)
    chunked_value_stride = padded_value.stride()
    chunked_value_stride = (
        chunked_value_stride[0],
        window_overlap * chunked_value_stride[1],
        chunked_value_stride[1],
        chunked_value_stride[2],
    )
    chunked_value = padded_value.as_strided(size=chunked_value_size, stride=chunked_value_stride)
    chunked_attn_probs = _pad_and_diagonalize(chunked_attn_probs)
    context = torch.einsum("bcwd,bcdh->bcwh", (chunked_attn_probs, chunked_value))
    return context.view(batch_size, num_heads, seq_len, head_dim).transpose(1, 2)


class LongformerSelfAttention(nn.Module):
    def __init__(self, hidden_size, num_heads, attention_window):
        super().__init__()
        self.num_heads = num_heads
        self.head_dim = hidden_size // num_heads
        self.embed_dim = hidden_size
        self.query = nn.Linear(hidden_size, self.embed_dim)
        self.key = nn.Linear(hidden_size, self.embed_dim)
        self.value = nn.Linear(hidden_size, self.embed_dim)
        # separate projection layers for tokens with global attention
        self.query_global = nn.Linear(hidden_size, self.embed_dim)
        self.key_global = nn.Linear(hidden_size, self.embed_dim)
        self.value_global = nn.Linear(hidden_size, self.embed_dim)
        self.dropout = 0.0
        self.one_sided_attn_window_size = attention_window // 2

    def forward(self, hidden_states, attention_mask, is_index_masked, is_index_global_attn,
                is_global_attn):
        hidden_states = hidden_states.transpose(0, 1)
        query_vectors = self.query(hidden_states)
        key_vectors = self.key(hidden_states)
        value_vectors = self.value(hidden_states)
        seq_len, batch_size, embed_dim = hidden_states.size()
        query_vectors /= math.sqrt(self.head_dim)
        query_vectors = query_vectors.view(seq_len, batch_size, self.num_heads, self.head_dim).transpose(0, 1)
        key_vectors = key_vectors.view(seq_len, batch_size, self.num_heads, self.head_dim).transpose(0, 1)
        attn_scores = _sliding_chunks_query_key_matmul(
            query_vectors, key_vectors, self.one_sided_attn_window_size)
        # values to pad for attention probs
        remove_from_windowed_attention_mask = (attention_mask != 0)[:, :, None, None]
        # cast to fp32/fp16 then replace 1's with -inf
        float_mask = remove_from_windowed_attention_mask.type_as(query_vectors).masked_fill(
            remove_from_windowed_attention_mask, torch.finfo(query_vectors.dtype).min)
        # diagonal mask with zeros everywhere and -inf inplace of padding
        diagonal_mask = _sliding_chunks_query_key_matmul(
            float_mask.new_ones(size=float_mask.size()), float_mask,
            self.one_sided_attn_window_size)
        # pad local attention probs
        attn_scores += diagonal_mask
        if is_global_attn:
            (max_num_global_attn_indices, is_index_global_attn_nonzero,
             is_local_index_global_attn_nonzero,
             is_local_index_no_global_attn_nonzero) = self._get_global_attn_indices(is_index_global_attn)
            global_key_attn_scores = self._concat_with_global_key_attn_probs(
                query_vectors=query_vectors, key_vectors=key_vectors,
                max_num_global_attn_indices=max_num_global_attn_indices,
                is_index_global_attn_nonzero=is_index_global_attn_nonzero,
                is_local_index_global_attn_nonzero=is_local_index_global_attn_nonzero,
                is_local_index_no_global_attn_nonzero=is_local_index_no_global_attn_nonzero)
            attn_scores = torch.cat((global_key_attn_scores, attn_scores), dim=-1)
            del global_key_attn_scores
        attn_probs = nn.functional.softmax(attn_scores, dim=-1, dtype=torch.float32)
        # softmax sometimes inserts NaN if all positions are masked, replace them with 0
        attn_probs = torch.masked_fill(attn_probs, is_index_masked[:, :, None, None], 0.0)
        attn_probs = attn_probs.type_as(attn_scores)
        del attn_scores
        value_vectors = value_vectors.view(seq_len, batch_size, self.num_heads, self.head_dim).transpose(0, 1)
        if is_global_attn:
            attn_output = self._compute_attn_output_with_global_indices(
                value_vectors=value_vectors, attn_probs=attn_probs,
                max_num_global_attn_indices=max_num_global_attn_indices,
                is_index_global_attn_nonzero=is_index_global_attn_nonzero,
                is_local_index_global_attn_nonzero=is_local_index_global_attn_nonzero)
        else:
            attn_output = _sliding_chunks_matmul_attn_probs_value(
                attn_probs, value_vectors, self.one_sided_attn_window_size)
        assert attn_output.size() == (batch_size, seq_len, self.num_heads, self.head_dim), "Unexpected size"
        attn_output = attn_output.transpose(0, 1).reshape(seq_len, batch_size, embed_dim).contiguous()
        if is_global_attn:
            global_attn_output, global_attn_probs = self._compute_global_attn_output_from_hidden(
                hidden_states=hidden_states, max_num_global_attn_indices=max_num_global_attn_indices,
                is_local_index_global_attn_nonzero=is_local_index_global_attn_nonzero,
                is_index_global_attn_nonzero=is_index_global_attn_nonzero,
                is_local_index_no_global_attn_nonzero=is_local_index_no_global_attn_nonzero,
                is_index_masked=is_index_masked)
            nonzero_global_attn_output = global_attn_output[
                is_local_index_global_attn_nonzero[0], :, is_local_index_global_attn_nonzero[1]]
            attn_output[is_index_global_attn_nonzero[::-1]] = nonzero_global_attn_output.view(
                len(is_local_index_global_attn_nonzero[0]), -1)
            attn_probs[is_index_global_attn_nonzero] = 0
        return attn_output.transpose(0, 1), attn_probs

    @staticmethod
    def _get_global_attn_indices(is_index_global_attn):
        """compute global attn indices required throughout forward pass"""
        num_global_attn_indices = is_index_global_attn.long().sum(dim=1)
        max_num_global_attn_indices = num_global_attn_indices.max()
        is_index_global_attn_nonzero = is_index_global_attn.nonzero(as_tuple=True)
        is_local_index_global_attn = torch.arange(
            max_num_global_attn_indices, device=is_index_global_attn.device
        ) < num_global_attn_indices.unsqueeze(dim=-1)
        is_local_index_global_attn_nonzero = is_local_index_global_attn.nonzero(as_tuple=True)
        is_local_index_no_global_attn_nonzero = (is_local_index_global_attn == 0).nonzero(as_tuple=True)
        return (max_num_global_attn_indices, is_index_global_attn_nonzero,
                is_local_index_global_attn_nonzero, is_local_index_no_global_attn_nonzero)

    def _concat_with_global_key_attn_probs(self, key_vectors, query_vectors,
                                           max_num_global_attn_indices,
                                           is_index_global_attn_nonzero,
                                           is_local_index_global_attn_nonzero,
                                           is_local_index_no_global_attn_nonzero):
        batch_size = key_vectors.shape[0]
        key_vectors_only_global = key_vectors.new_zeros(
            batch_size, max_num_global_attn_indices, self.num_heads, self.head_dim)
        key_vectors_only_global[is_local_index_global_attn_nonzero] = key_vectors[is_index_global_attn_nonzero]
        attn_probs_from_global_key = torch.einsum("blhd,bshd->blhs", (query_vectors, key_vectors_only_global))
        attn_probs_from_global_key = attn_probs_from_global_key.transpose(1, 3)
        attn_probs_from_global_key[
            is_local_index_no_global_attn_nonzero[0], is_local_index_no_global_attn_nonzero[1], :, :
        ] = torch.finfo(attn_probs_from_global_key.dtype).min
        attn_probs_from_global_key = attn_probs_from_global_key.transpose(1, 3)
        return attn_probs_from_global_key

    def _compute_attn_output_with_global_indices(self, value_vectors, attn_probs,
                                                 max_num_global_attn_indices,
                                                 is_index_global_attn_nonzero,
                                                 is_local_index_global_attn_nonzero):
        batch_size = attn_probs.shape[0]
        attn_probs_only_global = attn_probs.narrow(-1, 0, max_num_global_attn_indices)
        value_vectors_only_global = value_vectors.new_zeros(
            batch_size, max_num_global_attn_indices, self.num_heads, self.head_dim)
        value_vectors_only_global[is_local_index_global_attn_nonzero] = value_vectors[is_index_global_attn_nonzero]
        attn_output_only_global = torch.matmul(
            attn_probs_only_global.transpose(1, 2).clone(), value_vectors_only_global.transpose(1, 2).clone()
        ).transpose(1, 2)
        attn_probs_without_global = attn_probs.narrow(
            -1, max_num_global_attn_indices, attn_probs.size(-1) - max_num_global_attn_indices
        ).contiguous()
        attn_output_without_global = _sliding_chunks_matmul_attn_probs_value(
            attn_probs_without_global, value_vectors, self.one_sided_attn_window_size)
        return attn_output_only_global + attn_output_without_global

    def _compute_global_attn_output_from_hidden(self, hidden_states, max_num_global_attn_indices,
                                                is_local_index_global_attn_nonzero,
                                                is_index_global_attn_nonzero,
                                                is_local_index_no_global_attn_nonzero,
                                                is_index_masked):
        seq_len, batch_size = hidden_states.shape[:2]
        global_attn_hidden_states = hidden_states.new_zeros(max_num_global_attn_indices, batch_size, self.embed_dim)
        global_attn_hidden_states[is_local_index_global_attn_nonzero[::-1]] = hidden_states[
            is_index_global_attn_nonzero[::-1]]
        global_query_vectors_only_global = self.query_global(global_attn_hidden_states)
        global_key_vectors = self.key_global(hidden_states)
        global_value_vectors = self.value_global(hidden_states)
        global_query_vectors_only_global /= math.sqrt(self.head_dim)
        global_query_vectors_only_global = (
            global_query_vectors_only_global.contiguous()
            .view(max_num_global_attn_indices, batch_size * self.num_heads, self.head_dim)
            .transpose(0, 1))
        global_key_vectors = (
            global_key_vectors.contiguous().view(-1, batch_size * self.num_heads, self.head_dim).transpose(0, 1))
        global_value_vectors = (
            global_value_vectors.contiguous().view(-1, batch_size * self.num_heads, self.head_dim).transpose(0, 1))
        global_attn_scores = torch.bmm(global_query_vectors_only_global, global_key_vectors.transpose(1, 2))
        global_attn_scores = global_attn_scores.view(batch_size, self.num_heads, max_num_global_attn_indices, seq_len)
        global_attn_scores = global_attn_scores.transpose(1, 2)
        global_attn_scores[
            is_local_index_no_global_attn_nonzero[0], is_local_index_no_global_attn_nonzero[1], :, :
        ] = torch.finfo(global_attn_scores.dtype).min
        global_attn_scores = global_attn_scores.transpose(1, 2)
        global_attn_scores = global_attn_scores.masked_fill(
            is_index_masked[:, None, None, :], torch.finfo(global_attn_scores.dtype).min)
        global_attn_scores = global_attn_scores.view(batch_size * self.num_heads, max_num_global_attn_indices, seq_len)
        global_attn_probs_float = nn.functional.softmax(global_attn_scores, dim=-1, dtype=torch.float32)
        global_attn_probs = global_attn_probs_float.type_as(global_attn_scores)
        global_attn_output = torch.bmm(global_attn_probs, global_value_vectors)
        global_attn_output = global_attn_output.view(batch_size, self.num_heads, max_num_global_attn_indices, self.head_dim)
        global_attn_probs = global_attn_probs.view(batch_size, self.num_heads, max_num_global_attn_indices, seq_len)
        return global_attn_output, global_attn_probs


class LongformerLayer(nn.Module):
    def __init__(self, hidden, heads, window):
        super().__init__()
        self.attention = LongformerSelfAttention(hidden, heads, window)
        self.output = nn.Linear(hidden, hidden)
        self.ln1 = nn.LayerNorm(hidden)
        self.ffn = nn.Sequential(nn.Linear(hidden, 2 * hidden), nn.GELU(), nn.Linear(2 * hidden, hidden))
        self.ln2 = nn.LayerNorm(hidden)

    def forward(self, h, attention_mask, is_index_masked, is_index_global_attn, is_global_attn):
        a, _ = self.attention(h, attention_mask, is_index_masked, is_index_global_attn, is_global_attn)
        h = self.ln1(h + self.output(a))
        return self.ln2(h + self.ffn(h))


class TinyLongformer(nn.Module):
    def __init__(self, vocab, hidden=16, heads=2, window=4, layers=2, n_classes=2):
        super().__init__()
        self.window = window
        self.embed = nn.Embedding(vocab, hidden, padding_idx=0)
        self.pos = nn.Embedding(64, hidden)
        self.layers = nn.ModuleList([LongformerLayer(hidden, heads, window) for _ in range(layers)])
        self.classifier = nn.Linear(hidden, n_classes)

    def _pad_to_window_size(self, input_ids, attention_mask):
        seq_len = input_ids.shape[1]
        padding_len = (self.window - seq_len % self.window) % self.window
        if padding_len > 0:
            input_ids = nn.functional.pad(input_ids, (0, padding_len), value=0)
            attention_mask = nn.functional.pad(attention_mask, (0, padding_len), value=0)
        return padding_len, input_ids, attention_mask

    def forward(self, input_ids, attention_mask, global_attention_mask):
        padding_len, input_ids, attention_mask = self._pad_to_window_size(input_ids, attention_mask)
        global_attention_mask = F.pad(global_attention_mask, (0, padding_len), value=0)
        # HF merges the masks: 0 local-masked, 1 local, 2 global; then -> {-10000, 0, +10000}
        attention_mask = attention_mask * (global_attention_mask + 1)
        extended = (1.0 - attention_mask[:, :, None].to(torch.float32)) * torch.finfo(torch.float32).min
        extended = extended[:, :, 0]
        is_index_masked = attention_mask == 0
        is_index_global_attn = attention_mask > 1
        is_global_attn = is_index_global_attn.flatten().any().item()
        # local attention only wants the masked positions: make global ones look like local
        local_mask = extended.masked_fill(is_index_global_attn, 0.0)
        h = self.embed(input_ids) + self.pos(torch.arange(input_ids.size(1)))[None]
        for layer in self.layers:
            h = layer(h, local_mask, is_index_masked, is_index_global_attn, is_global_attn)
        return self.classifier(h[:, 0])


torch.manual_seed(0)
# --- _chunk via as_strided equals unfold ---
x = torch.arange(2 * 8 * 3, dtype=torch.float32).view(2, 8, 3)
chunks = _chunk(x, 2)
print("chunk", chunks.shape, chunks.stride(), chunks.is_contiguous())
unfolded = x.unfold(1, 4, 2).permute(0, 1, 3, 2)
print("unfold", unfolded.shape, unfolded.stride(), torch.equal(chunks, unfolded))
print("onnx chunk equal", torch.equal(_chunk(x, 2, onnx_export=True), chunks))
print("pad_and_transpose", _pad_and_transpose_last_two_dims(torch.arange(6.0).view(1, 2, 3), (0, 0, 0, 1)).tolist())
print("pad_and_diagonalize", _pad_and_diagonalize(torch.arange(1.0, 7.0).view(1, 1, 2, 3))[0, 0].tolist())
t = torch.zeros(1, 6, 1, 5)
_mask_invalid_locations(t, 2)
print("invalid locations", (t[0, :, 0] == -float("inf")).int().tolist())

# --- banded scores equal dense attention restricted to the band ---
b, n, h, d, w = 2, 8, 2, 4, 2
q, k, v = torch.randn(b, n, h, d), torch.randn(b, n, h, d), torch.randn(b, n, h, d)
band = _sliding_chunks_query_key_matmul(q, k, w)
print("band", band.shape, band.dtype)
dense = torch.einsum("bqhd,bkhd->bhqk", q, k)
idx = torch.arange(n)
rel = idx[None, :] - idx[:, None]
outside = rel.abs() > w
gather_idx = (idx[:, None] + torch.arange(-w, w + 1)[None, :])
valid = (gather_idx >= 0) & (gather_idx < n)
dense_band = dense.gather(-1, gather_idx.clamp(0, n - 1)[None, None].expand(b, h, n, 2 * w + 1))
dense_band = dense_band.masked_fill(~valid, -float("inf")).transpose(1, 2)
print("band == dense", torch.allclose(band, dense_band, atol=1e-5),
      torch.isinf(band).sum().item(), torch.isneginf(dense_band).sum().item())
probs = F.softmax(band, dim=-1)
ctx = _sliding_chunks_matmul_attn_probs_value(probs, v, w)
dense_probs = F.softmax(dense.masked_fill(outside, float("-inf")), dim=-1)
dense_ctx = torch.einsum("bhqk,bkhd->bqhd", dense_probs, v)
print("context == dense", ctx.shape, torch.allclose(ctx, dense_ctx, atol=1e-5))

# fully masked rows: softmax of all -inf is nan; HF zeroes them with masked_fill
row = torch.full((1, 5), -float("inf"))
print("all -inf softmax", F.softmax(row, dim=-1).tolist())
finfo = torch.finfo(torch.float32)
print("finfo", finfo.min, finfo.max, finfo.eps, finfo.tiny, finfo.dtype, finfo.bits)
print("finfo half", torch.finfo(torch.float16).min, torch.finfo(torch.bfloat16).eps)
print("min-masked softmax", F.softmax(torch.full((1, 3), finfo.min), dim=-1).tolist())
print(torch.finfo(torch.float16))

# --- self-attention with global tokens ---
attn = LongformerSelfAttention(hidden_size=8, num_heads=2, attention_window=4)
hs = torch.randn(2, 8, 8)
mask = torch.zeros(2, 8)
mask[1, 6:] = finfo.min
is_index_masked = mask < 0
is_global = torch.zeros(2, 8, dtype=torch.bool)
is_global[:, 0] = True
is_global[0, 3] = True
out_local, probs_local = attn(hs, mask, is_index_masked, torch.zeros_like(is_global), False)
out_global, probs_global = attn(hs, mask, is_index_masked, is_global, True)
print("local", out_local.shape, probs_local.shape, probs_local[1, 6:].abs().sum().item())
print("global", out_global.shape, probs_global.shape)
print("global attn indices", [t.tolist() for t in attn._get_global_attn_indices(is_global)[1]])
print("global rows zeroed", probs_global[is_global].abs().sum().item())
print("row sums", probs_global.sum(-1)[0, :, 0].tolist())

# --- training a tiny Longformer classifier ---
vocab = 20
model = TinyLongformer(vocab)
print(model)
n_params = sum(p.numel() for p in model.parameters() if p.requires_grad)
print("parameters", n_params)
data = torch.randint(1, vocab, (32, 14))
lengths = torch.randint(8, 15, (32,))
attention_mask = (torch.arange(14)[None, :] < lengths[:, None]).long()
data = data * attention_mask
labels = ((data == 3).sum(1) > (data == 4).sum(1)).long()
global_attention_mask = torch.zeros_like(attention_mask)
global_attention_mask[:, 0] = 1
opt = torch.optim.AdamW(model.parameters(), lr=5e-3, weight_decay=0.01)
sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: min(1.0, (s + 1) / 3))
for step in range(12):
    logits = model(data, attention_mask, global_attention_mask)
    loss = F.cross_entropy(logits, labels)
    opt.zero_grad()
    loss.backward()
    nn.utils.clip_grad_norm_(model.parameters(), 1.0)
    opt.step()
    sched.step()
    if step % 3 == 0 or step == 11:
        acc = (logits.argmax(-1) == labels).float().mean().item()
        print(f"step {step:2d} loss {loss.item():.4f} acc {acc:.3f}")
