"""Tokenizer-level utilities on tensors, as minbpe / the GPT-2 encoder.py and Hugging Face's
data collators write them: a byte-level BPE trained on a tiny corpus with Python dicts
(get_stats / merge over UTF-8 bytes; torch.frombuffer for the raw bytes), encode / decode round trips, batches padded with
torch.nn.utils.rnn.pad_sequence(batch_first=True, padding_value=...), attention masks,
DataCollatorForLanguageModeling (causal: labels = input_ids with pad positions set to -100),
group_texts-style packing of the concatenated ids with torch.cat + .view(-1, block_size),
a DataLoader with the collator, and a bag-of-tokens model trained on the packed blocks."""
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.nn.utils.rnn import pad_sequence
from torch.utils.data import DataLoader, Dataset


def get_stats(ids, counts=None):
    """{(a, b): count} of consecutive pairs."""
    counts = {} if counts is None else counts
    for pair in zip(ids, ids[1:]):  # iterate consecutive elements
        counts[pair] = counts.get(pair, 0) + 1
    return counts


def merge(ids, pair, idx):
    """Replace all consecutive occurrences of pair with the new token idx."""
    newids = []
    i = 0
    while i < len(ids):
        if ids[i] == pair[0] and i < len(ids) - 1 and ids[i + 1] == pair[1]:
            newids.append(idx)
            i += 2
        else:
            newids.append(ids[i])
            i += 1
    return newids


class BasicTokenizer:
    def __init__(self):
        self.merges = {}  # (int, int) -> int
        self.vocab = {idx: bytes([idx]) for idx in range(256)}
        self.special_tokens = {}

    def train(self, text, vocab_size, verbose=False):
        assert vocab_size >= 256
        num_merges = vocab_size - 256
        text_bytes = text.encode("utf-8")  # raw bytes
        ids = list(text_bytes)  # list of integers in range 0..255
        merges = {}
        vocab = {idx: bytes([idx]) for idx in range(256)}
        for i in range(num_merges):
            stats = get_stats(ids)
            pair = max(stats, key=stats.get)
            idx = 256 + i
            ids = merge(ids, pair, idx)
            merges[pair] = idx
            vocab[idx] = vocab[pair[0]] + vocab[pair[1]]
            if verbose:
                print(f"merge {i + 1}/{num_merges}: {pair} -> {idx} ({vocab[idx]}) had "
                      f"{stats[pair]} occurrences")
        self.merges = merges
        self.vocab = vocab

    def register_special_tokens(self, special_tokens):
        self.special_tokens = special_tokens
        for token, idx in special_tokens.items():
            self.vocab[idx] = token.encode("utf-8")

    def decode(self, ids):
        text_bytes = b"".join(self.vocab[idx] for idx in ids)
        return text_bytes.decode("utf-8", errors="replace")

    def encode(self, text):
        text_bytes = text.encode("utf-8")
        ids = list(text_bytes)
        while len(ids) >= 2:
            # find the pair with the lowest merge index
            stats = get_stats(ids)
            pair = min(stats, key=lambda p: self.merges.get(p, float("inf")))
            if pair not in self.merges:
                break  # nothing else can be merged anymore
            idx = self.merges[pair]
            ids = merge(ids, pair, idx)
        return ids


CORPUS = """the cat sat on the mat. the dog sat on the log. a cat and a dog met on the mat.
the cat saw the dog and the dog saw the cat. the mat was flat and the log was long.
café crème for the cat, thé for the dog — naïve résumé of a cozy café.""".replace("\n", " ")


class LineDataset(Dataset):
    def __init__(self, tokenizer, lines):
        self.examples = [torch.tensor(tokenizer.encode(line), dtype=torch.long)
                         for line in lines]

    def __len__(self):
        return len(self.examples)

    def __getitem__(self, i):
        return self.examples[i]


class DataCollatorForLanguageModeling:
    """The causal-LM (mlm=False) collator: pad to the longest, attention mask, labels with
    -100 where padded."""

    def __init__(self, pad_token_id):
        self.pad_token_id = pad_token_id

    def __call__(self, examples):
        input_ids = pad_sequence(examples, batch_first=True, padding_value=self.pad_token_id)
        lengths = torch.tensor([len(e) for e in examples])
        attention_mask = (torch.arange(input_ids.size(1))[None, :] < lengths[:, None]).long()
        labels = input_ids.clone()
        labels[attention_mask == 0] = -100
        return {"input_ids": input_ids, "attention_mask": attention_mask, "labels": labels}


def group_texts(ids_list, block_size):
    concatenated = torch.cat(ids_list)
    total_length = (concatenated.size(0) // block_size) * block_size
    return concatenated[:total_length].view(-1, block_size)


class TinyLM(nn.Module):
    """A bigram-plus-context model: enough to train on the packed blocks."""

    def __init__(self, vocab_size, dim=32):
        super().__init__()
        self.emb = nn.Embedding(vocab_size, dim)
        self.ctx = nn.EmbeddingBag(vocab_size, dim, mode="mean")
        self.out = nn.Linear(dim, vocab_size)

    def forward(self, idx):
        b, t = idx.shape
        h = self.emb(idx)
        ctx = self.ctx(idx).unsqueeze(1).expand(b, t, -1)
        return self.out(torch.tanh(h + 0.1 * ctx))


def main():
    torch.manual_seed(0)
    tok = BasicTokenizer()
    tok.train(CORPUS, 256 + 24, verbose=False)
    print("merges:", list(tok.merges.items())[:6])
    print("vocab 256..261:", [tok.vocab[i] for i in range(256, 262)])
    text = "the café cat sat on the log."
    raw = torch.frombuffer(bytearray(text.encode("utf-8")), dtype=torch.uint8)
    print("bytes as a tensor:", raw[:8], raw.dtype, len(raw))
    ids = tok.encode(text)
    print("encoded:", ids)
    print("round trip:", tok.decode(ids) == text, f"{len(text.encode('utf-8'))} bytes ->",
          len(ids), "tokens")
    pad_id = 256 + 24
    tok.register_special_tokens({"<|endoftext|>": pad_id})
    vocab_size = len(tok.vocab)
    print("vocab size", vocab_size)

    lines = [s.strip() + "." for s in CORPUS.split(".") if s.strip()]
    ds = LineDataset(tok, lines)
    print("lengths", [len(e) for e in ds.examples])
    try:  # why the collator pads
        torch.tensor([e.tolist() for e in ds.examples[:2]])
    except ValueError as err:
        print("unpadded batch:", err)
    collator = DataCollatorForLanguageModeling(pad_id)
    batch = collator([ds[0], ds[1], ds[4]])
    print({k: tuple(v.shape) for k, v in batch.items()})
    print(batch["input_ids"])
    print(batch["attention_mask"].sum(1), batch["labels"][2])
    padded = pad_sequence([torch.tensor([1., 2.]), torch.tensor([3.])], padding_value=-1.0)
    print("time-major pad_sequence", padded, padded.shape)
    left = pad_sequence([torch.tensor([1, 2, 3]), torch.tensor([4])], batch_first=True,
                        padding_value=0, padding_side="left")
    print("left padded", left)

    blocks = group_texts([torch.cat([e, torch.tensor([pad_id])]) for e in ds.examples], 16)
    print("packed blocks", blocks.shape, blocks.dtype, "kept", blocks.numel(), "of",
          sum(len(e) + 1 for e in ds.examples))

    loader = DataLoader(ds, batch_size=3, shuffle=True, collate_fn=collator,
                        generator=torch.Generator().manual_seed(0))
    print("loader batches", [tuple(b["input_ids"].shape) for b in loader])

    model = TinyLM(vocab_size)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    for epoch in range(30):
        perm = torch.randperm(blocks.size(0))
        x = blocks[perm]
        logits = model(x[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, vocab_size), x[:, 1:].reshape(-1))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if epoch % 10 == 0 or epoch == 29:
            print(f"epoch {epoch} loss {loss.item():.4f}")
    # masked loss on a collated batch: -100 positions are ignored
    batch = collator([ds[i] for i in range(4)])
    with torch.no_grad():
        logits = model(batch["input_ids"])
        loss = F.cross_entropy(logits[:, :-1].reshape(-1, vocab_size),
                               batch["labels"][:, 1:].reshape(-1), ignore_index=-100)
        n = (batch["labels"][:, 1:] != -100).sum().item()
    print(f"collated loss over {n} tokens {loss.item():.4f}")


if __name__ == "__main__":
    main()
