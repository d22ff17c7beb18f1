"""End-to-end speech recognition with CTC, after AssemblyAI's "Building an end-to-end
Speech Recognition model in PyTorch" (a ResCNN + BiGRU acoustic model, nn.CTCLoss,
greedy decoding, CER/WER), with the log-mel front end written by hand instead of
torchaudio: torch.stft with a Hann window, the power spectrum, a triangular mel
filterbank from torch.linspace / torch.clamp and torch.log(x + 1e-6). The "speech" is
synthetic: each letter is a short chord of two tones, so the script needs no download.
"""
import argparse
import math

import torch
import torch.nn as nn
import torch.nn.functional as F


class TextTransform:
    """Maps characters to integers and vice versa (0 is the CTC blank)."""
    def __init__(self):
        char_map_str = """
        <blank> 0
        <SPACE> 1
        a 2
        e 3
        i 4
        o 5
        s 6
        t 7
        """
        self.char_map = {}
        self.index_map = {}
        for line in char_map_str.strip().split('\n'):
            ch, index = line.split()
            self.char_map[ch] = int(index)
            self.index_map[int(index)] = ch
        self.index_map[1] = ' '

    def text_to_int(self, text):
        int_sequence = []
        for c in text:
            if c == ' ':
                ch = self.char_map['<SPACE>']
            else:
                ch = self.char_map[c]
            int_sequence.append(ch)
        return int_sequence

    def int_to_text(self, labels):
        string = []
        for i in labels:
            string.append(self.index_map[i])
        return ''.join(string).replace('<SPACE>', ' ')


text_transform = TextTransform()
SAMPLE_RATE = 4000
TONES = {' ': (0., 0.), 'a': (300., 900.), 'e': (500., 1300.), 'i': (700., 1100.),
         'o': (400., 1700.), 's': (1500., 600.), 't': (1900., 250.)}


def synthesize(text, gen, seg=240):
    """Each character: a chord of its two tones under a Hann envelope, plus noise."""
    t = torch.arange(seg) / SAMPLE_RATE
    env = torch.hann_window(seg, periodic=False)
    chunks = []
    for c in text:
        f1, f2 = TONES[c]
        tone = torch.sin(2 * math.pi * f1 * t) + 0.5 * torch.sin(2 * math.pi * f2 * t)
        chunks.append(tone * env * (0. if c == ' ' else 1.))
    wave = torch.cat(chunks)
    return wave + 0.05 * torch.randn(wave.shape, generator=gen)


def mel_filterbank(n_freqs, n_mels, sample_rate, f_min=0., f_max=None):
    """Triangular filters, equally spaced on the HTK mel scale: (n_freqs, n_mels)."""
    f_max = f_max or float(sample_rate // 2)
    all_freqs = torch.linspace(0, sample_rate // 2, n_freqs)
    m_min = 2595.0 * math.log10(1.0 + (f_min / 700.0))
    m_max = 2595.0 * math.log10(1.0 + (f_max / 700.0))
    m_pts = torch.linspace(m_min, m_max, n_mels + 2)
    f_pts = 700.0 * (10 ** (m_pts / 2595.0) - 1.0)
    f_diff = f_pts[1:] - f_pts[:-1]
    slopes = f_pts.unsqueeze(0) - all_freqs.unsqueeze(1)
    down_slopes = (-1.0 * slopes[:, :-2]) / f_diff[:-1]
    up_slopes = slopes[:, 2:] / f_diff[1:]
    return torch.clamp(torch.min(down_slopes, up_slopes), min=0)


class LogMelSpectrogram(nn.Module):
    def __init__(self, sample_rate=SAMPLE_RATE, n_fft=128, hop_length=64, n_mels=16):
        super().__init__()
        self.n_fft = n_fft
        self.hop_length = hop_length
        self.register_buffer('window', torch.hann_window(n_fft))
        self.register_buffer('fb', mel_filterbank(n_fft // 2 + 1, n_mels, sample_rate))

    def forward(self, x):
        spec = torch.stft(x, self.n_fft, self.hop_length, window=self.window,
                          return_complex=True)
        power = spec.abs().pow(2)                     # (batch, freq, time)
        mel = torch.matmul(power.transpose(-1, -2), self.fb).transpose(-1, -2)
        return torch.log(mel + 1e-6)


class CNNLayerNorm(nn.Module):
    """Layer normalization built for cnns input"""
    def __init__(self, n_feats):
        super(CNNLayerNorm, self).__init__()
        self.layer_norm = nn.LayerNorm(n_feats)

    def forward(self, x):
        # x (batch, channel, feature, time)
        x = x.transpose(2, 3).contiguous()  # (batch, channel, time, feature)
        x = self.layer_norm(x)
        return x.transpose(2, 3).contiguous()  # (batch, channel, feature, time)


class ResidualCNN(nn.Module):
    """Residual CNN inspired by https://arxiv.org/pdf/1603.05027.pdf
        except with layer norm instead of batch norm
    """
    def __init__(self, in_channels, out_channels, kernel, stride, dropout, n_feats):
        super(ResidualCNN, self).__init__()
        self.cnn1 = nn.Conv2d(in_channels, out_channels, kernel, stride, padding=kernel//2)
        self.cnn2 = nn.Conv2d(out_channels, out_channels, kernel, stride, padding=kernel//2)
        self.dropout1 = nn.Dropout(dropout)
        self.dropout2 = nn.Dropout(dropout)
        self.layer_norm1 = CNNLayerNorm(n_feats)
        self.layer_norm2 = CNNLayerNorm(n_feats)

    def forward(self, x):
        residual = x  # (batch, channel, feature, time)
        x = self.layer_norm1(x)
        x = F.gelu(x)
        x = self.dropout1(x)
        x = self.cnn1(x)
        x = self.layer_norm2(x)
        x = F.gelu(x)
        x = self.dropout2(x)
        x = self.cnn2(x)
        x += residual
        return x  # (batch, channel, feature, time)


class BidirectionalGRU(nn.Module):

    def __init__(self, rnn_dim, hidden_size, dropout, batch_first):
        super(BidirectionalGRU, self).__init__()

        self.BiGRU = nn.GRU(
            input_size=rnn_dim, hidden_size=hidden_size,
            num_layers=1, batch_first=batch_first, bidirectional=True)
        self.layer_norm = nn.LayerNorm(rnn_dim)
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        x = self.layer_norm(x)
        x = F.gelu(x)
        x, _ = self.BiGRU(x)
        x = self.dropout(x)
        return x


class SpeechRecognitionModel(nn.Module):

    def __init__(self, n_cnn_layers, n_rnn_layers, rnn_dim, n_class, n_feats, stride=2,
                 dropout=0.1):
        super(SpeechRecognitionModel, self).__init__()
        n_feats = n_feats//2
        self.cnn = nn.Conv2d(1, 8, 3, stride=stride, padding=3//2)  # cnn for extracting heirachal features

        # n residual cnn layers with filter size of 8
        self.rescnn_layers = nn.Sequential(*[
            ResidualCNN(8, 8, kernel=3, stride=1, dropout=dropout, n_feats=n_feats)
            for _ in range(n_cnn_layers)
        ])
        self.fully_connected = nn.Linear(n_feats*8, rnn_dim)
        self.birnn_layers = nn.Sequential(*[
            BidirectionalGRU(rnn_dim=rnn_dim if i==0 else rnn_dim*2,
                             hidden_size=rnn_dim, dropout=dropout, batch_first=i==0)
            for i in range(n_rnn_layers)
        ])
        self.classifier = nn.Sequential(
            nn.Linear(rnn_dim*2, rnn_dim),  # birnn returns rnn_dim*2
            nn.GELU(),
            nn.Dropout(dropout),
            nn.Linear(rnn_dim, n_class)
        )

    def forward(self, x):
        x = self.cnn(x)
        x = self.rescnn_layers(x)
        sizes = x.size()
        x = x.view(sizes[0], sizes[1] * sizes[2], sizes[3])  # (batch, feature, time)
        x = x.transpose(1, 2) # (batch, time, feature)
        x = self.fully_connected(x)
        x = self.birnn_layers(x)
        x = self.classifier(x)
        return x


def data_processing(texts, frontend, gen):
    waves = [synthesize(t, gen) for t in texts]
    spectrograms = []
    labels = []
    input_lengths = []
    label_lengths = []
    for wave, utterance in zip(waves, texts):
        spec = frontend(wave).transpose(0, 1)  # (time, n_mels)
        spectrograms.append(spec)
        label = torch.Tensor(text_transform.text_to_int(utterance.lower()))
        labels.append(label)
        input_lengths.append(spec.shape[0]//2)
        label_lengths.append(len(label))

    spectrograms = nn.utils.rnn.pad_sequence(spectrograms, batch_first=True).unsqueeze(1).transpose(2, 3)
    labels = nn.utils.rnn.pad_sequence(labels, batch_first=True)

    return spectrograms, labels, input_lengths, label_lengths


def GreedyDecoder(output, labels, label_lengths, blank_label=0):
    arg_maxes = torch.argmax(output, dim=2)
    decodes = []
    targets = []
    for i, args in enumerate(arg_maxes):
        targets.append(text_transform.int_to_text(labels[i][:label_lengths[i]].long().tolist()))
        collapsed = torch.unique_consecutive(args)
        decode = [index.item() for index in collapsed if index != blank_label]
        decodes.append(text_transform.int_to_text(decode))
    return decodes, targets


def _levenshtein_distance(ref, hyp):
    m, n = len(ref), len(hyp)
    distance = [[0] * (n + 1) for _ in range(m + 1)]
    for i in range(m + 1):
        distance[i][0] = i
    for j in range(n + 1):
        distance[0][j] = j
    for i in range(1, m + 1):
        for j in range(1, n + 1):
            cost = 0 if ref[i - 1] == hyp[j - 1] else 1
            distance[i][j] = min(distance[i - 1][j] + 1, distance[i][j - 1] + 1,
                                 distance[i - 1][j - 1] + cost)
    return distance[m][n]


def cer(reference, hypothesis):
    return _levenshtein_distance(reference, hypothesis) / max(len(reference), 1)


def wer(reference, hypothesis):
    return _levenshtein_distance(reference.split(), hypothesis.split()) / max(len(reference.split()), 1)


WORDS = ['tea', 'sea', 'eat', 'sit', 'toe', 'ate', 'oat', 'tie', 'set', 'test', 'toast', 'iota']


def random_utterances(n, gen):
    utterances = []
    for _ in range(n):
        k = int(torch.randint(1, 3, (1,), generator=gen))
        idx = torch.randint(len(WORDS), (k,), generator=gen).tolist()
        utterances.append(' '.join(WORDS[i] for i in idx))
    return utterances


def main():
    parser = argparse.ArgumentParser(description='CTC speech recognition on synthetic chords')
    parser.add_argument('--epochs', type=int, default=5)
    parser.add_argument('--batch-size', type=int, default=8)
    parser.add_argument('--steps-per-epoch', type=int, default=5)
    parser.add_argument('--learning-rate', type=float, default=1e-2)
    args = parser.parse_args()

    torch.manual_seed(7)
    gen = torch.Generator().manual_seed(0)
    frontend = LogMelSpectrogram()
    print('mel filterbank', tuple(frontend.fb.shape), 'rows sum to',
          f'{frontend.fb.sum(0).max().item():.4f}')

    # the STFT is invertible: istft of stft gives the wave back
    wave = synthesize('tea set', gen)
    spec = torch.stft(wave, 128, 32, window=torch.hann_window(128), return_complex=True)
    recon = torch.istft(spec, 128, 32, window=torch.hann_window(128), length=wave.numel())
    print('stft', spec.shape, spec.dtype, f'istft round-trip error {(recon - wave).abs().max().item():.2e}')

    hparams = {
        "n_cnn_layers": 1,
        "n_rnn_layers": 2,
        "rnn_dim": 24,
        "n_class": 8,
        "n_feats": 16,
        "stride": 2,
        "dropout": 0.1,
    }
    model = SpeechRecognitionModel(
        hparams['n_cnn_layers'], hparams['n_rnn_layers'], hparams['rnn_dim'],
        hparams['n_class'], hparams['n_feats'], hparams['stride'], hparams['dropout'])
    print(model)
    print('Num Model Parameters', sum([param.nelement() for param in model.parameters()]))

    optimizer = torch.optim.AdamW(model.parameters(), args.learning_rate)
    criterion = nn.CTCLoss(blank=0, zero_infinity=True)
    scheduler = torch.optim.lr_scheduler.OneCycleLR(
        optimizer, max_lr=args.learning_rate, steps_per_epoch=args.steps_per_epoch,
        epochs=args.epochs, anneal_strategy='linear')

    test_texts = random_utterances(16, gen)
    test_data = data_processing(test_texts, frontend, gen)
    for epoch in range(1, args.epochs + 1):
        model.train()
        for batch_idx in range(args.steps_per_epoch):
            spectrograms, labels, input_lengths, label_lengths = data_processing(
                random_utterances(args.batch_size, gen), frontend, gen)
            optimizer.zero_grad()
            output = model(spectrograms)  # (batch, time, n_class)
            output = F.log_softmax(output, dim=2)
            output = output.transpose(0, 1) # (time, batch, n_class)

            loss = criterion(output, labels, input_lengths, label_lengths)
            loss.backward()
            optimizer.step()
            scheduler.step()
            if batch_idx == 0:
                print('Train Epoch: {} [{}/{}]\tLoss: {:.6f}\tlr {:.5f}'.format(
                    epoch, batch_idx * args.batch_size, args.steps_per_epoch * args.batch_size,
                    loss.item(), scheduler.get_last_lr()[0]))

        model.eval()
        test_cer, test_wer = [], []
        with torch.no_grad():
            spectrograms, labels, input_lengths, label_lengths = test_data
            output = F.log_softmax(model(spectrograms), dim=2)
            test_loss = criterion(output.transpose(0, 1), labels, input_lengths, label_lengths).item()
            decoded_preds, decoded_targets = GreedyDecoder(output, labels, label_lengths)
            for j in range(len(decoded_preds)):
                test_cer.append(cer(decoded_targets[j], decoded_preds[j]))
                test_wer.append(wer(decoded_targets[j], decoded_preds[j]))
        avg_cer = sum(test_cer)/len(test_cer)
        avg_wer = sum(test_wer)/len(test_wer)
        print('Test set: Average loss: {:.4f}, Average CER: {:4f} Average WER: {:.4f}'.format(
            test_loss, avg_cer, avg_wer))
    for target, pred in list(zip(decoded_targets, decoded_preds))[:3]:
        print(f'target: {target!r:>14} predicted: {pred!r}')


if __name__ == '__main__':
    main()
