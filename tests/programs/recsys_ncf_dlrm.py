"""Recommendation models as their reference implementations write them, on synthetic
implicit feedback: NeuMF (GMF + MLP towers over nn.Embedding, after guoyang9/NCF)
trained with the BPR loss on negatives sampled by torch.randint and evaluated by
leave-one-out hit-rate@10 / NDCG@10 through torch.topk; then a DLRM-lite (after
facebookresearch/dlrm's dlrm_s_pytorch.py): bottom MLP, nn.EmbeddingBag(mode="sum",
sparse=True) tables fed indices + offsets, the dot-product feature interaction
torch.bmm(T, T.transpose(1, 2)) read through torch.triu_indices, a sigmoid top MLP,
BCELoss, and SGD on the sparse embedding gradients.
"""
import argparse
import time

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class NCF(nn.Module):
    def __init__(self, user_num, item_num, factor_num, num_layers, dropout):
        super(NCF, self).__init__()
        """
        user_num: number of users;
        item_num: number of items;
        factor_num: number of predictive factors;
        num_layers: the number of layers in MLP model;
        dropout: dropout rate between fully connected layers;
        """
        self.dropout = dropout

        self.embed_user_GMF = nn.Embedding(user_num, factor_num)
        self.embed_item_GMF = nn.Embedding(item_num, factor_num)
        self.embed_user_MLP = nn.Embedding(
                user_num, factor_num * (2 ** (num_layers - 1)))
        self.embed_item_MLP = nn.Embedding(
                item_num, factor_num * (2 ** (num_layers - 1)))

        MLP_modules = []
        for i in range(num_layers):
            input_size = factor_num * (2 ** (num_layers - i))
            MLP_modules.append(nn.Dropout(p=self.dropout))
            MLP_modules.append(nn.Linear(input_size, input_size//2))
            MLP_modules.append(nn.ReLU())
        self.MLP_layers = nn.Sequential(*MLP_modules)

        predict_size = factor_num * 2
        self.predict_layer = nn.Linear(predict_size, 1)

        self._init_weight_()

    def _init_weight_(self):
        """ We leave the weights initialization here. """
        nn.init.normal_(self.embed_user_GMF.weight, std=0.01)
        nn.init.normal_(self.embed_user_MLP.weight, std=0.01)
        nn.init.normal_(self.embed_item_GMF.weight, std=0.01)
        nn.init.normal_(self.embed_item_MLP.weight, std=0.01)

        for m in self.MLP_layers:
            if isinstance(m, nn.Linear):
                nn.init.xavier_uniform_(m.weight)
        nn.init.kaiming_uniform_(self.predict_layer.weight,
                                a=1, nonlinearity='sigmoid')

        for m in self.modules():
            if isinstance(m, nn.Linear) and m.bias is not None:
                m.bias.data.zero_()

    def forward(self, user, item):
        embed_user_GMF = self.embed_user_GMF(user)
        embed_item_GMF = self.embed_item_GMF(item)
        output_GMF = embed_user_GMF * embed_item_GMF

        embed_user_MLP = self.embed_user_MLP(user)
        embed_item_MLP = self.embed_item_MLP(item)
        interaction = torch.cat((embed_user_MLP, embed_item_MLP), -1)
        output_MLP = self.MLP_layers(interaction)

        concat = torch.cat((output_GMF, output_MLP), -1)

        prediction = self.predict_layer(concat)
        return prediction.view(-1)


def hit(gt_item, pred_items):
    if gt_item in pred_items:
        return 1
    return 0


def ndcg(gt_item, pred_items):
    if gt_item in pred_items:
        index = pred_items.index(gt_item)
        return np.reciprocal(np.log2(index+2))
    return 0


def metrics(model, test_users, test_items, top_k):
    HR, NDCG = [], []
    for user, item in zip(test_users, test_items):
        predictions = model(user, item)
        _, indices = torch.topk(predictions, top_k)
        recommends = torch.take(item, indices).cpu().numpy().tolist()

        gt_item = item[0].item()
        HR.append(hit(gt_item, recommends))
        NDCG.append(ndcg(gt_item, recommends))
    return np.mean(HR), np.mean(NDCG)


def make_implicit_feedback(rng, user_num, item_num, groups=4, per_user=12):
    """Users of a group interact with the items of that group only."""
    items_of = np.array_split(np.arange(item_num), groups)
    train, test, test_negs = [], [], []
    for u in range(user_num):
        group = items_of[u % groups]
        liked = rng.choice(group, size=per_user + 1, replace=False)
        train += [(u, int(i)) for i in liked[:-1]]
        test.append(int(liked[-1]))
        others = np.setdiff1d(np.arange(item_num), group)
        test_negs.append(rng.choice(others, size=29, replace=False))
    return np.array(train, dtype=np.int64), test, test_negs


class DLRM_Net(nn.Module):
    def create_mlp(self, ln, sigmoid_layer):
        # build MLP layer by layer
        layers = nn.ModuleList()
        for i in range(0, ln.size - 1):
            n = ln[i]
            m = ln[i + 1]

            # construct fully connected operator
            LL = nn.Linear(int(n), int(m), bias=True)

            # initialize the weights
            mean = 0.0  # std_dev = np.sqrt(variance)
            std_dev = np.sqrt(2 / (m + n))  # np.sqrt(1 / m) # np.sqrt(1 / n)
            W = np.random.normal(mean, std_dev, size=(m, n)).astype(np.float32)
            std_dev = np.sqrt(1 / m)  # np.sqrt(2 / (m + 1))
            bt = np.random.normal(mean, std_dev, size=m).astype(np.float32)
            LL.weight.data = torch.tensor(W, requires_grad=True)
            LL.bias.data = torch.tensor(bt, requires_grad=True)
            layers.append(LL)

            # construct sigmoid or relu operator
            if i == sigmoid_layer:
                layers.append(nn.Sigmoid())
            else:
                layers.append(nn.ReLU())

        return torch.nn.Sequential(*layers)

    def create_emb(self, m, ln):
        emb_l = nn.ModuleList()
        for i in range(0, ln.size):
            n = ln[i]
            EE = nn.EmbeddingBag(n, m, mode="sum", sparse=True)
            # initialize embeddings
            W = np.random.uniform(
                low=-np.sqrt(1 / n), high=np.sqrt(1 / n), size=(n, m)
            ).astype(np.float32)
            EE.weight.data = torch.tensor(W, requires_grad=True)
            emb_l.append(EE)
        return emb_l

    def __init__(self, m_spa, ln_emb, ln_bot, ln_top, arch_interaction_itself=False,
                 sigmoid_bot=-1, sigmoid_top=-1):
        super(DLRM_Net, self).__init__()
        self.arch_interaction_itself = arch_interaction_itself
        self.emb_l = self.create_emb(m_spa, ln_emb)
        self.bot_l = self.create_mlp(ln_bot, sigmoid_bot)
        self.top_l = self.create_mlp(ln_top, sigmoid_top)

    def apply_mlp(self, x, layers):
        return layers(x)

    def apply_emb(self, lS_o, lS_i, emb_l):
        ly = []
        for k, sparse_index_group_batch in enumerate(lS_i):
            sparse_offset_group_batch = lS_o[k]
            E = emb_l[k]
            V = E(sparse_index_group_batch, sparse_offset_group_batch)
            ly.append(V)
        return ly

    def interact_features(self, x, ly):
        # concatenate dense and sparse features
        (batch_size, d) = x.shape
        T = torch.cat([x] + ly, dim=1).view((batch_size, -1, d))
        # perform a dot product
        Z = torch.bmm(T, torch.transpose(T, 1, 2))
        _, ni, nj = Z.shape
        offset = 0 if self.arch_interaction_itself else 1
        li, lj = torch.triu_indices(ni, nj, offset=offset)
        Zflat = Z[:, li, lj]
        # concatenate dense features and interactions
        R = torch.cat([x] + [Zflat], dim=1)
        return R

    def forward(self, dense_x, lS_o, lS_i):
        x = self.apply_mlp(dense_x, self.bot_l)
        ly = self.apply_emb(lS_o, lS_i, self.emb_l)
        z = self.interact_features(x, ly)
        p = self.apply_mlp(z, self.top_l)
        return p


def random_criteo_batch(gen, n, ln_emb, num_dense, max_bag=3):
    """Dense features, multi-hot sparse bags (indices + offsets) and a click label that a
    rule over both decides."""
    X = torch.rand(n, num_dense, generator=gen)
    lS_o, lS_i = [], []
    score = X[:, 0] - X[:, 1]
    for size in ln_emb:
        lengths = torch.randint(1, max_bag + 1, (n,), generator=gen)
        offsets = torch.cat([torch.zeros(1, dtype=torch.long), lengths.cumsum(0)[:-1]])
        indices = torch.randint(0, int(size), (int(lengths.sum()),), generator=gen)
        lS_o.append(offsets)
        lS_i.append(indices)
        bag_of = torch.repeat_interleave(torch.arange(n), lengths)
        hot = torch.zeros(n).index_add_(0, bag_of, (indices < size // 2).float())
        score = score + hot / lengths - 0.5
    T = (score > 0).float().view(-1, 1)
    return X, lS_o, lS_i, T


def train_ncf(args):
    rng = np.random.RandomState(0)
    user_num, item_num = 48, 80
    train_data, test_items_gt, test_negs = make_implicit_feedback(rng, user_num, item_num)
    print(f'train interactions {len(train_data)}, users {user_num}, items {item_num}')
    train_data = torch.from_numpy(train_data)

    test_users, test_items = [], []
    for u in range(user_num):
        items = torch.tensor([test_items_gt[u]] + test_negs[u].tolist())
        test_users.append(torch.full_like(items, u))
        test_items.append(items)

    model = NCF(user_num, item_num, args.factor_num, args.num_layers, args.dropout)
    print(model)
    optimizer = torch.optim.Adam(model.parameters(), lr=args.lr)

    best_hr = 0
    for epoch in range(args.epochs):
        model.train()  # Enable dropout (if have).
        start_time = time.time()
        perm = torch.randperm(len(train_data))
        total = 0.0
        for b in range(0, len(perm), args.batch_size):
            batch = train_data[perm[b:b + args.batch_size]]
            user, item_i = batch[:, 0], batch[:, 1]
            item_j = torch.randint(0, item_num, item_i.shape)  # negative sampling

            model.zero_grad()
            prediction_i = model(user, item_i)
            prediction_j = model(user, item_j)
            loss = -F.logsigmoid(prediction_i - prediction_j).mean()
            loss.backward()
            optimizer.step()
            total += loss.item() * len(batch)

        model.eval()
        with torch.no_grad():
            HR, NDCG = metrics(model, test_users, test_items, args.top_k)

        elapsed_time = time.time() - start_time
        print("The time elapse of epoch {:03d}".format(epoch) + " is: " +
              time.strftime("%H: %M: %S", time.gmtime(elapsed_time)))
        print("BPR loss: {:.4f}\tHR: {:.3f}\tNDCG: {:.3f}".format(
            total / len(train_data), np.mean(HR), np.mean(NDCG)))
        if HR > best_hr:
            best_hr, best_ndcg, best_epoch = HR, NDCG, epoch
            torch.save(model.state_dict(), 'NeuMF.pth')
    print("End. Best epoch {:03d}: HR = {:.3f}, NDCG = {:.3f}".format(
        best_epoch, best_hr, best_ndcg))
    model.load_state_dict(torch.load('NeuMF.pth'))
    model.eval()
    with torch.no_grad():
        print('reloaded HR@{} {:.3f}'.format(args.top_k, metrics(model, test_users, test_items,
                                                              args.top_k)[0]))


def train_dlrm(args):
    np.random.seed(123)
    ln_emb = np.array([20, 30, 10])
    m_spa = 4
    num_dense = 5
    ln_bot = np.array([num_dense, 8, m_spa])
    num_fea = ln_emb.size + 1
    num_int = (num_fea * (num_fea - 1)) // 2 + m_spa
    ln_top = np.array([num_int, 8, 1])
    dlrm = DLRM_Net(m_spa, ln_emb, ln_bot, ln_top, sigmoid_top=ln_top.size - 2)
    print(dlrm)
    loss_fn = torch.nn.BCELoss(reduction="mean")
    optimizer = torch.optim.SGD(dlrm.parameters(), lr=args.dlrm_lr)

    gen = torch.Generator().manual_seed(5)
    test = random_criteo_batch(gen, 256, ln_emb, num_dense)
    for j in range(args.dlrm_iters):
        X, lS_o, lS_i, T = random_criteo_batch(gen, 64, ln_emb, num_dense)
        Z = dlrm(X, lS_o, lS_i)
        E = loss_fn(Z, T)
        optimizer.zero_grad()
        E.backward()
        optimizer.step()
        if j % 20 == 0:
            with torch.no_grad():
                Zt = dlrm(*test[:3])
                acc = ((Zt > 0.5).float() == test[3]).float().mean().item()
            print("Finished training it {}/{}, loss {:.6f}, accuracy {:3.3f} %".format(
                j + 1, args.dlrm_iters, E.item(), acc * 100))
    print('embedding grad', dlrm.emb_l[0].weight.grad.layout, dlrm.emb_l[0].weight.grad.is_sparse)


def main():
    parser = argparse.ArgumentParser(description='NCF with BPR, and a DLRM-lite')
    parser.add_argument("--lr", type=float, default=0.01)
    parser.add_argument("--dropout", type=float, default=0.0)
    parser.add_argument("--batch_size", type=int, default=64)
    parser.add_argument("--epochs", type=int, default=6)
    parser.add_argument("--top_k", type=int, default=10)
    parser.add_argument("--factor_num", type=int, default=8)
    parser.add_argument("--num_layers", type=int, default=2)
    parser.add_argument("--dlrm_lr", type=float, default=0.5)
    parser.add_argument("--dlrm_iters", type=int, default=101)
    args = parser.parse_args()
    torch.manual_seed(0)
    train_ncf(args)
    train_dlrm(args)


if __name__ == '__main__':
    main()
