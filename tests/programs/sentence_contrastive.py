"""Sentence embeddings with contrastive fine-tuning, as sentence-transformers and SimCSE
write them: a small transformer encoder (nn.TransformerEncoder with src_key_padding_mask),
mean pooling with the attention mask (`sum(1) / clamp(min=1e-9)`), F.normalize,
MultipleNegativesRankingLoss (in-batch negatives: cross_entropy(sim / temperature, arange)),
util.cos_sim, a printed cosine similarity matrix, semantic search with torch.topk, and
a state_dict round trip."""
import torch
import torch.nn as nn
import torch.nn.functional as F

WORDS = ("<pad> the a cat kitten dog puppy car truck sits runs drives red small big fast slow "
         "on road mat sofa park").split()
STOI = {w: i for i, w in enumerate(WORDS)}
SYNONYMS = {"cat": "kitten", "kitten": "cat", "dog": "puppy", "puppy": "dog",
            "car": "truck", "truck": "car", "big": "small", "small": "big"}


def tokenize(sentences, max_len=8):
    ids = [[STOI[w] for w in s.split()][:max_len] for s in sentences]
    width = max(len(x) for x in ids)
    input_ids = torch.zeros(len(ids), width, dtype=torch.long)
    attention_mask = torch.zeros(len(ids), width, dtype=torch.long)
    for i, x in enumerate(ids):
        input_ids[i, :len(x)] = torch.tensor(x)
        attention_mask[i, :len(x)] = 1
    return {"input_ids": input_ids, "attention_mask": attention_mask}


def mean_pooling(model_output, attention_mask):
    token_embeddings = model_output[0]  # First element of model_output contains all token embeddings
    input_mask_expanded = attention_mask.unsqueeze(-1).expand(token_embeddings.size()).float()
    return torch.sum(token_embeddings * input_mask_expanded, 1) / torch.clamp(
        input_mask_expanded.sum(1), min=1e-9)


def cos_sim(a, b):
    """Computes the cosine similarity cos_sim(a[i], b[j]) for all i and j."""
    if not isinstance(a, torch.Tensor):
        a = torch.tensor(a)
    if not isinstance(b, torch.Tensor):
        b = torch.tensor(b)
    if len(a.shape) == 1:
        a = a.unsqueeze(0)
    if len(b.shape) == 1:
        b = b.unsqueeze(0)
    a_norm = torch.nn.functional.normalize(a, p=2, dim=1)
    b_norm = torch.nn.functional.normalize(b, p=2, dim=1)
    return torch.mm(a_norm, b_norm.transpose(0, 1))


class Encoder(nn.Module):
    def __init__(self, vocab_size, d_model=32, nhead=4, num_layers=2, max_len=16):
        super().__init__()
        self.embeddings = nn.Embedding(vocab_size, d_model, padding_idx=0)
        self.position = nn.Parameter(torch.zeros(1, max_len, d_model))
        layer = nn.TransformerEncoderLayer(d_model, nhead, dim_feedforward=64, dropout=0.1,
                                           activation="gelu", batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers, enable_nested_tensor=False)
        nn.init.trunc_normal_(self.position, std=0.02)

    def forward(self, input_ids, attention_mask):
        h = self.embeddings(input_ids) + self.position[:, :input_ids.size(1)]
        h = self.encoder(h, src_key_padding_mask=attention_mask == 0)
        return (h,)


class SentenceTransformer(nn.Module):
    def __init__(self, encoder, normalize=True):
        super().__init__()
        self.encoder = encoder
        self.normalize = normalize

    def forward(self, features):
        out = self.encoder(features["input_ids"], features["attention_mask"])
        emb = mean_pooling(out, features["attention_mask"])
        if self.normalize:
            emb = F.normalize(emb, p=2, dim=1)
        return emb

    @torch.no_grad()
    def encode(self, sentences, convert_to_tensor=True):
        self.eval()
        return self(tokenize(sentences))


class MultipleNegativesRankingLoss(nn.Module):
    def __init__(self, model, scale: float = 20.0, similarity_fct=cos_sim):
        super().__init__()
        self.model = model
        self.scale = scale
        self.similarity_fct = similarity_fct
        self.cross_entropy_loss = nn.CrossEntropyLoss()

    def forward(self, anchors, positives):
        embeddings_a = self.model(anchors)
        embeddings_b = self.model(positives)
        scores = self.similarity_fct(embeddings_a, embeddings_b) * self.scale
        # Example a[i] should match with b[i]
        range_labels = torch.arange(0, scores.size(0), device=scores.device)
        return self.cross_entropy_loss(scores, range_labels)


def simcse_loss(z1, z2, temperature=0.05):
    z1 = F.normalize(z1, dim=-1)
    z2 = F.normalize(z2, dim=-1)
    sim = z1 @ z2.T / temperature
    labels = torch.arange(sim.size(0))
    return (F.cross_entropy(sim, labels) + F.cross_entropy(sim.T, labels)) / 2


def random_sentence(g):
    def pick(options):
        return options[int(torch.randint(len(options), (1,), generator=g))]
    adj = pick(["red", "small", "big", "fast", "slow"])
    noun = pick(["cat", "kitten", "dog", "puppy", "car", "truck"])
    verb = {"cat": "sits", "kitten": "sits", "dog": "runs", "puppy": "runs"}.get(noun, "drives")
    place = pick(["mat", "sofa", "park"]) if verb != "drives" else "road"
    return f"the {adj} {noun} {verb} on the {place}"


def paraphrase(sentence):
    return " ".join(SYNONYMS.get(w, w) for w in sentence.split()).replace("the ", "a ", 1)


def main():
    torch.manual_seed(0)
    x = torch.tensor([[[1.0, 2.0], [3.0, 4.0], [100.0, 100.0]]])
    m = torch.tensor([[1, 1, 0]])
    print("mean pooling ignores padding", mean_pooling((x,), m))
    print("all-padding row", mean_pooling((x,), torch.zeros(1, 3, dtype=torch.long)))
    print("normalize", F.normalize(torch.tensor([[3.0, 4.0], [0.0, 0.0]]), dim=1))

    model = SentenceTransformer(Encoder(len(WORDS)))
    print(model.encoder.encoder.layers[0])
    print(f"parameters: {sum(p.numel() for p in model.parameters()):,}")
    loss_fn = MultipleNegativesRankingLoss(model, scale=20.0)
    optimizer = torch.optim.AdamW(model.parameters(), lr=2e-3)
    g = torch.Generator().manual_seed(0)
    model.train()
    for step in range(25):
        anchors = [random_sentence(g) for _ in range(16)]
        positives = [paraphrase(s) for s in anchors]
        loss = loss_fn(tokenize(anchors), tokenize(positives))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 10 == 0 or step == 24:
            print(f"step {step:2d} mnrl loss {loss.item():.4f}")
    # SimCSE: the same batch twice, dropout is the augmentation
    for step in range(4):
        sents = tokenize([random_sentence(g) for _ in range(16)])
        loss = simcse_loss(model(sents), model(sents))
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        if step % 2 == 0 or step == 3:
            print(f"step {step:2d} simcse loss {loss.item():.4f}")

    sentences = ["the red cat sits on the mat", "a red kitten sits on a mat",
                 "the fast car drives on the road", "a fast truck drives on a road"]
    embeddings = model.encode(sentences)
    print("embeddings", tuple(embeddings.shape), "unit norm:",
          torch.allclose(embeddings.norm(dim=1), torch.ones(4), atol=1e-5))
    sim = cos_sim(embeddings, embeddings)
    torch.set_printoptions(precision=3)
    print(sim)
    torch.set_printoptions(profile="default")
    pairs = sim.triu(diagonal=1)
    best = torch.argmax(pairs.flatten()).item()
    print("most similar pair", divmod(best, 4))
    query = model.encode(["a small puppy runs on a park"])
    corpus = model.encode(sentences + ["the big dog runs on the park"])
    scores, idx = torch.topk(cos_sim(query, corpus)[0], k=2)
    print("top hits", idx.tolist(), "best score > second:", bool(scores[0] >= scores[1]))

    state = model.state_dict()
    clone = SentenceTransformer(Encoder(len(WORDS)))
    print(clone.load_state_dict(state))
    print("reloaded model agrees:", torch.allclose(clone.encode(sentences), embeddings,
                                                   atol=1e-6))


if __name__ == "__main__":
    main()
