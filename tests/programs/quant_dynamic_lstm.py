# Dynamic quantization of an LSTM word language model and of a Linear classifier, after
# PyTorch's "(beta) Dynamic Quantization on an LSTM Word Language Model" tutorial: the
# model is printed before and after torch.quantization.quantize_dynamic, its size on disk
# compared, and the loss of both on the same batches.
import os
import time

import torch
import torch.nn as nn
import torch.nn.functional as F


class LSTMModel(nn.Module):
    """Container module with an encoder, a recurrent module, and a decoder."""

    def __init__(self, ntoken, ninp, nhid, nlayers, dropout=0.5):
        super(LSTMModel, self).__init__()
        self.drop = nn.Dropout(dropout)
        self.encoder = nn.Embedding(ntoken, ninp)
        self.rnn = nn.LSTM(ninp, nhid, nlayers, dropout=dropout)
        self.decoder = nn.Linear(nhid, ntoken)
        self.init_weights()
        self.nhid = nhid
        self.nlayers = nlayers

    def init_weights(self):
        initrange = 0.1
        self.encoder.weight.data.uniform_(-initrange, initrange)
        self.decoder.bias.data.zero_()
        self.decoder.weight.data.uniform_(-initrange, initrange)

    def forward(self, input, hidden):
        emb = self.drop(self.encoder(input))
        output, hidden = self.rnn(emb, hidden)
        output = self.drop(output)
        decoded = self.decoder(output)
        return decoded, hidden

    def init_hidden(self, bsz):
        weight = next(self.parameters())
        return (weight.new_zeros(self.nlayers, bsz, self.nhid),
                weight.new_zeros(self.nlayers, bsz, self.nhid))


def batchify(data, bsz):
    nbatch = data.size(0) // bsz
    data = data.narrow(0, 0, nbatch * bsz)
    return data.view(bsz, -1).t().contiguous()


bptt = 12


def get_batch(source, i):
    seq_len = min(bptt, len(source) - 1 - i)
    data = source[i:i + seq_len]
    target = source[i + 1:i + 1 + seq_len].reshape(-1)
    return data, target


def repackage_hidden(h):
    """Wraps hidden states in new Tensors, to detach them from their history."""
    if isinstance(h, torch.Tensor):
        return h.detach()
    else:
        return tuple(repackage_hidden(v) for v in h)


def evaluate(model_, data_source):
    model_.eval()
    total_loss = 0.
    hidden = model_.init_hidden(eval_batch_size)
    with torch.no_grad():
        for i in range(0, data_source.size(0) - 1, bptt):
            data, targets = get_batch(data_source, i)
            output, hidden = model_(data, hidden)
            hidden = repackage_hidden(hidden)
            output_flat = output.view(-1, ntokens)
            total_loss += len(data) * criterion(output_flat, targets).item()
    return total_loss / (len(data_source) - 1)


def print_size_of_model(model):
    torch.save(model.state_dict(), "temp.p")
    print('Size (MB):', os.path.getsize("temp.p") / 1e6)
    os.remove('temp.p')


torch.manual_seed(0)
ntokens = 50
# a toy corpus: a repeating pattern of tokens with some noise
g = torch.Generator().manual_seed(1)
corpus = (torch.arange(600) * 7 % ntokens + torch.randint(0, 3, (600,), generator=g)) % ntokens
eval_batch_size = 4
train_data = batchify(corpus[:480], 8)
test_data = batchify(corpus[480:], eval_batch_size)

model = LSTMModel(ntoken=ntokens, ninp=32, nhid=64, nlayers=2, dropout=0.2)
criterion = nn.CrossEntropyLoss()
optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
for epoch in range(1, 6):
    model.train()
    hidden = model.init_hidden(8)
    for batch, i in enumerate(range(0, train_data.size(0) - 1, bptt)):
        data, targets = get_batch(train_data, i)
        hidden = repackage_hidden(hidden)
        model.zero_grad()
        output, hidden = model(data, hidden)
        loss = criterion(output.view(-1, ntokens), targets)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.25)
        optimizer.step()
    print(f"| epoch {epoch:3d} | train loss {loss.item():5.2f}")

print(model)
quantized_model = torch.quantization.quantize_dynamic(
    model, {nn.LSTM, nn.Linear}, dtype=torch.qint8
)
print(quantized_model)

print_size_of_model(model)
print_size_of_model(quantized_model)


def time_model_evaluation(model, test_data):
    s = time.time()
    loss = evaluate(model, test_data)
    elapsed = time.time() - s
    print('''loss: {0:.3f}\nelapsed time (seconds): {1:.1f}'''.format(loss, elapsed))
    return loss


float_loss = time_model_evaluation(model, test_data)
quant_loss = time_model_evaluation(quantized_model, test_data)
print(f"loss difference: {abs(float_loss - quant_loss):.4f}")

# the BERT tutorial's way: only the Linear layers of a classifier head
head = nn.Sequential(nn.Linear(64, 32), nn.ReLU(), nn.Linear(32, 2))
qhead = torch.ao.quantization.quantize_dynamic(head, {torch.nn.Linear}, dtype=torch.qint8)
print(qhead)
x = torch.randn(16, 64)
with torch.no_grad():
    ref, out = head(x), qhead(x)
print(f"max abs difference: {(ref - out).abs().max().item():.4f}")
print(f"argmax agreement: {(ref.argmax(1) == out.argmax(1)).float().mean().item():.2f}")
print(qhead[0].weight().dtype, qhead[0].weight().qscheme())
