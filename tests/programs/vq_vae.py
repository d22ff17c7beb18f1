"""VQ-VAE (van den Oord et al.; in the style of the widely copied zalandoresearch/pytorch-vq-vae
and rosinality/vq-vae-2-pytorch): a VectorQuantizer with the codebook as nn.Embedding,
squared distances expanded by hand (sum x^2 + sum e^2 - 2 x.e^T), argmin encodings
scattered into one-hot rows (torch.zeros(...).scatter_(1, idx, 1)), the straight-through
estimator (inputs + (quantized - inputs).detach()), commitment loss, perplexity, and an
EMA variant updating the codebook with register_buffer / .data.mul_().add_() and Laplace
smoothing. Residual conv encoder/decoder, trained a few steps on synthetic images."""
import argparse

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import DataLoader, TensorDataset


class VectorQuantizer(nn.Module):
    def __init__(self, num_embeddings, embedding_dim, commitment_cost):
        super(VectorQuantizer, self).__init__()

        self._embedding_dim = embedding_dim
        self._num_embeddings = num_embeddings

        self._embedding = nn.Embedding(self._num_embeddings, self._embedding_dim)
        self._embedding.weight.data.uniform_(-1 / self._num_embeddings, 1 / self._num_embeddings)
        self._commitment_cost = commitment_cost

    def forward(self, inputs):
        # convert inputs from BCHW -> BHWC
        inputs = inputs.permute(0, 2, 3, 1).contiguous()
        input_shape = inputs.shape

        # Flatten input
        flat_input = inputs.view(-1, self._embedding_dim)

        # Calculate distances
        distances = (torch.sum(flat_input ** 2, dim=1, keepdim=True)
                     + torch.sum(self._embedding.weight ** 2, dim=1)
                     - 2 * torch.matmul(flat_input, self._embedding.weight.t()))

        # Encoding
        encoding_indices = torch.argmin(distances, dim=1).unsqueeze(1)
        encodings = torch.zeros(encoding_indices.shape[0], self._num_embeddings, device=inputs.device)
        encodings.scatter_(1, encoding_indices, 1)

        # Quantize and unflatten
        quantized = torch.matmul(encodings, self._embedding.weight).view(input_shape)

        # Loss
        e_latent_loss = F.mse_loss(quantized.detach(), inputs)
        q_latent_loss = F.mse_loss(quantized, inputs.detach())
        loss = q_latent_loss + self._commitment_cost * e_latent_loss

        quantized = inputs + (quantized - inputs).detach()
        avg_probs = torch.mean(encodings, dim=0)
        perplexity = torch.exp(-torch.sum(avg_probs * torch.log(avg_probs + 1e-10)))

        # convert quantized from BHWC -> BCHW
        return loss, quantized.permute(0, 3, 1, 2).contiguous(), perplexity, encodings


class VectorQuantizerEMA(nn.Module):
    def __init__(self, num_embeddings, embedding_dim, commitment_cost, decay, epsilon=1e-5):
        super(VectorQuantizerEMA, self).__init__()

        self._embedding_dim = embedding_dim
        self._num_embeddings = num_embeddings

        self._embedding = nn.Embedding(self._num_embeddings, self._embedding_dim)
        self._embedding.weight.data.normal_()
        self._commitment_cost = commitment_cost

        self.register_buffer('_ema_cluster_size', torch.zeros(num_embeddings))
        self._ema_w = nn.Parameter(torch.Tensor(num_embeddings, self._embedding_dim))
        self._ema_w.data.normal_()

        self._decay = decay
        self._epsilon = epsilon

    def forward(self, inputs):
        inputs = inputs.permute(0, 2, 3, 1).contiguous()
        input_shape = inputs.shape
        flat_input = inputs.view(-1, self._embedding_dim)
        distances = (torch.sum(flat_input ** 2, dim=1, keepdim=True)
                     + torch.sum(self._embedding.weight ** 2, dim=1)
                     - 2 * torch.matmul(flat_input, self._embedding.weight.t()))
        encoding_indices = torch.argmin(distances, dim=1).unsqueeze(1)
        encodings = torch.zeros(encoding_indices.shape[0], self._num_embeddings, device=inputs.device)
        encodings.scatter_(1, encoding_indices, 1)
        quantized = torch.matmul(encodings, self._embedding.weight).view(input_shape)

        # Use EMA to update the embedding vectors
        if self.training:
            self._ema_cluster_size = self._ema_cluster_size * self._decay + \
                                     (1 - self._decay) * torch.sum(encodings, 0)

            # Laplace smoothing of the cluster size
            n = torch.sum(self._ema_cluster_size.data)
            self._ema_cluster_size = (
                (self._ema_cluster_size + self._epsilon)
                / (n + self._num_embeddings * self._epsilon) * n)

            dw = torch.matmul(encodings.t(), flat_input)
            self._ema_w = nn.Parameter(self._ema_w * self._decay + (1 - self._decay) * dw)

            self._embedding.weight = nn.Parameter(self._ema_w / self._ema_cluster_size.unsqueeze(1))

        e_latent_loss = F.mse_loss(quantized.detach(), inputs)
        loss = self._commitment_cost * e_latent_loss

        quantized = inputs + (quantized - inputs).detach()
        avg_probs = torch.mean(encodings, dim=0)
        perplexity = torch.exp(-torch.sum(avg_probs * torch.log(avg_probs + 1e-10)))
        return loss, quantized.permute(0, 3, 1, 2).contiguous(), perplexity, encodings


class Residual(nn.Module):
    def __init__(self, in_channels, num_hiddens, num_residual_hiddens):
        super(Residual, self).__init__()
        self._block = nn.Sequential(
            nn.ReLU(True),
            nn.Conv2d(in_channels=in_channels, out_channels=num_residual_hiddens,
                      kernel_size=3, stride=1, padding=1, bias=False),
            nn.ReLU(True),
            nn.Conv2d(in_channels=num_residual_hiddens, out_channels=num_hiddens,
                      kernel_size=1, stride=1, bias=False)
        )

    def forward(self, x):
        return x + self._block(x)


class Encoder(nn.Module):
    def __init__(self, in_channels, num_hiddens, num_residual_hiddens):
        super(Encoder, self).__init__()
        self._conv_1 = nn.Conv2d(in_channels, num_hiddens // 2, kernel_size=4, stride=2, padding=1)
        self._conv_2 = nn.Conv2d(num_hiddens // 2, num_hiddens, kernel_size=4, stride=2, padding=1)
        self._residual = Residual(num_hiddens, num_hiddens, num_residual_hiddens)

    def forward(self, inputs):
        x = F.relu(self._conv_1(inputs))
        x = self._conv_2(x)
        return F.relu(self._residual(x))


class Decoder(nn.Module):
    def __init__(self, in_channels, num_hiddens, num_residual_hiddens):
        super(Decoder, self).__init__()
        self._conv_1 = nn.Conv2d(in_channels, num_hiddens, kernel_size=3, stride=1, padding=1)
        self._residual = Residual(num_hiddens, num_hiddens, num_residual_hiddens)
        self._conv_trans_1 = nn.ConvTranspose2d(num_hiddens, num_hiddens // 2, kernel_size=4,
                                                stride=2, padding=1)
        self._conv_trans_2 = nn.ConvTranspose2d(num_hiddens // 2, 3, kernel_size=4, stride=2,
                                                padding=1)

    def forward(self, inputs):
        x = self._conv_1(inputs)
        x = F.relu(self._residual(x))
        x = F.relu(self._conv_trans_1(x))
        return self._conv_trans_2(x)


class Model(nn.Module):
    def __init__(self, num_hiddens, num_residual_hiddens, num_embeddings, embedding_dim,
                 commitment_cost, decay=0):
        super(Model, self).__init__()
        self._encoder = Encoder(3, num_hiddens, num_residual_hiddens)
        self._pre_vq_conv = nn.Conv2d(num_hiddens, embedding_dim, kernel_size=1, stride=1)
        if decay > 0.0:
            self._vq_vae = VectorQuantizerEMA(num_embeddings, embedding_dim, commitment_cost, decay)
        else:
            self._vq_vae = VectorQuantizer(num_embeddings, embedding_dim, commitment_cost)
        self._decoder = Decoder(embedding_dim, num_hiddens, num_residual_hiddens)

    def forward(self, x):
        z = self._encoder(x)
        z = self._pre_vq_conv(z)
        loss, quantized, perplexity, _ = self._vq_vae(z)
        x_recon = self._decoder(quantized)
        return loss, x_recon, perplexity


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument('--num_training_updates', type=int, default=15)
    parser.add_argument('--batch_size', type=int, default=16)
    parser.add_argument('--decay', type=float, default=0.99)
    parser.add_argument('--learning_rate', type=float, default=2e-3)
    args = parser.parse_args()
    print(args)

    torch.manual_seed(0)
    device = torch.device("cuda" if torch.cuda.is_available() else "cpu")

    # synthetic "images": smooth colour gradients with a bright square, in [-0.5, 0.5]
    rng = np.random.RandomState(0)
    n = 96
    yy, xx = np.mgrid[0:16, 0:16] / 15.0
    data = np.zeros((n, 3, 16, 16), dtype=np.float32)
    for i in range(n):
        a, b, c = rng.uniform(-1, 1, 3)
        data[i] = np.stack([a * xx, b * yy, c * xx * yy])
        r, s = rng.randint(0, 12, 2)
        data[i, :, r:r + 4, s:s + 4] = 1.0
    data = data * 0.5
    data_variance = np.var(data)
    print(f'data variance {data_variance:.5f}')
    training_loader = DataLoader(TensorDataset(torch.from_numpy(data)), batch_size=args.batch_size,
                                 shuffle=True, pin_memory=True)

    # the quantizer alone: the straight-through estimator passes gradients unchanged
    vq = VectorQuantizer(8, 4, 0.25)
    z = torch.randn(2, 4, 3, 3, requires_grad=True)
    loss, q, perplexity, enc = vq(z)
    q.sum().backward()
    print('straight-through grad is ones:', torch.equal(z.grad, torch.ones_like(z)))
    print('one-hot rows:', enc.sum(1).unique().tolist(), 'encodings', tuple(enc.shape))
    codes = torch.cdist(z.detach().permute(0, 2, 3, 1).reshape(-1, 4), vq._embedding.weight).argmin(1)
    print('cdist argmin agrees:', torch.equal(codes, enc.argmax(1)))

    for decay in (0.0, args.decay):
        torch.manual_seed(1)
        model = Model(16, 8, 32, 4, 0.25, decay).to(device)
        if decay == 0.0:
            print(model._vq_vae)
            print(model._decoder)
        optimizer = torch.optim.Adam(model.parameters(), lr=args.learning_rate, amsgrad=False)
        model.train()
        train_res_recon_error = []
        train_res_perplexity = []
        i = 0
        while i < args.num_training_updates:
            for (data_batch,) in training_loader:
                data_batch = data_batch.to(device)
                optimizer.zero_grad()
                vq_loss, data_recon, perplexity = model(data_batch)
                recon_error = F.mse_loss(data_recon, data_batch) / data_variance
                loss = recon_error + vq_loss
                loss.backward()
                optimizer.step()
                train_res_recon_error.append(recon_error.item())
                train_res_perplexity.append(perplexity.item())
                if (i + 1) % 5 == 0:
                    tag = 'ema' if decay else 'vq'
                    print('%d iterations' % (i + 1))
                    print('%s recon_error: %.3f' % (tag, np.mean(train_res_recon_error[-5:])))
                    print('%s perplexity: %.3f' % (tag, np.mean(train_res_perplexity[-5:])))
                i += 1
                if i >= args.num_training_updates:
                    break
        if decay:
            print('ema cluster size sums to', round(model._vq_vae._ema_cluster_size.sum().item(), 3),
                  'buffers', [name for name, _ in model.named_buffers()])


if __name__ == "__main__":
    main()
