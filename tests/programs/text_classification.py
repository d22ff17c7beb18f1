# The "Text classification with the torchtext library" tutorial: an EmbeddingBag + Linear
# model over offsets-batched token ids, collate_batch building (label, text, offsets),
# SGD with StepLR(1.0, gamma=0.1) stepped when validation accuracy stalls,
# clip_grad_norm_, random_split of the training set. Made-up "news" sentences and a
# plain-Python tokenizer/vocab stand in for AG_NEWS and torchtext.
import random
import time
from collections import Counter

import torch
from torch import nn
from torch.utils.data import DataLoader
from torch.utils.data.dataset import random_split

device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

TOPICS = {
    1: ['election', 'minister', 'parliament', 'vote', 'government', 'policy', 'treaty'],
    2: ['match', 'goal', 'season', 'coach', 'league', 'player', 'score'],
    3: ['market', 'shares', 'profit', 'bank', 'investors', 'prices', 'trade'],
    4: ['software', 'chip', 'internet', 'computer', 'phone', 'data', 'robot'],
}
FILLER = ['the', 'a', 'in', 'on', 'after', 'new', 'said', 'today', 'report', 'week']


def make_split(n, seed):
    rnd = random.Random(seed)
    rows = []
    for _ in range(n):
        label = rnd.randint(1, 4)
        words = rnd.choices(TOPICS[label], k=3) + rnd.choices(FILLER, k=5)
        rnd.shuffle(words)
        rows.append((label, ' '.join(words)))
    return rows


train_iter, test_iter = make_split(1600, 0), make_split(400, 1)


def tokenizer(line):
    return line.lower().split()


def yield_tokens(data_iter):
    for _, text in data_iter:
        yield tokenizer(text)


counter = Counter(tok for toks in yield_tokens(train_iter) for tok in toks)
itos = ['<unk>'] + sorted(counter)
stoi = {tok: i for i, tok in enumerate(itos)}


def vocab(tokens):
    return [stoi.get(tok, 0) for tok in tokens]


def text_pipeline(x):
    return vocab(tokenizer(x))


def label_pipeline(x):
    return int(x) - 1


def collate_batch(batch):
    label_list, text_list, offsets = [], [], [0]
    for _label, _text in batch:
        label_list.append(label_pipeline(_label))
        processed_text = torch.tensor(text_pipeline(_text), dtype=torch.int64)
        text_list.append(processed_text)
        offsets.append(processed_text.size(0))
    label_list = torch.tensor(label_list, dtype=torch.int64)
    offsets = torch.tensor(offsets[:-1]).cumsum(dim=0)
    text_list = torch.cat(text_list)
    return label_list.to(device), text_list.to(device), offsets.to(device)


class TextClassificationModel(nn.Module):
    def __init__(self, vocab_size, embed_dim, num_class):
        super(TextClassificationModel, self).__init__()
        self.embedding = nn.EmbeddingBag(vocab_size, embed_dim, sparse=False)
        self.fc = nn.Linear(embed_dim, num_class)
        self.init_weights()

    def init_weights(self):
        initrange = 0.5
        self.embedding.weight.data.uniform_(-initrange, initrange)
        self.fc.weight.data.uniform_(-initrange, initrange)
        self.fc.bias.data.zero_()

    def forward(self, text, offsets):
        embedded = self.embedding(text, offsets)
        return self.fc(embedded)


torch.manual_seed(0)
num_class = len(set([label for (label, text) in train_iter]))
vocab_size = len(itos)
emsize = 64
model = TextClassificationModel(vocab_size, emsize, num_class).to(device)


def train(dataloader):
    model.train()
    total_acc, total_count = 0, 0
    log_interval = 10
    start_time = time.time()

    for idx, (label, text, offsets) in enumerate(dataloader):
        optimizer.zero_grad()
        predicted_label = model(text, offsets)
        loss = criterion(predicted_label, label)
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 0.1)
        optimizer.step()
        total_acc += (predicted_label.argmax(1) == label).sum().item()
        total_count += label.size(0)
        if idx % log_interval == 0 and idx > 0:
            elapsed = time.time() - start_time
            print(
                "| epoch {:3d} | {:5d}/{:5d} batches "
                "| accuracy {:8.3f}".format(
                    epoch, idx, len(dataloader), total_acc / total_count
                )
            )
            total_acc, total_count = 0, 0
            start_time = time.time()


def evaluate(dataloader):
    model.eval()
    total_acc, total_count = 0, 0

    with torch.no_grad():
        for idx, (label, text, offsets) in enumerate(dataloader):
            predicted_label = model(text, offsets)
            loss = criterion(predicted_label, label)
            total_acc += (predicted_label.argmax(1) == label).sum().item()
            total_count += label.size(0)
    return total_acc / total_count


# Hyperparameters
EPOCHS = 4  # epoch
LR = 5  # learning rate
BATCH_SIZE = 64  # batch size for training

criterion = torch.nn.CrossEntropyLoss()
optimizer = torch.optim.SGD(model.parameters(), lr=LR)
scheduler = torch.optim.lr_scheduler.StepLR(optimizer, 1.0, gamma=0.1)
total_accu = None
train_dataset = train_iter
test_dataset = test_iter
num_train = int(len(train_dataset) * 0.95)
split_train_, split_valid_ = random_split(
    train_dataset, [num_train, len(train_dataset) - num_train]
)

train_dataloader = DataLoader(
    split_train_, batch_size=BATCH_SIZE, shuffle=True, collate_fn=collate_batch
)
valid_dataloader = DataLoader(
    split_valid_, batch_size=BATCH_SIZE, shuffle=True, collate_fn=collate_batch
)
test_dataloader = DataLoader(
    test_dataset, batch_size=BATCH_SIZE, shuffle=True, collate_fn=collate_batch
)

for epoch in range(1, EPOCHS + 1):
    epoch_start_time = time.time()
    train(train_dataloader)
    accu_val = evaluate(valid_dataloader)
    if total_accu is not None and total_accu > accu_val:
        scheduler.step()
    else:
        total_accu = accu_val
    print("-" * 59)
    print(
        "| end of epoch {:3d} | time: {:5.2f}s | "
        "valid accuracy {:8.3f} ".format(
            epoch, time.time() - epoch_start_time, accu_val
        )
    )
    print("-" * 59)

print("Checking the results of test dataset.")
accu_test = evaluate(test_dataloader)
print("test accuracy {:8.3f}".format(accu_test))

ag_news_label = {1: "World", 2: "Sports", 3: "Business", 4: "Sci/Tec"}


def predict(text, text_pipeline):
    with torch.no_grad():
        text = torch.tensor(text_pipeline(text))
        output = model(text, torch.tensor([0]))
        return output.argmax(1).item() + 1


ex_text_str = "the coach said the league season starts after the match"
model = model.to("cpu")
print("This is a %s news" % ag_news_label[predict(ex_text_str, text_pipeline)])
