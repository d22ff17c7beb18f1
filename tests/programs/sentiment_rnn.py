"""bentrevett/pytorch-sentiment-analysis, "Upgraded Sentiment Analysis" (notebook 2) in
one script: a bidirectional 2-layer LSTM over packed padded sequences
(pack_padded_sequence(..., text_lengths.to('cpu'), enforce_sorted=False),
pad_packed_sequence), "pretrained" embeddings copied in with the <unk>/<pad> rows
zeroed, BCEWithLogitsLoss, binary_accuracy with torch.round(torch.sigmoid(...)),
count_parameters, epoch_time, the best-validation checkpoint and predict_sentiment.
A NumPy-made review corpus replaces torchtext's IMDb."""
import argparse
import random
import time

import numpy as np
import torch
import torch.nn as nn
import torch.optim as optim

parser = argparse.ArgumentParser()
parser.add_argument('--epochs', type=int, default=3)
args = parser.parse_args()

SEED = 1234

random.seed(SEED)
np.random.seed(SEED)
torch.manual_seed(SEED)
torch.backends.cudnn.deterministic = True

# -- a tiny review corpus: positive and negative words decide the label ----------------
POS = ['great', 'excellent', 'loved', 'wonderful', 'best', 'fun']
NEG = ['awful', 'boring', 'worst', 'hated', 'terrible', 'dull']
FILLER = ['the', 'movie', 'film', 'was', 'a', 'plot', 'actors', 'and', 'it', 'story', 'i',
          'this', 'very', 'quite', 'really', 'but']
itos = ['<unk>', '<pad>'] + sorted(set(POS + NEG + FILLER))
stoi = {w: i for i, w in enumerate(itos)}
UNK_IDX, PAD_IDX = stoi['<unk>'], stoi['<pad>']


def make_reviews(n, rng):
    reviews = []
    for _ in range(n):
        label = rng.randint(0, 2)
        words = list(rng.choice(FILLER, rng.randint(3, 12)))
        for _ in range(rng.randint(1, 3)):
            words.insert(rng.randint(0, len(words) + 1), rng.choice(POS if label else NEG))
        reviews.append((words, float(label)))
    return reviews


rng = np.random.RandomState(0)
train_data, valid_data, test_data = make_reviews(384, rng), make_reviews(96, rng), make_reviews(96, rng)


def batches(data, batch_size, shuffle):
    order = list(range(len(data)))
    if shuffle:
        random.shuffle(order)
    for i in range(0, len(order), batch_size):
        chunk = [data[j] for j in order[i:i + batch_size]]
        lengths = torch.tensor([len(words) for words, _ in chunk])
        text = torch.full((int(lengths.max()), len(chunk)), PAD_IDX, dtype=torch.long)
        for b, (words, _) in enumerate(chunk):
            text[:len(words), b] = torch.tensor([stoi.get(w, UNK_IDX) for w in words])
        yield (text, lengths), torch.tensor([label for _, label in chunk])


class RNN(nn.Module):
    def __init__(self, vocab_size, embedding_dim, hidden_dim, output_dim, n_layers,
                 bidirectional, dropout, pad_idx):

        super().__init__()

        self.embedding = nn.Embedding(vocab_size, embedding_dim, padding_idx=pad_idx)

        self.rnn = nn.LSTM(embedding_dim,
                           hidden_dim,
                           num_layers=n_layers,
                           bidirectional=bidirectional,
                           dropout=dropout)

        self.fc = nn.Linear(hidden_dim * 2, output_dim)

        self.dropout = nn.Dropout(dropout)

    def forward(self, text, text_lengths):

        # text = [sent len, batch size]

        embedded = self.dropout(self.embedding(text))

        # embedded = [sent len, batch size, emb dim]

        # pack sequence
        # lengths need to be on CPU!
        packed_embedded = nn.utils.rnn.pack_padded_sequence(embedded, text_lengths.to('cpu'),
                                                            enforce_sorted=False)

        packed_output, (hidden, cell) = self.rnn(packed_embedded)

        # unpack sequence
        output, output_lengths = nn.utils.rnn.pad_packed_sequence(packed_output)

        # output = [sent len, batch size, hid dim * num directions]
        # output over padding tokens are zero tensors

        # hidden = [num layers * num directions, batch size, hid dim]
        # cell = [num layers * num directions, batch size, hid dim]

        # concat the final forward (hidden[-2,:,:]) and backward (hidden[-1,:,:]) hidden layers
        # and apply dropout

        hidden = self.dropout(torch.cat((hidden[-2, :, :], hidden[-1, :, :]), dim=1))

        # hidden = [batch size, hid dim * num directions]

        return self.fc(hidden)


INPUT_DIM = len(itos)
EMBEDDING_DIM = 16
HIDDEN_DIM = 24
OUTPUT_DIM = 1
N_LAYERS = 2
BIDIRECTIONAL = True
DROPOUT = 0.3

model = RNN(INPUT_DIM,
            EMBEDDING_DIM,
            HIDDEN_DIM,
            OUTPUT_DIM,
            N_LAYERS,
            BIDIRECTIONAL,
            DROPOUT,
            PAD_IDX)


def count_parameters(model):
    return sum(p.numel() for p in model.parameters() if p.requires_grad)


print(f'The model has {count_parameters(model):,} trainable parameters')

pretrained_embeddings = torch.from_numpy(np.random.RandomState(5).randn(INPUT_DIM, EMBEDDING_DIM).astype(np.float32))
print(pretrained_embeddings.shape)
model.embedding.weight.data.copy_(pretrained_embeddings)
model.embedding.weight.data[UNK_IDX] = torch.zeros(EMBEDDING_DIM)
model.embedding.weight.data[PAD_IDX] = torch.zeros(EMBEDDING_DIM)
print(model.embedding.weight.data[:3, :4])

optimizer = optim.Adam(model.parameters(), lr=5e-3)
criterion = nn.BCEWithLogitsLoss()
device = torch.device('cuda' if torch.cuda.is_available() else 'cpu')
model = model.to(device)
criterion = criterion.to(device)


def binary_accuracy(preds, y):
    """
    Returns accuracy per batch, i.e. if you get 8/10 right, this returns 0.8, NOT 8
    """

    # round predictions to the closest integer
    rounded_preds = torch.round(torch.sigmoid(preds))
    correct = (rounded_preds == y).float()  # convert into float for division
    acc = correct.sum() / len(correct)
    return acc


def train(model, iterator, optimizer, criterion):

    epoch_loss = 0
    epoch_acc = 0
    n = 0

    model.train()

    for (text, text_lengths), label in iterator:

        optimizer.zero_grad()

        predictions = model(text, text_lengths).squeeze(1)

        loss = criterion(predictions, label)

        acc = binary_accuracy(predictions, label)

        loss.backward()

        optimizer.step()

        epoch_loss += loss.item()
        epoch_acc += acc.item()
        n += 1

    return epoch_loss / n, epoch_acc / n


def evaluate(model, iterator, criterion):

    epoch_loss = 0
    epoch_acc = 0
    n = 0

    model.eval()

    with torch.no_grad():

        for (text, text_lengths), label in iterator:

            predictions = model(text, text_lengths).squeeze(1)

            loss = criterion(predictions, label)

            acc = binary_accuracy(predictions, label)

            epoch_loss += loss.item()
            epoch_acc += acc.item()
            n += 1

    return epoch_loss / n, epoch_acc / n


def epoch_time(start_time, end_time):
    elapsed_time = end_time - start_time
    elapsed_mins = int(elapsed_time / 60)
    elapsed_secs = int(elapsed_time - (elapsed_mins * 60))
    return elapsed_mins, elapsed_secs


N_EPOCHS = args.epochs

best_valid_loss = float('inf')

for epoch in range(N_EPOCHS):

    start_time = time.time()

    train_loss, train_acc = train(model, batches(train_data, 32, True), optimizer, criterion)
    valid_loss, valid_acc = evaluate(model, batches(valid_data, 32, False), criterion)

    end_time = time.time()

    epoch_mins, epoch_secs = epoch_time(start_time, end_time)

    if valid_loss < best_valid_loss:
        best_valid_loss = valid_loss
        torch.save(model.state_dict(), 'tut2-model.pt')

    print(f'Epoch: {epoch+1:02} | Epoch Time: {epoch_mins}m {epoch_secs}s')
    print(f'\tTrain Loss: {train_loss:.3f} | Train Acc: {train_acc*100:.2f}%')
    print(f'\t Val. Loss: {valid_loss:.3f} |  Val. Acc: {valid_acc*100:.2f}%')

model.load_state_dict(torch.load('tut2-model.pt'))

test_loss, test_acc = evaluate(model, batches(test_data, 32, False), criterion)

print(f'Test Loss: {test_loss:.3f} | Test Acc: {test_acc*100:.2f}%')


def predict_sentiment(model, sentence):
    model.eval()
    tokenized = sentence.split()
    indexed = [stoi.get(t, UNK_IDX) for t in tokenized]
    length = [len(indexed)]
    tensor = torch.LongTensor(indexed).to(device)
    tensor = tensor.unsqueeze(1)
    length_tensor = torch.LongTensor(length)
    prediction = torch.sigmoid(model(tensor, length_tensor))
    return prediction.item()


print(f"{predict_sentiment(model, 'this film is terrible'):.4f}")
print(f"{predict_sentiment(model, 'this film is great'):.4f}")
