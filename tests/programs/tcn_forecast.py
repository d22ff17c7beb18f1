"""Time-series forecasting and anomaly detection as their tutorials write them: a
Temporal Convolutional Network (locuslab/TCN's TemporalBlock: causal nn.Conv1d with
padding=(k-1)*d chomped off the right, weight-normalised through
torch.nn.utils.parametrizations.weight_norm, residual 1x1 downsample) for multi-step
forecasting of a MinMax-scaled series cut into windows by Tensor.unfold, reporting the
RMSE in the series' units; then an LSTM autoencoder (after curiousily's "Time Series
Anomaly Detection using LSTM Autoencoders") whose reconstruction-error threshold is
torch.quantile of the training errors.
"""
import argparse
import copy

import numpy as np
import torch
import torch.nn as nn
from torch.nn.utils.parametrizations import weight_norm


class Chomp1d(nn.Module):
    def __init__(self, chomp_size):
        super(Chomp1d, self).__init__()
        self.chomp_size = chomp_size

    def forward(self, x):
        return x[:, :, :-self.chomp_size].contiguous()


class TemporalBlock(nn.Module):
    def __init__(self, n_inputs, n_outputs, kernel_size, stride, dilation, padding, dropout=0.2):
        super(TemporalBlock, self).__init__()
        self.conv1 = weight_norm(nn.Conv1d(n_inputs, n_outputs, kernel_size,
                                           stride=stride, padding=padding, dilation=dilation))
        self.chomp1 = Chomp1d(padding)
        self.relu1 = nn.ReLU()
        self.dropout1 = nn.Dropout(dropout)

        self.conv2 = weight_norm(nn.Conv1d(n_outputs, n_outputs, kernel_size,
                                           stride=stride, padding=padding, dilation=dilation))
        self.chomp2 = Chomp1d(padding)
        self.relu2 = nn.ReLU()
        self.dropout2 = nn.Dropout(dropout)

        self.net = nn.Sequential(self.conv1, self.chomp1, self.relu1, self.dropout1,
                                 self.conv2, self.chomp2, self.relu2, self.dropout2)
        self.downsample = nn.Conv1d(n_inputs, n_outputs, 1) if n_inputs != n_outputs else None
        self.relu = nn.ReLU()
        self.init_weights()

    def init_weights(self):
        self.conv1.weight.data.normal_(0, 0.01)
        self.conv2.weight.data.normal_(0, 0.01)
        if self.downsample is not None:
            self.downsample.weight.data.normal_(0, 0.01)

    def forward(self, x):
        out = self.net(x)
        res = x if self.downsample is None else self.downsample(x)
        return self.relu(out + res)


class TemporalConvNet(nn.Module):
    def __init__(self, num_inputs, num_channels, kernel_size=2, dropout=0.2):
        super(TemporalConvNet, self).__init__()
        layers = []
        num_levels = len(num_channels)
        for i in range(num_levels):
            dilation_size = 2 ** i
            in_channels = num_inputs if i == 0 else num_channels[i-1]
            out_channels = num_channels[i]
            layers += [TemporalBlock(in_channels, out_channels, kernel_size, stride=1,
                                     dilation=dilation_size,
                                     padding=(kernel_size-1) * dilation_size, dropout=dropout)]

        self.network = nn.Sequential(*layers)

    def forward(self, x):
        return self.network(x)


class TCN(nn.Module):
    def __init__(self, input_size, output_size, num_channels, kernel_size, dropout):
        super(TCN, self).__init__()
        self.tcn = TemporalConvNet(input_size, num_channels, kernel_size=kernel_size,
                                   dropout=dropout)
        self.linear = nn.Linear(num_channels[-1], output_size)

    def forward(self, x):
        # x: (N, C_in, L); predict the next `output_size` steps from the last time step
        y1 = self.tcn(x)
        return self.linear(y1[:, :, -1])


class MinMaxScaler:
    def fit(self, x):
        self.min_, self.max_ = x.min(), x.max()
        return self

    def transform(self, x):
        return (x - self.min_) / (self.max_ - self.min_)

    def inverse_transform(self, x):
        return x * (self.max_ - self.min_) + self.min_


def make_series(n, rng):
    t = np.arange(n, dtype=np.float32)
    season = 10 * np.sin(2 * np.pi * t / 24) + 4 * np.sin(2 * np.pi * t / 7)
    trend = 0.05 * t
    noise = rng.normal(0, 0.5, n).astype(np.float32)
    return torch.from_numpy(50 + season + trend + noise)


def forecast(args):
    rng = np.random.RandomState(1)
    series = make_series(480, rng)
    split = 384
    scaler = MinMaxScaler().fit(series[:split])
    scaled = scaler.transform(series)
    print(f'series {tuple(series.shape)} min {scaler.min_:.3f} max {scaler.max_:.3f}')

    window, horizon = args.window, args.horizon
    windows = scaled.unfold(0, window + horizon, 1)     # (N, window + horizon)
    X, Y = windows[:, :window].unsqueeze(1), windows[:, window:]
    n_train = split - window - horizon + 1
    X_train, Y_train = X[:n_train], Y[:n_train]
    X_test, Y_test = X[split - window:], Y[split - window:]
    print('train windows', X_train.shape, 'test windows', X_test.shape)

    model = TCN(1, horizon, [args.nhid] * args.levels, args.ksize, args.dropout)
    print(model)
    optimizer = getattr(torch.optim, args.optim)(model.parameters(), lr=args.lr)
    criterion = nn.MSELoss()

    for epoch in range(1, args.epochs + 1):
        model.train()
        perm = torch.randperm(n_train)
        batch_losses = []
        for i in range(0, n_train, args.batch_size):
            idx = perm[i:i + args.batch_size]
            optimizer.zero_grad()
            output = model(X_train[idx])
            loss = criterion(output, Y_train[idx])
            loss.backward()
            if args.clip > 0:
                torch.nn.utils.clip_grad_norm_(model.parameters(), args.clip)
            optimizer.step()
            batch_losses.append(loss.item())
        model.eval()
        with torch.no_grad():
            pred = scaler.inverse_transform(model(X_test))
            truth = scaler.inverse_transform(Y_test)
            rmse = torch.sqrt(((pred - truth) ** 2).mean(0))
        print('Epoch {:2d} | train loss {:.5f} | test RMSE {:.4f} | RMSE by step {}'.format(
            epoch, np.mean(batch_losses), rmse.mean().item(),
            ' '.join(f'{v:.2f}' for v in rmse.tolist())))
    print('weight_g of the first conv', model.tcn.network[0].conv1.parametrizations.weight.original0.shape)


class Encoder(nn.Module):
    def __init__(self, seq_len, n_features, embedding_dim=8):
        super(Encoder, self).__init__()
        self.seq_len, self.n_features = seq_len, n_features
        self.embedding_dim, self.hidden_dim = embedding_dim, 2 * embedding_dim
        self.rnn1 = nn.LSTM(input_size=n_features, hidden_size=self.hidden_dim,
                            num_layers=1, batch_first=True)
        self.rnn2 = nn.LSTM(input_size=self.hidden_dim, hidden_size=embedding_dim,
                            num_layers=1, batch_first=True)

    def forward(self, x):
        x, (_, _) = self.rnn1(x)
        x, (hidden_n, _) = self.rnn2(x)
        return hidden_n.squeeze(0)                     # (batch, embedding_dim)


class Decoder(nn.Module):
    def __init__(self, seq_len, input_dim=8, n_features=1):
        super(Decoder, self).__init__()
        self.seq_len, self.input_dim = seq_len, input_dim
        self.hidden_dim, self.n_features = 2 * input_dim, n_features
        self.rnn1 = nn.LSTM(input_size=input_dim, hidden_size=input_dim,
                            num_layers=1, batch_first=True)
        self.rnn2 = nn.LSTM(input_size=input_dim, hidden_size=self.hidden_dim,
                            num_layers=1, batch_first=True)
        self.output_layer = nn.Linear(self.hidden_dim, n_features)

    def forward(self, x):
        x = x.unsqueeze(1).repeat(1, self.seq_len, 1)  # (batch, seq_len, input_dim)
        x, (hidden_n, cell_n) = self.rnn1(x)
        x, (hidden_n, cell_n) = self.rnn2(x)
        return self.output_layer(x)


class RecurrentAutoencoder(nn.Module):
    def __init__(self, seq_len, n_features, embedding_dim=8):
        super(RecurrentAutoencoder, self).__init__()
        self.encoder = Encoder(seq_len, n_features, embedding_dim)
        self.decoder = Decoder(seq_len, embedding_dim, n_features)

    def forward(self, x):
        x = self.encoder(x)
        x = self.decoder(x)
        return x


def heartbeat(n, seq_len, rng, anomalous=False):
    t = np.linspace(0, 2 * np.pi, seq_len, dtype=np.float32)
    phase = rng.uniform(-0.2, 0.2, (n, 1)).astype(np.float32)
    beats = np.sin(t + phase) + 0.5 * np.sin(2 * (t + phase))
    if anomalous:  # a flattened, inverted second half
        beats[:, seq_len // 2:] = -0.3 * beats[:, seq_len // 2:]
    beats += rng.normal(0, 0.05, beats.shape).astype(np.float32)
    return torch.from_numpy(beats).unsqueeze(-1)    # (n, seq_len, 1)


def anomaly_detection(args):
    rng = np.random.RandomState(2)
    seq_len = 24
    train_dataset = heartbeat(96, seq_len, rng)
    val_dataset = heartbeat(32, seq_len, rng)
    test_normal_dataset = heartbeat(32, seq_len, rng)
    test_anomaly_dataset = heartbeat(32, seq_len, rng, anomalous=True)

    model = RecurrentAutoencoder(seq_len, 1, 8)
    print(model)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-2)
    criterion = nn.L1Loss(reduction='sum')
    history = dict(train=[], val=[])
    best_model_wts = copy.deepcopy(model.state_dict())
    best_loss = 10000.0

    for epoch in range(1, args.ae_epochs + 1):
        model = model.train()
        train_losses = []
        for i in range(0, len(train_dataset), 16):
            seq_true = train_dataset[i:i + 16]
            optimizer.zero_grad()
            seq_pred = model(seq_true)
            loss = criterion(seq_pred, seq_true) / len(seq_true)
            loss.backward()
            optimizer.step()
            train_losses.append(loss.item())
        val_losses = []
        model = model.eval()
        with torch.no_grad():
            seq_pred = model(val_dataset)
            val_losses.append((criterion(seq_pred, val_dataset) / len(val_dataset)).item())
        train_loss = np.mean(train_losses)
        val_loss = np.mean(val_losses)
        history['train'].append(train_loss)
        history['val'].append(val_loss)
        if val_loss < best_loss:
            best_loss = val_loss
            best_model_wts = copy.deepcopy(model.state_dict())
        print(f'Epoch {epoch}: train loss {train_loss:.4f} val loss {val_loss:.4f}')
    model.load_state_dict(best_model_wts)
    model = model.eval()

    def predict(model, dataset):
        with torch.no_grad():
            seq_pred = model(dataset)
            return (seq_pred - dataset).abs().sum(dim=(1, 2)) / seq_len

    train_errors = predict(model, train_dataset)
    THRESHOLD = torch.quantile(train_errors, 0.95)
    print(f'threshold (95th percentile of train errors) {THRESHOLD.item():.4f}')
    normal_errors = predict(model, test_normal_dataset)
    anomaly_errors = predict(model, test_anomaly_dataset)
    correct = (normal_errors <= THRESHOLD).sum().item()
    print(f'Correct normal predictions: {correct}/{len(test_normal_dataset)}')
    correct = (anomaly_errors > THRESHOLD).sum().item()
    print(f'Correct anomaly predictions: {correct}/{len(test_anomaly_dataset)}')
    print('error quartiles normal', torch.quantile(normal_errors, torch.tensor([0.25, 0.5, 0.75])),
          'anomalous', torch.quantile(anomaly_errors, 0.5, interpolation='nearest'))


def main():
    parser = argparse.ArgumentParser(description='Sequence Modeling - TCN forecasting')
    parser.add_argument('--batch_size', type=int, default=32, metavar='N')
    parser.add_argument('--dropout', type=float, default=0.0)
    parser.add_argument('--clip', type=float, default=-1)
    parser.add_argument('--epochs', type=int, default=8)
    parser.add_argument('--ksize', type=int, default=3)
    parser.add_argument('--levels', type=int, default=3)
    parser.add_argument('--lr', type=float, default=1e-2)
    parser.add_argument('--optim', type=str, default='Adam')
    parser.add_argument('--nhid', type=int, default=16)
    parser.add_argument('--window', type=int, default=48)
    parser.add_argument('--horizon', type=int, default=4)
    parser.add_argument('--ae_epochs', type=int, default=8)
    parser.add_argument('--seed', type=int, default=1111)
    args = parser.parse_args()
    print(args)
    torch.manual_seed(args.seed)
    forecast(args)
    anomaly_detection(args)


if __name__ == '__main__':
    main()
