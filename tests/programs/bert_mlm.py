"""BERT masked-language-model pretraining from scratch, with the modules written out as
Hugging Face's modeling_bert.py writes them (BertEmbeddings with token_type and position ids
in a non-persistent buffer, the extended attention mask filled with finfo.min, a tied
decoder in BertLMPredictionHead) and DataCollatorForLanguageModeling's 80/10/10 masking
(torch.bernoulli over a 0.15 probability matrix, masked_fill of special tokens, -100 labels).
Pretrained on a tiny synthetic corpus of sentence pairs."""
import math
from dataclasses import dataclass

import torch
import torch.nn.functional as F
from torch import nn


@dataclass
class BertConfig:
    vocab_size: int = 16
    hidden_size: int = 32
    num_hidden_layers: int = 2
    num_attention_heads: int = 4
    intermediate_size: int = 64
    hidden_act: str = "gelu"
    hidden_dropout_prob: float = 0.1
    attention_probs_dropout_prob: float = 0.1
    max_position_embeddings: int = 32
    type_vocab_size: int = 2
    initializer_range: float = 0.02
    layer_norm_eps: float = 1e-12
    pad_token_id: int = 0


PAD, CLS, SEP, MASK = 0, 1, 2, 3
SPECIAL = [PAD, CLS, SEP, MASK]


class BertEmbeddings(nn.Module):
    """Construct the embeddings from word, position and token_type embeddings."""

    def __init__(self, config):
        super().__init__()
        self.word_embeddings = nn.Embedding(config.vocab_size, config.hidden_size,
                                            padding_idx=config.pad_token_id)
        self.position_embeddings = nn.Embedding(config.max_position_embeddings,
                                                config.hidden_size)
        self.token_type_embeddings = nn.Embedding(config.type_vocab_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)
        self.register_buffer(
            "position_ids", torch.arange(config.max_position_embeddings).expand((1, -1)),
            persistent=False)
        self.register_buffer(
            "token_type_ids", torch.zeros(self.position_ids.size(), dtype=torch.long),
            persistent=False)

    def forward(self, input_ids=None, token_type_ids=None, position_ids=None,
                past_key_values_length=0):
        input_shape = input_ids.size()
        seq_length = input_shape[1]
        if position_ids is None:
            position_ids = self.position_ids[
                :, past_key_values_length: seq_length + past_key_values_length]
        if token_type_ids is None:
            buffered_token_type_ids = self.token_type_ids[:, :seq_length]
            token_type_ids = buffered_token_type_ids.expand(input_shape[0], seq_length)
        inputs_embeds = self.word_embeddings(input_ids)
        token_type_embeddings = self.token_type_embeddings(token_type_ids)
        embeddings = inputs_embeds + token_type_embeddings
        position_embeddings = self.position_embeddings(position_ids)
        embeddings += position_embeddings
        embeddings = self.LayerNorm(embeddings)
        embeddings = self.dropout(embeddings)
        return embeddings


class BertSelfAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.num_attention_heads = config.num_attention_heads
        self.attention_head_size = int(config.hidden_size / config.num_attention_heads)
        self.all_head_size = self.num_attention_heads * self.attention_head_size
        self.query = nn.Linear(config.hidden_size, self.all_head_size)
        self.key = nn.Linear(config.hidden_size, self.all_head_size)
        self.value = nn.Linear(config.hidden_size, self.all_head_size)
        self.dropout = nn.Dropout(config.attention_probs_dropout_prob)

    def transpose_for_scores(self, x):
        new_x_shape = x.size()[:-1] + (self.num_attention_heads, self.attention_head_size)
        x = x.view(new_x_shape)
        return x.permute(0, 2, 1, 3)

    def forward(self, hidden_states, attention_mask=None, output_attentions=False):
        query_layer = self.transpose_for_scores(self.query(hidden_states))
        key_layer = self.transpose_for_scores(self.key(hidden_states))
        value_layer = self.transpose_for_scores(self.value(hidden_states))

        attention_scores = torch.matmul(query_layer, key_layer.transpose(-1, -2))
        attention_scores = attention_scores / math.sqrt(self.attention_head_size)
        if attention_mask is not None:
            attention_scores = attention_scores + attention_mask
        attention_probs = nn.functional.softmax(attention_scores, dim=-1)
        attention_probs = self.dropout(attention_probs)

        context_layer = torch.matmul(attention_probs, value_layer)
        context_layer = context_layer.permute(0, 2, 1, 3).contiguous()
        new_context_layer_shape = context_layer.size()[:-2] + (self.all_head_size,)
        context_layer = context_layer.view(new_context_layer_shape)
        outputs = (context_layer, attention_probs) if output_attentions else (context_layer,)
        return outputs


class BertSelfOutput(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, hidden_states, input_tensor):
        hidden_states = self.dense(hidden_states)
        hidden_states = self.dropout(hidden_states)
        hidden_states = self.LayerNorm(hidden_states + input_tensor)
        return hidden_states


class BertAttention(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.self = BertSelfAttention(config)
        self.output = BertSelfOutput(config)

    def forward(self, hidden_states, attention_mask=None, output_attentions=False):
        self_outputs = self.self(hidden_states, attention_mask, output_attentions)
        attention_output = self.output(self_outputs[0], hidden_states)
        outputs = (attention_output,) + self_outputs[1:]
        return outputs


class BertIntermediate(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.intermediate_size)
        self.intermediate_act_fn = nn.GELU()

    def forward(self, hidden_states):
        return self.intermediate_act_fn(self.dense(hidden_states))


class BertOutput(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.dense = nn.Linear(config.intermediate_size, config.hidden_size)
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)
        self.dropout = nn.Dropout(config.hidden_dropout_prob)

    def forward(self, hidden_states, input_tensor):
        hidden_states = self.dense(hidden_states)
        hidden_states = self.dropout(hidden_states)
        hidden_states = self.LayerNorm(hidden_states + input_tensor)
        return hidden_states


class BertLayer(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.attention = BertAttention(config)
        self.intermediate = BertIntermediate(config)
        self.output = BertOutput(config)

    def forward(self, hidden_states, attention_mask=None, output_attentions=False):
        self_attention_outputs = self.attention(hidden_states, attention_mask, output_attentions)
        attention_output = self_attention_outputs[0]
        outputs = self_attention_outputs[1:]
        intermediate_output = self.intermediate(attention_output)
        layer_output = self.output(intermediate_output, attention_output)
        return (layer_output,) + outputs


class BertEncoder(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.layer = nn.ModuleList([BertLayer(config) for _ in range(config.num_hidden_layers)])

    def forward(self, hidden_states, attention_mask=None, output_attentions=False):
        all_attentions = () if output_attentions else None
        for layer_module in self.layer:
            layer_outputs = layer_module(hidden_states, attention_mask, output_attentions)
            hidden_states = layer_outputs[0]
            if output_attentions:
                all_attentions = all_attentions + (layer_outputs[1],)
        return hidden_states, all_attentions


class BertPredictionHeadTransform(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.dense = nn.Linear(config.hidden_size, config.hidden_size)
        self.transform_act_fn = F.gelu
        self.LayerNorm = nn.LayerNorm(config.hidden_size, eps=config.layer_norm_eps)

    def forward(self, hidden_states):
        hidden_states = self.dense(hidden_states)
        hidden_states = self.transform_act_fn(hidden_states)
        hidden_states = self.LayerNorm(hidden_states)
        return hidden_states


class BertLMPredictionHead(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.transform = BertPredictionHeadTransform(config)
        # The output weights are the same as the input embeddings, but there is
        # an output-only bias for each token.
        self.decoder = nn.Linear(config.hidden_size, config.vocab_size, bias=False)
        self.bias = nn.Parameter(torch.zeros(config.vocab_size))
        self.decoder.bias = self.bias

    def forward(self, hidden_states):
        hidden_states = self.transform(hidden_states)
        hidden_states = self.decoder(hidden_states)
        return hidden_states


class BertForMaskedLM(nn.Module):
    def __init__(self, config):
        super().__init__()
        self.config = config
        self.embeddings = BertEmbeddings(config)
        self.encoder = BertEncoder(config)
        self.cls = BertLMPredictionHead(config)
        self.apply(self._init_weights)
        self.tie_weights()

    def _init_weights(self, module):
        """Initialize the weights"""
        if isinstance(module, nn.Linear):
            module.weight.data.normal_(mean=0.0, std=self.config.initializer_range)
            if module.bias is not None:
                module.bias.data.zero_()
        elif isinstance(module, nn.Embedding):
            module.weight.data.normal_(mean=0.0, std=self.config.initializer_range)
            if module.padding_idx is not None:
                module.weight.data[module.padding_idx].zero_()
        elif isinstance(module, nn.LayerNorm):
            module.bias.data.zero_()
            module.weight.data.fill_(1.0)

    def tie_weights(self):
        self.cls.decoder.weight = self.embeddings.word_embeddings.weight

    def get_extended_attention_mask(self, attention_mask, dtype=torch.float32):
        extended_attention_mask = attention_mask[:, None, None, :]
        extended_attention_mask = extended_attention_mask.to(dtype=dtype)  # fp16 compatibility
        extended_attention_mask = (1.0 - extended_attention_mask) * torch.finfo(dtype).min
        return extended_attention_mask

    def forward(self, input_ids, attention_mask=None, token_type_ids=None, labels=None,
                output_attentions=False):
        if attention_mask is None:
            attention_mask = torch.ones(input_ids.shape, device=input_ids.device)
        embedding_output = self.embeddings(input_ids=input_ids, token_type_ids=token_type_ids)
        extended_attention_mask = self.get_extended_attention_mask(
            attention_mask, embedding_output.dtype)
        sequence_output, attentions = self.encoder(
            embedding_output, extended_attention_mask, output_attentions)
        prediction_scores = self.cls(sequence_output)
        masked_lm_loss = None
        if labels is not None:
            loss_fct = nn.CrossEntropyLoss()  # -100 index = padding token
            masked_lm_loss = loss_fct(prediction_scores.view(-1, self.config.vocab_size),
                                      labels.view(-1))
        return masked_lm_loss, prediction_scores, attentions


def torch_mask_tokens(inputs, special_tokens_mask, vocab_size, mlm_probability=0.15):
    """Prepare masked tokens inputs/labels for masked language modeling: 80% MASK,
    10% random, 10% original."""
    labels = inputs.clone()
    # We sample a few tokens in each sequence for MLM training (with probability 0.15)
    probability_matrix = torch.full(labels.shape, mlm_probability)
    probability_matrix.masked_fill_(special_tokens_mask, value=0.0)
    masked_indices = torch.bernoulli(probability_matrix).bool()
    labels[~masked_indices] = -100  # We only compute loss on masked tokens

    # 80% of the time, we replace masked input tokens with tokenizer.mask_token ([MASK])
    indices_replaced = torch.bernoulli(torch.full(labels.shape, 0.8)).bool() & masked_indices
    inputs[indices_replaced] = MASK

    # 10% of the time, we replace masked input tokens with random word
    indices_random = (torch.bernoulli(torch.full(labels.shape, 0.5)).bool()
                      & masked_indices & ~indices_replaced)
    random_words = torch.randint(vocab_size, labels.shape, dtype=torch.long)
    inputs[indices_random] = random_words[indices_random]

    # The rest of the time (10% of the time) we keep the masked input tokens unchanged
    return inputs, labels


def make_corpus(generator, n, vocab_size):
    """Sentence pairs [CLS] a [SEP] b [SEP] PAD...: each sentence counts up from a random
    word, so a masked word is predictable from its neighbours."""
    examples = []
    for _ in range(n):
        la, lb = torch.randint(3, 7, (2,), generator=generator).tolist()
        start = torch.randint(4, vocab_size, (2,), generator=generator).tolist()
        a = [4 + (start[0] - 4 + i) % (vocab_size - 4) for i in range(la)]
        b = [4 + (start[1] - 4 + i) % (vocab_size - 4) for i in range(lb)]
        ids = [CLS] + a + [SEP] + b + [SEP]
        types = [0] * (la + 2) + [1] * (lb + 1)
        examples.append((ids, types))
    return examples


def collate(examples, max_len=16):
    input_ids = torch.full((len(examples), max_len), PAD, dtype=torch.long)
    token_type_ids = torch.zeros((len(examples), max_len), dtype=torch.long)
    attention_mask = torch.zeros((len(examples), max_len), dtype=torch.long)
    for i, (ids, types) in enumerate(examples):
        input_ids[i, :len(ids)] = torch.tensor(ids)
        token_type_ids[i, :len(types)] = torch.tensor(types)
        attention_mask[i, :len(ids)] = 1
    special_tokens_mask = torch.isin(input_ids, torch.tensor(SPECIAL))
    return input_ids, token_type_ids, attention_mask, special_tokens_mask


def main():
    torch.manual_seed(42)
    config = BertConfig()
    model = BertForMaskedLM(config)
    print(model.embeddings)
    print("decoder tied:", model.cls.decoder.weight is model.embeddings.word_embeddings.weight)
    print("position_ids", model.embeddings.position_ids.shape, model.embeddings.position_ids[0, :8])
    print("state_dict has position_ids:", "embeddings.position_ids" in model.state_dict())
    n_params = sum(p.numel() for p in model.parameters())
    print(f"number of parameters: {n_params:,}")

    g = torch.Generator().manual_seed(0)
    corpus = make_corpus(g, 128, config.vocab_size)
    input_ids, token_type_ids, attention_mask, special = collate(corpus[:2])
    print("input_ids", input_ids[0].tolist())
    print("token_type_ids", token_type_ids[0].tolist())
    ext = model.get_extended_attention_mask(attention_mask)
    print("extended mask", ext.shape, ext.dtype, ext[0, 0, 0, -1].item() == torch.finfo(torch.float32).min)

    torch.manual_seed(0)
    probe = torch.full((1000, 16), 0.15)
    print(f"mask fraction {torch.bernoulli(probe).mean().item():.4f}")

    optimizer = torch.optim.AdamW(model.parameters(), lr=5e-3, weight_decay=0.01)
    scheduler = torch.optim.lr_scheduler.LambdaLR(optimizer, lambda s: min(1.0, (s + 1) / 5))
    batch_size = 24
    model.train()
    for step in range(32):
        batch = [corpus[(step * batch_size + i) % len(corpus)] for i in range(batch_size)]
        input_ids, token_type_ids, attention_mask, special = collate(batch)
        inputs, labels = torch_mask_tokens(input_ids.clone(), special, config.vocab_size)
        loss, _, _ = model(inputs, attention_mask=attention_mask,
                           token_type_ids=token_type_ids, labels=labels)
        optimizer.zero_grad()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        scheduler.step()
        if step % 8 == 0 or step == 31:
            print(f"step {step:3d} | lr {scheduler.get_last_lr()[0]:.2e} | loss {loss.item():.4f}")

    model.eval()
    with torch.no_grad():
        input_ids, token_type_ids, attention_mask, special = collate(corpus[:64])
        inputs = input_ids.clone()
        inputs[:, 2] = MASK
        _, scores, attentions = model(inputs, attention_mask, token_type_ids,
                                      output_attentions=True)
        pred = scores[:, 2].argmax(-1)
        acc = (pred == input_ids[:, 2]).float().mean().item()
        print(f"masked token accuracy {acc:.3f}")
        print("attentions", len(attentions), tuple(attentions[0].shape))
        print("padding gets no attention:",
              bool((attentions[0][attention_mask[:, None, None, :].expand_as(attentions[0]) == 0]
                    == 0).all()))
    # the reloaded model (position_ids is not persistent) predicts the same
    sd = model.state_dict()
    model2 = BertForMaskedLM(config)
    print(model2.load_state_dict(sd))
    model2.tie_weights()
    model2.eval()
    with torch.no_grad():
        _, scores2, _ = model2(inputs, attention_mask, token_type_ids)
    print("reloaded model agrees:", torch.allclose(scores, scores2))


if __name__ == "__main__":
    main()
