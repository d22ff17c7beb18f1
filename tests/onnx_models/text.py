"""A token classifier (int64 input) for the `ember export` tests."""

from ember import nn


class TextClassifier(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = nn.Embedding(30, 8)
        self.lstm = nn.LSTM(8, 12, batch_first=True)
        self.head = nn.Linear(12, 3)

    def forward(self, tokens):
        out, _ = self.lstm(self.embed(tokens))
        return self.head(out.mean(1))
