"""pytorch/examples snli (model.py, util.py and train.py in one file) with an
InferSent-style head: "pretrained" word vectors copied into nn.Embedding
(weight.data.copy_) and checked against nn.Embedding.from_pretrained(freeze=True), a
projection through the Bottle/Linear mixin, a bidirectional LSTM encoder (h0 = c0 =
inputs.new_zeros(state_shape), ht[-2:].transpose(0, 1)), features [u, v, |u - v|, u * v],
dropout, Adam, accuracy by (torch.max(answer, 1)[1].view(label.size()) == label).sum(),
torch.save of the whole model and reloading the best snapshot. A synthetic entailment
task (NumPy-made) replaces torchtext's SNLI."""
import glob
import os
import time
from argparse import ArgumentParser
from collections import namedtuple

import numpy as np
import torch
import torch.nn as nn
import torch.optim as O


# -- model.py -------------------------------------------------------------------------

class Bottle(nn.Module):

    def forward(self, input):
        if len(input.size()) <= 2:
            return super(Bottle, self).forward(input)
        size = input.size()[:2]
        out = super(Bottle, self).forward(input.view(size[0]*size[1], -1))
        return out.view(size[0], size[1], -1)


class Linear(Bottle, nn.Linear):
    pass


class Encoder(nn.Module):

    def __init__(self, config):
        super(Encoder, self).__init__()
        self.config = config
        input_size = config.d_proj if config.projection else config.d_embed
        dropout = 0 if config.n_layers == 1 else config.dp_ratio
        self.rnn = nn.LSTM(input_size=input_size, hidden_size=config.d_hidden,
                           num_layers=config.n_layers, dropout=dropout,
                           bidirectional=config.birnn)

    def forward(self, inputs):
        batch_size = inputs.size()[1]
        state_shape = self.config.n_cells, batch_size, self.config.d_hidden
        h0 = c0 = inputs.new_zeros(state_shape)
        outputs, (ht, ct) = self.rnn(inputs, (h0, c0))
        return ht[-1] if not self.config.birnn else ht[-2:].transpose(0, 1).contiguous().view(batch_size, -1)


class SNLIClassifier(nn.Module):

    def __init__(self, config):
        super(SNLIClassifier, self).__init__()
        self.config = config
        self.embed = nn.Embedding(config.n_embed, config.d_embed)
        self.projection = Linear(config.d_embed, config.d_proj)
        self.encoder = Encoder(config)
        self.dropout = nn.Dropout(p=config.dp_ratio)
        self.relu = nn.ReLU()
        seq_in_size = 4*config.d_hidden
        if self.config.birnn:
            seq_in_size *= 2
        lin_config = [seq_in_size]*2
        self.out = nn.Sequential(
            Linear(*lin_config),
            self.relu,
            self.dropout,
            Linear(seq_in_size, config.d_out))

    def forward(self, batch):
        prem_embed = self.embed(batch.premise)
        hypo_embed = self.embed(batch.hypothesis)
        if self.config.fix_emb:
            prem_embed = prem_embed.detach()
            hypo_embed = hypo_embed.detach()
        if self.config.projection:
            prem_embed = self.relu(self.projection(prem_embed))
            hypo_embed = self.relu(self.projection(hypo_embed))
        u = self.encoder(prem_embed)
        v = self.encoder(hypo_embed)
        features = torch.cat([u, v, torch.abs(u - v), u * v], 1)
        scores = self.out(self.dropout(features))
        return scores


# -- util.py --------------------------------------------------------------------------

def makedirs(name):
    """helper function for python 2 and 3 to call os.makedirs()
       avoiding an error if the directory to be created already exists"""

    import errno

    try:
        os.makedirs(name)
    except OSError as ex:
        if ex.errno == errno.EEXIST and os.path.isdir(name):
            # ignore existing directory
            pass
        else:
            # a different error happened
            raise


def get_args():
    parser = ArgumentParser(description='PyTorch/torchtext SNLI example')
    parser.add_argument('--epochs', type=int, default=4,
                        help='the number of total epochs to run.')
    parser.add_argument('--batch_size', type=int, default=32,
                        help='batch size. (default: 32)')
    parser.add_argument('--d_embed', type=int, default=24,
                        help='the size of each embedding vector.')
    parser.add_argument('--d_proj', type=int, default=24,
                        help='the size of each projection layer.')
    parser.add_argument('--d_hidden', type=int, default=24,
                        help='the number of features in the hidden state.')
    parser.add_argument('--n_layers', type=int, default=1,
                        help='the number of recurrent layers. (default: 1)')
    parser.add_argument('--log_every', type=int, default=5,
                        help='iteration period to output log.')
    parser.add_argument('--lr', type=float, default=.005,
                        help='initial learning rate.')
    parser.add_argument('--dev_every', type=int, default=20,
                        help='log period of validation results.')
    parser.add_argument('--save_every', type=int, default=20,
                        help='model checkpoint period.')
    parser.add_argument('--dp_ratio', type=int, default=0.2,
                        help='probability of an element to be zeroed.')
    parser.add_argument('--no-bidirectional', action='store_false', dest='birnn',
                        help='disable bidirectional LSTM.')
    parser.add_argument('--preserve-case', action='store_false', dest='lower',
                        help='case-sensitivity.')
    parser.add_argument('--no-projection', action='store_false', dest='projection',
                        help='disable projection layer.')
    parser.add_argument('--train_embed', action='store_false', dest='fix_emb',
                        help='enable embedding word training.')
    parser.add_argument('--gpu', type=int, default=0,
                        help='gpu id to use. (default: 0)')
    parser.add_argument('--save_path', type=str, default='results',
                        help='save path of results.')
    parser.add_argument('--word_vectors', type=str, default='glove.6B.24d',
                        help='one of: glove.6B.24d, synthetic.')
    parser.add_argument('--seed', type=int, default=3435)
    args = parser.parse_args()
    return args


# -- a synthetic SNLI in torchtext's shapes: (seq_len, batch) token ids -----------------

Batch = namedtuple('Batch', ['premise', 'hypothesis', 'label', 'batch_size'])
PAD, NOT, N_WORDS = 1, 2, 40


def make_split(n, seed):
    """entailment: the hypothesis is words of the premise; contradiction: the same with
    the word 'not'; neutral: unrelated words."""
    rng = np.random.RandomState(seed)
    prem = np.full((n, 8), PAD, dtype=np.int64)
    hypo = np.full((n, 5), PAD, dtype=np.int64)
    label = rng.randint(0, 3, n)
    for i in range(n):
        length = rng.randint(5, 9)
        words = rng.randint(3, N_WORDS, length)
        prem[i, :length] = words
        if label[i] == 2:
            hypo[i, :4] = rng.randint(3, N_WORDS, 4)
        else:
            hypo[i, :3] = rng.choice(words, 3)
            if label[i] == 1:
                hypo[i, 3] = NOT
    return torch.from_numpy(prem), torch.from_numpy(hypo), torch.from_numpy(label)


class BucketIterator(object):
    def __init__(self, split, batch_size, device, shuffle):
        self.split, self.batch_size, self.device, self.shuffle = split, batch_size, device, shuffle
        self.order = torch.arange(len(split[2]))

    def init_epoch(self):
        if self.shuffle:
            self.order = torch.randperm(len(self.split[2]))

    def __len__(self):
        return (len(self.split[2]) + self.batch_size - 1) // self.batch_size

    def __iter__(self):
        for start in range(0, len(self.order), self.batch_size):
            idx = self.order[start:start + self.batch_size]
            prem, hypo, label = (t[idx].to(self.device) for t in self.split)
            yield Batch(prem.t().contiguous(), hypo.t().contiguous(), label, len(idx))


# -- train.py -------------------------------------------------------------------------

args = get_args()
torch.manual_seed(args.seed)
if torch.cuda.is_available():
    torch.cuda.set_device(args.gpu)
    device = torch.device('cuda:{}'.format(args.gpu))
else:
    device = torch.device('cpu')

train, dev = make_split(480, seed=0), make_split(160, seed=1)
train_iter = BucketIterator(train, args.batch_size, device, shuffle=True)
dev_iter = BucketIterator(dev, args.batch_size, device, shuffle=False)
vectors = torch.from_numpy(np.random.RandomState(7).randn(N_WORDS, args.d_embed).astype(np.float32))

config = args
config.n_embed = N_WORDS
config.d_out = 3
config.n_cells = config.n_layers

# double the number of cells for bidirectional networks
if config.birnn:
    config.n_cells *= 2

model = SNLIClassifier(config)
if args.word_vectors:
    model.embed.weight.data.copy_(vectors)
    model.to(device)
frozen = nn.Embedding.from_pretrained(vectors, freeze=True)
print(frozen, frozen.weight.requires_grad,
      torch.equal(frozen(train[0][:2]), model.embed(train[0][:2])))
print(model)

criterion = nn.CrossEntropyLoss()
opt = O.Adam(model.parameters(), lr=args.lr)

iterations = 0
start = time.time()
best_dev_acc = -1
header = '  Time Epoch Iteration Progress    (%Epoch)   Loss   Dev/Loss     Accuracy  Dev/Accuracy'
dev_log_template = ' '.join('{:>6.0f},{:>5.0f},{:>9.0f},{:>5.0f}/{:<5.0f} {:>7.0f}%,{:>8.6f},{:8.6f},{:12.4f},{:12.4f}'.split(','))
log_template = ' '.join('{:>6.0f},{:>5.0f},{:>9.0f},{:>5.0f}/{:<5.0f} {:>7.0f}%,{:>8.6f},{},{:12.4f},{}'.split(','))
makedirs(args.save_path)
print(header)

for epoch in range(args.epochs):
    train_iter.init_epoch()
    n_correct, n_total = 0, 0
    for batch_idx, batch in enumerate(train_iter):

        # switch model to training mode, clear gradient accumulators
        model.train(); opt.zero_grad()

        iterations += 1

        # forward pass
        answer = model(batch)

        # calculate accuracy of predictions in the current batch
        n_correct += (torch.max(answer, 1)[1].view(batch.label.size()) == batch.label).sum().item()
        n_total += batch.batch_size
        train_acc = 100. * n_correct/n_total

        # calculate loss of the network output with respect to training labels
        loss = criterion(answer, batch.label)

        # backpropagate and update optimizer learning rate
        loss.backward(); opt.step()

        # checkpoint model periodically
        if iterations % args.save_every == 0:
            snapshot_prefix = os.path.join(args.save_path, 'snapshot')
            snapshot_path = snapshot_prefix + '_acc_{:.4f}_loss_{:.6f}_iter_{}_model.pt'.format(train_acc, loss.item(), iterations)
            torch.save(model, snapshot_path)
            for f in glob.glob(snapshot_prefix + '*'):
                if f != snapshot_path:
                    os.remove(f)

        # evaluate performance on validation set periodically
        if iterations % args.dev_every == 0:

            # switch model to evaluation mode
            model.eval(); dev_iter.init_epoch()

            # calculate accuracy on validation set
            n_dev_correct, dev_loss = 0, 0
            with torch.no_grad():
                for dev_batch_idx, dev_batch in enumerate(dev_iter):
                    answer = model(dev_batch)
                    n_dev_correct += (torch.max(answer, 1)[1].view(dev_batch.label.size()) == dev_batch.label).sum().item()
                    dev_loss = criterion(answer, dev_batch.label)
            dev_acc = 100. * n_dev_correct / len(dev[2])

            print(dev_log_template.format(time.time()-start,
                  epoch, iterations, 1+batch_idx, len(train_iter),
                  100. * (1+batch_idx) / len(train_iter), loss.item(), dev_loss.item(), train_acc, dev_acc))

            # update best valiation set accuracy
            if dev_acc > best_dev_acc:

                # found a model with better validation set accuracy

                best_dev_acc = dev_acc
                snapshot_prefix = os.path.join(args.save_path, 'best_snapshot')
                snapshot_path = snapshot_prefix + '_devacc_{}_devloss_{}__iter_{}_model.pt'.format(dev_acc, dev_loss.item(), iterations)

                # save model, delete previous 'best_snapshot' files
                torch.save(model, snapshot_path)
                for f in glob.glob(snapshot_prefix + '*'):
                    if f != snapshot_path:
                        os.remove(f)

        elif iterations % args.log_every == 0:

            # print progress message
            print(log_template.format(time.time()-start,
                  epoch, iterations, 1+batch_idx, len(train_iter),
                  100. * (1+batch_idx) / len(train_iter), loss.item(), ' '*8, n_correct/n_total*100, ' '*12))

best = torch.load(glob.glob(os.path.join(args.save_path, 'best_snapshot*'))[0], weights_only=False)
best.eval()
with torch.no_grad():
    n_dev_correct = sum((torch.max(best(b), 1)[1].view(b.label.size()) == b.label).sum().item() for b in dev_iter)
print('best snapshot reloaded: {} dev accuracy {:.2f}'.format(type(best).__name__, 100. * n_dev_correct / len(dev[2])))
