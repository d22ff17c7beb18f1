"""A denoising convolutional autoencoder as in the classic "Convolutional Autoencoder
in PyTorch" tutorials: Conv2d/MaxPool2d encoder, ConvTranspose2d decoder ending in a
Sigmoid, MSELoss between the reconstruction of a noisy input and the clean image,
checkpointing with torch.save/torch.load of a state_dict through io.BytesIO and a file
(with the optimizer's state), and load_state_dict(strict=True) errors checked."""
import argparse
import io
import os
import tempfile

import torch
import torch.nn as nn
import torch.optim as optim
from torch.utils.data import DataLoader, TensorDataset

parser = argparse.ArgumentParser(description='Denoising autoencoder')
parser.add_argument('--epochs', type=int, default=6)
parser.add_argument('--noise-factor', type=float, default=0.3)
parser.add_argument('--lr', type=float, default=3e-3)
args = parser.parse_args()

torch.manual_seed(0)
device = torch.device("cuda" if torch.cuda.is_available() else "cpu")


class ConvDenoiser(nn.Module):
    def __init__(self):
        super(ConvDenoiser, self).__init__()
        ## encoder layers ##
        self.conv1 = nn.Conv2d(1, 16, 3, padding=1)
        self.conv2 = nn.Conv2d(16, 8, 3, padding=1)
        self.pool = nn.MaxPool2d(2, 2)

        ## decoder layers ##
        self.t_conv1 = nn.ConvTranspose2d(8, 8, 2, stride=2)
        self.t_conv2 = nn.ConvTranspose2d(8, 16, 2, stride=2)
        self.conv_out = nn.Conv2d(16, 1, 3, padding=1)
        self.sigmoid = nn.Sigmoid()

    def forward(self, x):
        ## encode ##
        x = torch.relu(self.conv1(x))
        x = self.pool(x)
        x = torch.relu(self.conv2(x))
        x = self.pool(x)  # compressed representation

        ## decode ##
        x = torch.relu(self.t_conv1(x))
        x = torch.relu(self.t_conv2(x))
        x = self.sigmoid(self.conv_out(x))
        return x


# synthetic "digits": strokes on a 16x16 canvas, values in [0, 1]
g = torch.Generator().manual_seed(1)
n = 256
canvas = torch.zeros(n, 1, 16, 16)
for i in range(n):
    r = int(torch.randint(2, 14, (1,), generator=g))
    c = int(torch.randint(2, 14, (1,), generator=g))
    canvas[i, 0, r, 2:14] = 1.0
    canvas[i, 0, 2:14, c] = 1.0
images = torch.clamp(canvas + 0.1 * torch.rand(n, 1, 16, 16, generator=g), 0., 1.)
train_loader = DataLoader(TensorDataset(images[:192]), batch_size=16, shuffle=True)
test_images = images[192:]

model = ConvDenoiser().to(device)
print(model)
criterion = nn.MSELoss()
optimizer = optim.Adam(model.parameters(), lr=args.lr)

for epoch in range(1, args.epochs + 1):
    train_loss = 0.0
    model.train()
    for (data,) in train_loader:
        images_b = data.to(device)
        ## add random noise to the input images
        noisy_imgs = images_b + args.noise_factor * torch.randn(*images_b.shape)
        # Clip the images to be between 0 and 1
        noisy_imgs = torch.clamp(noisy_imgs, 0., 1.)

        optimizer.zero_grad()
        outputs = model(noisy_imgs)
        loss = criterion(outputs, images_b)
        loss.backward()
        optimizer.step()
        train_loss += loss.item() * images_b.size(0)

    train_loss = train_loss / len(train_loader.dataset)
    print('Epoch: {} \tTraining Loss: {:.6f}'.format(epoch, train_loss))

# evaluate on noisy test images
model.eval()
with torch.no_grad():
    noisy = torch.clamp(test_images + args.noise_factor * torch.randn(*test_images.shape), 0., 1.)
    output = model(noisy)
    test_loss = criterion(output, test_images).item()
    noisy_loss = criterion(noisy, test_images).item()
print(f'Test loss: {test_loss:.6f} (noisy input: {noisy_loss:.6f})')
print(f'output range [{output.min().item():.3f}, {output.max().item():.3f}], shape {output.shape}')

# save and reload through memory and a file
buffer = io.BytesIO()
torch.save(model.state_dict(), buffer)
buffer.seek(0)
state = torch.load(buffer)
print(list(state.keys()))
print({k: tuple(v.shape) for k, v in state.items() if k.startswith('t_conv')})

ckpt_path = os.path.join(tempfile.mkdtemp(), 'denoiser.pt')
torch.save({'epoch': args.epochs, 'model_state_dict': model.state_dict(),
            'optimizer_state_dict': optimizer.state_dict(), 'loss': test_loss}, ckpt_path)
checkpoint = torch.load(ckpt_path, map_location=device, weights_only=True)
restored = ConvDenoiser().to(device)
result = restored.load_state_dict(checkpoint['model_state_dict'], strict=True)
print(result)
restored_opt = optim.Adam(restored.parameters(), lr=args.lr)
restored_opt.load_state_dict(checkpoint['optimizer_state_dict'])
print(f"restored epoch {checkpoint['epoch']}, loss {checkpoint['loss']:.6f}, "
      f"adam step {restored_opt.state_dict()['state'][0]['step']}")
restored.eval()
with torch.no_grad():
    same = torch.equal(restored(noisy), output)
print(f'restored model gives the same output: {same}')

# a mismatched state_dict: strict=True raises, strict=False reports
bad_state = dict(checkpoint['model_state_dict'])
bad_state.pop('conv_out.bias')
bad_state['extra.weight'] = torch.zeros(1)
try:
    restored.load_state_dict(bad_state, strict=True)
except RuntimeError as e:
    print(str(e).splitlines()[0])
    print(str(e).splitlines()[1].strip())
print(restored.load_state_dict(bad_state, strict=False))
try:
    wrong = dict(checkpoint['model_state_dict'])
    wrong['conv1.weight'] = torch.zeros(4, 1, 3, 3)
    restored.load_state_dict(wrong)
except RuntimeError as e:
    print(str(e).strip().splitlines()[-1].strip())
