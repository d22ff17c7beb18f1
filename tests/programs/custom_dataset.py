"""Writing Custom Datasets, DataLoaders and Transforms (the PyTorch tutorial): a face
landmarks Dataset reading a CSV, Rescale/RandomCrop/ToTensor transforms, Compose, and a
DataLoader -- with a generated CSV and NumPy "images" instead of the downloaded faces and
scikit-image."""
import csv
import os
import tempfile

import numpy as np
import torch
from torch.utils.data import DataLoader, Dataset
from torch.utils.data.dataloader import default_collate

torch.manual_seed(0)
np.random.seed(0)


class Compose:
    """Composes several transforms together (torchvision.transforms.Compose)."""

    def __init__(self, transforms):
        self.transforms = transforms

    def __call__(self, img):
        for t in self.transforms:
            img = t(img)
        return img


def make_dataset(root, n):
    """Writes faces/face_landmarks.csv and one .npy image per face (the tutorial's data)."""
    os.makedirs(os.path.join(root, "faces"), exist_ok=True)
    rng = np.random.RandomState(1)
    with open(os.path.join(root, "faces", "face_landmarks.csv"), "w", newline="") as f:
        writer = csv.writer(f)
        writer.writerow(["image_name"] + [f"part_{i}_{c}" for i in range(4) for c in "xy"])
        for k in range(n):
            h, w = rng.randint(40, 64), rng.randint(40, 64)
            name = f"face_{k}.npy"
            np.save(os.path.join(root, "faces", name),
                    (rng.rand(h, w, 3) * 255).astype(np.uint8))
            points = rng.randint(0, min(h, w), 8)
            writer.writerow([name] + points.tolist())


root_dir = tempfile.mkdtemp()
make_dataset(root_dir, 12)

with open(os.path.join(root_dir, "faces", "face_landmarks.csv")) as f:
    rows = list(csv.reader(f))[1:]

n = 5
img_name = rows[n][0]
landmarks = np.asarray(rows[n][1:], dtype=float).reshape(-1, 2)

print('Image name: {}'.format(img_name))
print('Landmarks shape: {}'.format(landmarks.shape))
print('First 4 Landmarks: {}'.format(landmarks[:4]))


class FaceLandmarksDataset(Dataset):
    """Face Landmarks dataset."""

    def __init__(self, csv_file, root_dir, transform=None):
        """
        Arguments:
            csv_file (string): Path to the csv file with annotations.
            root_dir (string): Directory with all the images.
            transform (callable, optional): Optional transform to be applied
                on a sample.
        """
        with open(csv_file) as f:
            self.landmarks_frame = list(csv.reader(f))[1:]
        self.root_dir = root_dir
        self.transform = transform

    def __len__(self):
        return len(self.landmarks_frame)

    def __getitem__(self, idx):
        if torch.is_tensor(idx):
            idx = idx.tolist()

        img_name = os.path.join(self.root_dir,
                                self.landmarks_frame[idx][0])
        image = np.load(img_name)
        landmarks = self.landmarks_frame[idx][1:]
        landmarks = np.array([landmarks], dtype=float).reshape(-1, 2)
        sample = {'image': image, 'landmarks': landmarks}

        if self.transform:
            sample = self.transform(sample)

        return sample


face_dataset = FaceLandmarksDataset(csv_file=os.path.join(root_dir, 'faces/face_landmarks.csv'),
                                    root_dir=os.path.join(root_dir, 'faces/'))

for i, sample in enumerate(face_dataset):
    print(i, sample['image'].shape, sample['landmarks'].shape)
    if i == 3:
        break


def resize(image, output_shape):
    """Nearest-neighbour resize (skimage.transform.resize stands here)."""
    h, w = image.shape[:2]
    rows = (np.arange(output_shape[0]) * h // output_shape[0])
    cols = (np.arange(output_shape[1]) * w // output_shape[1])
    return image[rows][:, cols].astype(np.float64) / 255.0


class Rescale(object):
    """Rescale the image in a sample to a given size.

    Args:
        output_size (tuple or int): Desired output size. If tuple, output is
            matched to output_size. If int, smaller of image edges is matched
            to output_size keeping aspect ratio the same.
    """

    def __init__(self, output_size):
        assert isinstance(output_size, (int, tuple))
        self.output_size = output_size

    def __call__(self, sample):
        image, landmarks = sample['image'], sample['landmarks']

        h, w = image.shape[:2]
        if isinstance(self.output_size, int):
            if h > w:
                new_h, new_w = self.output_size * h / w, self.output_size
            else:
                new_h, new_w = self.output_size, self.output_size * w / h
        else:
            new_h, new_w = self.output_size

        new_h, new_w = int(new_h), int(new_w)

        img = resize(image, (new_h, new_w))

        # h and w are swapped for landmarks because for images,
        # x and y axes are axis 1 and 0 respectively
        landmarks = landmarks * [new_w / w, new_h / h]

        return {'image': img, 'landmarks': landmarks}


class RandomCrop(object):
    """Crop randomly the image in a sample.

    Args:
        output_size (tuple or int): Desired output size. If int, square crop
            is made.
    """

    def __init__(self, output_size):
        assert isinstance(output_size, (int, tuple))
        if isinstance(output_size, int):
            self.output_size = (output_size, output_size)
        else:
            assert len(output_size) == 2
            self.output_size = output_size

    def __call__(self, sample):
        image, landmarks = sample['image'], sample['landmarks']

        h, w = image.shape[:2]
        new_h, new_w = self.output_size

        top = np.random.randint(0, h - new_h + 1)
        left = np.random.randint(0, w - new_w + 1)

        image = image[top: top + new_h,
                      left: left + new_w]

        landmarks = landmarks - [left, top]

        return {'image': image, 'landmarks': landmarks}


class ToTensor(object):
    """Convert ndarrays in sample to Tensors."""

    def __call__(self, sample):
        image, landmarks = sample['image'], sample['landmarks']

        # swap color axis because
        # numpy image: H x W x C
        # torch image: C x H x W
        image = image.transpose((2, 0, 1))
        return {'image': torch.from_numpy(image),
                'landmarks': torch.from_numpy(landmarks)}


scale = Rescale(32)
crop = RandomCrop(16)
composed = Compose([Rescale(32), RandomCrop(28)])

# Apply each of the above transforms on sample.
sample = face_dataset[5]
for i, tsfrm in enumerate([scale, crop, composed]):
    transformed_sample = tsfrm(sample)
    print(type(tsfrm).__name__, transformed_sample['image'].shape,
          transformed_sample['landmarks'][:2].round(3).tolist())

transformed_dataset = FaceLandmarksDataset(
    csv_file=os.path.join(root_dir, 'faces/face_landmarks.csv'),
    root_dir=os.path.join(root_dir, 'faces/'),
    transform=Compose([Rescale(32), RandomCrop(28), ToTensor()]))

for i, sample in enumerate(transformed_dataset):
    print(i, sample['image'].size(), sample['landmarks'].size(), sample['image'].dtype)

    if i == 3:
        break

dataloader = DataLoader(transformed_dataset, batch_size=4,
                        shuffle=True, num_workers=0)

for i_batch, sample_batched in enumerate(dataloader):
    print(i_batch, sample_batched['image'].size(),
          sample_batched['landmarks'].size())
    if i_batch == 1:
        print(sample_batched['landmarks'].dtype,
              sample_batched['image'].min().item() >= 0, sample_batched['image'].max().item() <= 1)

print(len(dataloader), dataloader.batch_size, type(dataloader.sampler).__name__)


# a custom collate_fn: stack the images, keep the landmark arrays as a list
def collate_fn(batch):
    images = torch.stack([s['image'] for s in batch]).float()
    landmarks = [s['landmarks'] for s in batch]
    return images, landmarks


loader = DataLoader(transformed_dataset, batch_size=5, shuffle=False, collate_fn=collate_fn,
                    drop_last=True)
for images, landmarks in loader:
    print(images.shape, images.dtype, len(landmarks), landmarks[0].shape)

batch = default_collate([{'a': torch.ones(2), 'b': 3, 'c': 'x'}, {'a': torch.zeros(2), 'b': 4,
                                                                  'c': 'y'}])
print(batch)
