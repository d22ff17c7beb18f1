"""
makemore part 2 (Karpathy): the MLP character model of Bengio et al. 2003. A block_size=3
context, an embedding table C, a tanh hidden layer, F.cross_entropy, the learning-rate
sweep over torch.linspace exponents, minibatches from torch.randint, split losses under
@torch.no_grad(), and sampling with a seeded torch.Generator.
"""
import random

import torch
import torch.nn.functional as F

# names.txt stand-in: made-up lowercase names from a seeded Python random
random.seed(42)
syllables = ['an', 'el', 'ia', 'ma', 'ri', 'ko', 'la', 'na', 'em', 'ly', 'so', 'ph', 'ja',
             'ck', 'ol', 'iv', 'er', 'ch', 'ar', 'lo', 'th', 'en', 'is', 'ab', 'ella', 'mi',
             'ah', 'ev', 'ey', 'zo', 'qu', 'x', 'w', 'ut', 'dy', 'go', 'be', 'fi']
words = [''.join(random.choice(syllables) for _ in range(random.randint(1, 4)))
         for _ in range(2000)]
print(words[:8])

# build the vocabulary of characters and mappings to/from integers
chars = sorted(list(set(''.join(words))))
stoi = {s: i + 1 for i, s in enumerate(chars)}
stoi['.'] = 0
itos = {i: s for s, i in stoi.items()}
print(itos)

# build the dataset
block_size = 3  # context length: how many characters do we take to predict the next one?


def build_dataset(words):
    X, Y = [], []
    for w in words:
        context = [0] * block_size
        for ch in w + '.':
            ix = stoi[ch]
            X.append(context)
            Y.append(ix)
            context = context[1:] + [ix]  # crop and append

    X = torch.tensor(X)
    Y = torch.tensor(Y)
    print(X.shape, Y.shape)
    return X, Y


random.seed(42)
random.shuffle(words)
n1 = int(0.8 * len(words))
n2 = int(0.9 * len(words))

Xtr, Ytr = build_dataset(words[:n1])
Xdev, Ydev = build_dataset(words[n1:n2])
Xte, Yte = build_dataset(words[n2:])
print(Xtr[:5], Xtr.dtype)

g = torch.Generator().manual_seed(2147483647)
C = torch.randn((27, 2), generator=g)
emb = C[Xtr[:32]]
print(emb.shape)
W1 = torch.randn((6, 100), generator=g)
b1 = torch.randn(100, generator=g)
h = torch.tanh(emb.view(-1, 6) @ W1 + b1)
print(h.shape)
print(torch.cat(torch.unbind(emb, 1), 1).shape, torch.cat([emb[:, 0, :], emb[:, 1, :], emb[:, 2, :]], 1).shape)

g = torch.Generator().manual_seed(2147483647)  # for reproducibility
C = torch.randn((27, 10), generator=g)
W1 = torch.randn((30, 200), generator=g)
b1 = torch.randn(200, generator=g)
W2 = torch.randn((200, 27), generator=g)
b2 = torch.randn(27, generator=g)
parameters = [C, W1, b1, W2, b2]
print(sum(p.nelement() for p in parameters))  # number of parameters in total
for p in parameters:
    p.requires_grad = True

# the learning-rate sweep
lre = torch.linspace(-3, 0, 1000)
lrs = 10**lre
print(lre[:3], lrs[-3:])

lri = []
lossi = []
stepi = []

for i in range(200):

    # minibatch construct
    ix = torch.randint(0, Xtr.shape[0], (32,), generator=g)

    # forward pass
    emb = C[Xtr[ix]]  # (32, 3, 10)
    h = torch.tanh(emb.view(-1, 30) @ W1 + b1)  # (32, 200)
    logits = h @ W2 + b2  # (32, 27)
    loss = F.cross_entropy(logits, Ytr[ix])
    if i % 20 == 0:
        print(f'{i:4d} {loss.item():.4f}')

    # backward pass
    for p in parameters:
        p.grad = None
    loss.backward()

    # update
    lr = 0.1 if i < 150 else 0.01
    for p in parameters:
        p.data += -lr * p.grad

    # track stats
    stepi.append(i)
    lossi.append(loss.log10().item())

print(loss.item())
print(f'mean log10 loss: first 50 {sum(lossi[:50]) / 50:.4f}, last 50 {sum(lossi[-50:]) / 50:.4f}')


@torch.no_grad()  # this decorator disables gradient tracking
def split_loss(split):
    x, y = {
        'train': (Xtr, Ytr),
        'val': (Xdev, Ydev),
        'test': (Xte, Yte),
    }[split]
    emb = C[x]  # (N, block_size, n_embd)
    embcat = emb.view(emb.shape[0], -1)  # concat into (N, block_size * n_embd)
    h = torch.tanh(embcat @ W1 + b1)  # (N, n_hidden)
    logits = h @ W2 + b2  # (N, vocab_size)
    loss = F.cross_entropy(logits, y)
    print(split, loss.item())


split_loss('train')
split_loss('val')

emb = C[Xdev]
h = torch.tanh(emb.view(-1, 30) @ W1 + b1)
logits = h @ W2 + b2
loss = F.cross_entropy(logits, Ydev)
print(loss, loss.requires_grad)

# sample from the model
g = torch.Generator().manual_seed(2147483647 + 10)

for _ in range(10):

    out = []
    context = [0] * block_size  # initialize with all ...
    while True:
        emb = C[torch.tensor([context])]  # (1,block_size,d)
        h = torch.tanh(emb.view(1, -1) @ W1 + b1)
        logits = h @ W2 + b2
        probs = F.softmax(logits, dim=1)
        ix = torch.multinomial(probs, num_samples=1, generator=g).item()
        context = context[1:] + [ix]
        out.append(ix)
        if ix == 0:
            break

    print(''.join(itos[i] for i in out))
