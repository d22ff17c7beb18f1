"""Hugging Face transformers models built from configs (no downloads): GPT-2 and BERT
forward with labels, backward, an optimizer step, greedy generation, attention masks,
and save_pretrained / from_pretrained through safetensors."""
import os
import sys

import torch
from transformers import (
    BertConfig,
    BertForSequenceClassification,
    GPT2Config,
    GPT2LMHeadModel,
    LlamaConfig,
    LlamaForCausalLM,
)
from transformers.utils import logging

logging.set_verbosity_error()
root = sys.argv[1] if len(sys.argv) > 1 else "."
torch.manual_seed(0)
ids = torch.randint(0, 100, (2, 10))
mask = torch.ones_like(ids)
mask[1, 7:] = 0

gpt = GPT2LMHeadModel(GPT2Config(n_layer=2, n_head=2, n_embd=32, vocab_size=100,
                                 n_positions=64))
out = gpt(ids, attention_mask=mask, labels=ids)
print("gpt2 loss", round(out.loss.item(), 4), tuple(out.logits.shape))
out.loss.backward()
opt = torch.optim.AdamW(gpt.parameters(), lr=1e-3)
opt.step()
print("grad", round(gpt.transformer.wte.weight.grad.norm().item(), 4))
gpt.eval()
with torch.no_grad():
    gen = gpt.generate(ids[:, :3], attention_mask=mask[:, :3], max_new_tokens=5,
                       do_sample=False, pad_token_id=0)
print("generated", gen.tolist())

bert = BertForSequenceClassification(BertConfig(num_hidden_layers=2, hidden_size=32,
                                                num_attention_heads=2, intermediate_size=64,
                                                vocab_size=100, num_labels=3))
res = bert(ids, attention_mask=mask, labels=torch.tensor([0, 2]))
print("bert loss", round(res.loss.item(), 4), tuple(res.logits.shape))

llama = LlamaForCausalLM(LlamaConfig(hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                                     num_attention_heads=4, num_key_value_heads=2,
                                     vocab_size=100, max_position_embeddings=64))
print("llama loss", round(llama(ids, labels=ids).loss.item(), 4))

path = os.path.join(root, "gpt2")
gpt.save_pretrained(path)
print(sorted(os.listdir(path)))
again = GPT2LMHeadModel.from_pretrained(path)
print("reloaded", all(torch.equal(a, b) for a, b in zip(gpt.state_dict().values(),
                                                          again.state_dict().values())))
