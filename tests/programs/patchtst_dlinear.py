"""Long-horizon forecasting as the Time-Series-Library (thuml) and the PatchTST/DLinear
repositories write it: RevIN (affine weight/bias, eps, mean/stdev kept for denorm),
DLinear's series_decomp (moving_avg through nn.AvgPool1d after replicate-padding by
x[:, 0:1, :].repeat), PatchTST's patching (ReplicationPad1d then
tensor.unfold(dimension=-1, size=16, step=8)), the channel-independent reshape to
(bs * nvars, patch_num, d_model), a TransformerEncoder over patches, the flatten head;
TimesNet's FFT_for_Period (torch.fft.rfft, abs().mean(0).mean(-1), torch.topk); trained
with Adam + OneCycleLR, MSE/MAE/RMSE/MAPE metrics printed as the library does."""
import math

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F


class RevIN(nn.Module):
    def __init__(self, num_features: int, eps=1e-5, affine=True, subtract_last=False):
        """
        :param num_features: the number of features or channels
        :param eps: a value added for numerical stability
        :param affine: if True, RevIN has learnable affine parameters
        """
        super(RevIN, self).__init__()
        self.num_features = num_features
        self.eps = eps
        self.affine = affine
        self.subtract_last = subtract_last
        if self.affine:
            self._init_params()

    def forward(self, x, mode:str):
        if mode == 'norm':
            self._get_statistics(x)
            x = self._normalize(x)
        elif mode == 'denorm':
            x = self._denormalize(x)
        else: raise NotImplementedError
        return x

    def _init_params(self):
        # initialize RevIN params: (C,)
        self.affine_weight = nn.Parameter(torch.ones(self.num_features))
        self.affine_bias = nn.Parameter(torch.zeros(self.num_features))

    def _get_statistics(self, x):
        dim2reduce = tuple(range(1, x.ndim-1))
        if self.subtract_last:
            self.last = x[:,-1,:].unsqueeze(1)
        else:
            self.mean = torch.mean(x, dim=dim2reduce, keepdim=True).detach()
        self.stdev = torch.sqrt(torch.var(x, dim=dim2reduce, keepdim=True, unbiased=False) + self.eps).detach()

    def _normalize(self, x):
        if self.subtract_last:
            x = x - self.last
        else:
            x = x - self.mean
        x = x / self.stdev
        if self.affine:
            x = x * self.affine_weight
            x = x + self.affine_bias
        return x

    def _denormalize(self, x):
        if self.affine:
            x = x - self.affine_bias
            x = x / (self.affine_weight + self.eps*self.eps)
        x = x * self.stdev
        if self.subtract_last:
            x = x + self.last
        else:
            x = x + self.mean
        return x


class moving_avg(nn.Module):
    """
    Moving average block to highlight the trend of time series
    """
    def __init__(self, kernel_size, stride):
        super(moving_avg, self).__init__()
        self.kernel_size = kernel_size
        self.avg = nn.AvgPool1d(kernel_size=kernel_size, stride=stride, padding=0)

    def forward(self, x):
        # padding on the both ends of time series
        front = x[:, 0:1, :].repeat(1, (self.kernel_size - 1) // 2, 1)
        end = x[:, -1:, :].repeat(1, (self.kernel_size - 1) // 2, 1)
        x = torch.cat([front, x, end], dim=1)
        x = self.avg(x.permute(0, 2, 1))
        x = x.permute(0, 2, 1)
        return x


class series_decomp(nn.Module):
    """
    Series decomposition block
    """
    def __init__(self, kernel_size):
        super(series_decomp, self).__init__()
        self.moving_avg = moving_avg(kernel_size, stride=1)

    def forward(self, x):
        moving_mean = self.moving_avg(x)
        res = x - moving_mean
        return res, moving_mean


class DLinear(nn.Module):
    """
    Decomposition-Linear
    """
    def __init__(self, configs):
        super(DLinear, self).__init__()
        self.seq_len = configs.seq_len
        self.pred_len = configs.pred_len

        # Decompsition Kernel Size
        kernel_size = 25
        self.decompsition = series_decomp(kernel_size)
        self.individual = configs.individual
        self.channels = configs.enc_in

        if self.individual:
            self.Linear_Seasonal = nn.ModuleList()
            self.Linear_Trend = nn.ModuleList()

            for i in range(self.channels):
                self.Linear_Seasonal.append(nn.Linear(self.seq_len,self.pred_len))
                self.Linear_Trend.append(nn.Linear(self.seq_len,self.pred_len))
        else:
            self.Linear_Seasonal = nn.Linear(self.seq_len,self.pred_len)
            self.Linear_Trend = nn.Linear(self.seq_len,self.pred_len)
            self.Linear_Seasonal.weight = nn.Parameter(
                (1 / self.seq_len) * torch.ones([self.pred_len, self.seq_len]))
            self.Linear_Trend.weight = nn.Parameter(
                (1 / self.seq_len) * torch.ones([self.pred_len, self.seq_len]))

    def forward(self, x):
        # x: [Batch, Input length, Channel]
        seasonal_init, trend_init = self.decompsition(x)
        seasonal_init, trend_init = seasonal_init.permute(0,2,1), trend_init.permute(0,2,1)
        if self.individual:
            seasonal_output = torch.zeros([seasonal_init.size(0),seasonal_init.size(1),self.pred_len],dtype=seasonal_init.dtype).to(seasonal_init.device)
            trend_output = torch.zeros([trend_init.size(0),trend_init.size(1),self.pred_len],dtype=trend_init.dtype).to(trend_init.device)
            for i in range(self.channels):
                seasonal_output[:,i,:] = self.Linear_Seasonal[i](seasonal_init[:,i,:])
                trend_output[:,i,:] = self.Linear_Trend[i](trend_init[:,i,:])
        else:
            seasonal_output = self.Linear_Seasonal(seasonal_init)
            trend_output = self.Linear_Trend(trend_init)

        x = seasonal_output + trend_output
        return x.permute(0,2,1) # to [Batch, Output length, Channel]


class PositionalEmbedding(nn.Module):
    def __init__(self, d_model, max_len=5000):
        super(PositionalEmbedding, self).__init__()
        # Compute the positional encodings once in log space.
        pe = torch.zeros(max_len, d_model).float()
        pe.require_grad = False

        position = torch.arange(0, max_len).float().unsqueeze(1)
        div_term = (torch.arange(0, d_model, 2).float()
                    * -(math.log(10000.0) / d_model)).exp()

        pe[:, 0::2] = torch.sin(position * div_term)
        pe[:, 1::2] = torch.cos(position * div_term)

        pe = pe.unsqueeze(0)
        self.register_buffer('pe', pe)

    def forward(self, x):
        return self.pe[:, :x.size(1)]


class PatchEmbedding(nn.Module):
    def __init__(self, d_model, patch_len, stride, padding, dropout):
        super(PatchEmbedding, self).__init__()
        # Patching
        self.patch_len = patch_len
        self.stride = stride
        self.padding_patch_layer = nn.ReplicationPad1d((0, padding))

        # Backbone, Input encoding: projection of feature vectors onto a d-dim vector space
        self.value_embedding = nn.Linear(patch_len, d_model, bias=False)

        # Positional embedding
        self.position_embedding = PositionalEmbedding(d_model)

        # Residual dropout
        self.dropout = nn.Dropout(dropout)

    def forward(self, x):
        # do patching
        n_vars = x.shape[1]
        x = self.padding_patch_layer(x)
        x = x.unfold(dimension=-1, size=self.patch_len, step=self.stride)
        x = torch.reshape(x, (x.shape[0] * x.shape[1], x.shape[2], x.shape[3]))
        # Input encoding
        x = self.value_embedding(x) + self.position_embedding(x)
        return self.dropout(x), n_vars


class FlattenHead(nn.Module):
    def __init__(self, n_vars, nf, target_window, head_dropout=0):
        super().__init__()
        self.n_vars = n_vars
        self.flatten = nn.Flatten(start_dim=-2)
        self.linear = nn.Linear(nf, target_window)
        self.dropout = nn.Dropout(head_dropout)

    def forward(self, x):  # x: [bs x nvars x d_model x patch_num]
        x = self.flatten(x)
        x = self.linear(x)
        x = self.dropout(x)
        return x


class PatchTST(nn.Module):
    def __init__(self, configs, patch_len=16, stride=8):
        super().__init__()
        self.seq_len = configs.seq_len
        self.pred_len = configs.pred_len
        padding = stride
        self.revin = RevIN(configs.enc_in)

        # patching and embedding
        self.patch_embedding = PatchEmbedding(
            configs.d_model, patch_len, stride, padding, configs.dropout)

        # Encoder
        layer = nn.TransformerEncoderLayer(configs.d_model, configs.n_heads, configs.d_ff,
                                           dropout=configs.dropout, activation="gelu",
                                           batch_first=True, norm_first=False)
        self.encoder = nn.TransformerEncoder(layer, configs.e_layers,
                                             norm=nn.LayerNorm(configs.d_model),
                                             enable_nested_tensor=False)

        # Prediction Head
        self.head_nf = configs.d_model * \
                       int((configs.seq_len - patch_len) / stride + 2)
        self.head = FlattenHead(configs.enc_in, self.head_nf, configs.pred_len,
                                head_dropout=configs.dropout)

    def forward(self, x_enc):
        x_enc = self.revin(x_enc, 'norm')
        # do patching and embedding
        x_enc = x_enc.permute(0, 2, 1)
        # u: [bs * nvars x patch_num x d_model]
        enc_out, n_vars = self.patch_embedding(x_enc)

        # Encoder
        # z: [bs * nvars x patch_num x d_model]
        enc_out = self.encoder(enc_out)
        # z: [bs x nvars x patch_num x d_model]
        enc_out = torch.reshape(
            enc_out, (-1, n_vars, enc_out.shape[-2], enc_out.shape[-1]))
        # z: [bs x nvars x d_model x patch_num]
        enc_out = enc_out.permute(0, 1, 3, 2)

        # Decoder
        dec_out = self.head(enc_out)  # z: [bs x nvars x target_window]
        dec_out = dec_out.permute(0, 2, 1)

        # De-Normalization from Non-stationary Transformer
        dec_out = self.revin(dec_out, 'denorm')
        return dec_out


def FFT_for_Period(x, k=2):
    # [B, T, C]
    xf = torch.fft.rfft(x, dim=1)
    # find period by amplitudes
    frequency_list = abs(xf).mean(0).mean(-1)
    frequency_list[0] = 0
    _, top_list = torch.topk(frequency_list, k)
    top_list = top_list.detach().cpu().numpy()
    period = x.shape[1] // top_list
    return period, abs(xf).mean(-1)[:, top_list]


def RSE(pred, true):
    return np.sqrt(np.sum((true - pred) ** 2)) / np.sqrt(np.sum((true - true.mean()) ** 2))


def MAE(pred, true):
    return np.mean(np.abs(true - pred))


def MSE(pred, true):
    return np.mean((true - pred) ** 2)


def RMSE(pred, true):
    return np.sqrt(MSE(pred, true))


def MAPE(pred, true):
    return np.mean(np.abs((true - pred) / true))


def metric(pred, true):
    mae = MAE(pred, true)
    mse = MSE(pred, true)
    rmse = RMSE(pred, true)
    mape = MAPE(pred, true)
    rse = RSE(pred, true)
    return mae, mse, rmse, mape, rse


class Configs:
    seq_len = 48
    pred_len = 12
    enc_in = 3
    individual = False
    d_model = 16
    n_heads = 2
    d_ff = 32
    e_layers = 1
    dropout = 0.1


def make_series(n=400, channels=3):
    rng = np.random.RandomState(0)
    t = np.arange(n)
    cols = [10 + np.sin(2 * np.pi * t / 24) * (c + 1) + 0.01 * t * c + 0.1 * rng.randn(n)
            for c in range(channels)]
    return np.stack(cols, axis=1).astype(np.float32)


def windows(data, seq_len, pred_len, step=4):
    xs, ys = [], []
    for s in range(0, len(data) - seq_len - pred_len + 1, step):
        xs.append(data[s:s + seq_len])
        ys.append(data[s + seq_len:s + seq_len + pred_len])
    return torch.from_numpy(np.stack(xs)), torch.from_numpy(np.stack(ys))


def main():
    torch.manual_seed(2021)
    np.random.seed(2021)
    cfg = Configs()
    data = make_series()
    print("series", data.shape, data[:2].round(4).tolist())
    x, y = windows(data, cfg.seq_len, cfg.pred_len)
    n_train = int(len(x) * 0.8)
    print("windows", x.shape, y.shape, "train", n_train)

    decomp = series_decomp(25)
    res, trend = decomp(x[:1])
    print("decomp", res.shape, trend.shape, trend[0, :3].numpy().round(4).tolist())
    front = x[:1, 0:1, :].repeat(1, 12, 1)
    print("repeat", front.shape, front.stride(), front.is_contiguous())
    print(nn.AvgPool1d(kernel_size=25, stride=1, padding=0))

    pe = nn.ReplicationPad1d((0, 8))
    u = pe(torch.arange(6.).view(1, 1, 6))
    print(pe, u)
    patches = torch.arange(48.).view(1, 1, 48)
    patches = nn.ReplicationPad1d((0, 8))(patches).unfold(dimension=-1, size=16, step=8)
    print("unfold", patches.shape, patches.stride(), patches[0, 0, :, 0].tolist())

    revin = RevIN(3)
    normed = revin(x[:2], 'norm')
    print("revin mean", normed.mean(1).abs().max().item() < 1e-5, revin.stdev.shape)
    back = revin(normed, 'denorm')
    print("revin roundtrip", torch.allclose(back, x[:2], atol=1e-4))

    period, weights = FFT_for_Period(x[:8], k=2)
    print("periods", period.tolist(), weights.shape)
    xf = torch.fft.rfft(x[:8], dim=1)
    print("rfft", xf.shape, xf.dtype, abs(xf).dtype)
    vals, idx = torch.topk(abs(xf).mean(0).mean(-1)[1:], 3)
    print("topk", idx.tolist(), vals.shape)
    print(torch.topk(torch.tensor([1., 3., 2., 3.]), 2))

    for name, model in (("DLinear", DLinear(cfg)), ("PatchTST", PatchTST(cfg))):
        torch.manual_seed(0)
        print(model)
        print(name, "params", sum(p.numel() for p in model.parameters() if p.requires_grad))
        epochs, bs = 6, 16
        optim = torch.optim.Adam(model.parameters(), lr=3e-3)
        steps_per_epoch = math.ceil(n_train / bs)
        sched = torch.optim.lr_scheduler.OneCycleLR(optimizer=optim,
                                                    steps_per_epoch=steps_per_epoch,
                                                    pct_start=0.3, epochs=epochs,
                                                    max_lr=3e-3)
        criterion = nn.MSELoss()
        for epoch in range(epochs):
            model.train()
            train_loss = []
            perm = torch.randperm(n_train)
            for i in range(0, n_train, bs):
                idx = perm[i:i + bs]
                optim.zero_grad()
                outputs = model(x[idx])
                loss = criterion(outputs, y[idx])
                train_loss.append(loss.item())
                loss.backward()
                optim.step()
                sched.step()
            model.eval()
            with torch.no_grad():
                vali = criterion(model(x[n_train:]), y[n_train:]).item()
            print("{} Epoch: {} | Train Loss: {:.7f} Vali Loss: {:.7f} lr {:.6f}".format(
                name, epoch + 1, np.average(train_loss), vali, sched.get_last_lr()[0]))
        with torch.no_grad():
            preds = model(x[n_train:]).numpy()
        trues = y[n_train:].numpy()
        mae, mse, rmse, mape, rse = metric(preds, trues)
        print('{} mse:{:.4f}, mae:{:.4f}, rmse:{:.4f}, mape:{:.4f}, rse:{:.4f}'.format(
            name, mse, mae, rmse, mape, rse))


if __name__ == "__main__":
    main()
