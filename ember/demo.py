"""`ember demo`: train a small CNN on the handwritten digits that ship with scikit-learn.

It shows ember's main job end to end: data loading, a model, an optimizer, a training
loop with a progress bar, held-out evaluation, and a checkpoint saved, reloaded and
checked. The same code runs on any device (`--device cpu|opencl|cuda|auto|<plugin>`).
`--profile` instead prints the profiler's op table of one training step.
"""

from __future__ import annotations

import os
import tempfile
import time
from typing import Any

import ember
from ember import nn
from ember.core import scheduler
from ember.core.placement import resolve
from ember.utils.data import DataLoader
from ember.utils.data.datasets import Digits


class DigitsCNN(nn.Module):
    """conv(1->16) -> conv(16->32) -> pool -> fc(512->64) -> fc(64->10), for 8x8 digits."""

    def __init__(self) -> None:
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(1, 16, 3, padding=1), nn.ReLU(),
            nn.Conv2d(16, 32, 3, padding=1), nn.ReLU(),
            nn.MaxPool2d(2),
        )
        self.classifier = nn.Sequential(
            nn.Flatten(), nn.Linear(32 * 4 * 4, 64), nn.ReLU(), nn.Dropout(0.1),
            nn.Linear(64, 10),
        )

    def forward(self, x: ember.Tensor) -> ember.Tensor:
        return self.classifier(self.features(x))


def evaluate(model: nn.Module, loader: DataLoader, device: Any) -> float:
    """Fraction of correctly classified samples."""
    model.eval()
    correct = total = 0
    with ember.no_grad():
        for images, labels in loader:
            logits = model(images.to(device))
            correct += int((logits.argmax(1) == labels.to(device)).sum())
            total += labels.shape[0]
    return correct / total


DEFAULT_EPOCHS = 15


def run(device: str = "auto", epochs: int = DEFAULT_EPOCHS, batch_size: int = 32, lr: float = 2e-3,
        seed: int = 0, checkpoint: str | None = None, progress: bool = True,
        amp: str | None = None, tensorboard: str | None = None) -> dict:
    """Train, evaluate, checkpoint, reload and re-evaluate. Returns the figures.

    `amp`: "bfloat16" trains under autocast in bfloat16; "float16" under autocast in
    float16 with a GradScaler (mixed precision, as PyTorch's AMP recipe).

    With ``tensorboard`` (a log directory), each step's loss, batch accuracy and learning
    rate are logged (``train/loss``, ``train/accuracy``, ``train/lr``), and the held-out
    accuracy after each epoch (``test/accuracy``).
    """
    from tqdm import tqdm

    ember.manual_seed(seed)
    dev = scheduler.default_device() if device == "auto" else resolve(device)[0]
    train_set, test_set = Digits(train=True, seed=seed), Digits(train=False, seed=seed)
    generator = ember.Generator().manual_seed(seed)
    train_loader = DataLoader(train_set, batch_size=batch_size, shuffle=True,
                              generator=generator)
    test_loader = DataLoader(test_set, batch_size=256)
    model = DigitsCNN().to(dev)
    optimizer = ember.optim.Adam(model.parameters(), lr=lr)
    lr_schedule = ember.optim.lr_scheduler.CosineAnnealingLR(optimizer, T_max=epochs)
    loss_fn = nn.CrossEntropyLoss()
    if amp not in (None, "bfloat16", "float16"):
        raise ValueError(f"demo: amp must be 'bfloat16' or 'float16', not {amp!r}")
    region = ember.autocast(dev.type, dtype=getattr(ember, amp or "bfloat16"),
                            enabled=amp is not None)
    scaler = ember.amp.GradScaler(dev.type, enabled=amp == "float16")

    writer = None
    if tensorboard:
        from ember.utils.tensorboard import SummaryWriter

        writer = SummaryWriter(tensorboard)
    start = time.perf_counter()
    seen = step = 0
    bar = tqdm(total=epochs * len(train_loader), desc=f"training on {dev}", unit="step",
               disable=None if progress else True,  # None: off when not a terminal
               dynamic_ncols=True, mininterval=0.5)
    for epoch in range(epochs):
        model.train()
        for images, labels in train_loader:
            images, labels = images.to(dev), labels.to(dev)
            with region:
                logits = model(images)
                loss = loss_fn(logits, labels)
            optimizer.zero_grad()
            scaler.scale(loss).backward()  # (a pass-through unless amp="float16")
            scaler.step(optimizer)
            scaler.update()
            seen += labels.shape[0]
            bar.set_postfix(epoch=epoch + 1, loss=f"{loss.item():.4f}",
                            img_per_s=f"{seen / (time.perf_counter() - start):.0f}")
            bar.update()
            if writer is not None:
                correct = int((logits.argmax(1) == labels).sum())
                writer.add_scalar("train/loss", loss, step)
                writer.add_scalar("train/accuracy", correct / labels.shape[0], step)
                writer.add_scalar("train/lr", optimizer.param_groups[0]["lr"], step)
            step += 1
        lr_schedule.step()
        if writer is not None:
            writer.add_scalar("test/accuracy", evaluate(model, test_loader, dev), step)
    bar.close()
    if writer is not None:
        writer.close()
    train_seconds = time.perf_counter() - start
    accuracy = evaluate(model, test_loader, dev)

    # Without --checkpoint the round trip goes through a temporary folder, removed after.
    with tempfile.TemporaryDirectory(prefix="ember-demo-") as scratch:
        path = checkpoint or os.path.join(scratch, "digits_cnn.pt")
        ember.save({"model": model.state_dict(), "optimizer": optimizer.state_dict(),
                    "epochs": epochs, "accuracy": accuracy}, path)
        checkpoint_bytes = os.path.getsize(path)
        restored = DigitsCNN().to(dev)
        saved = ember.load(path, map_location=dev)
        restored.load_state_dict(saved["model"])
        reloaded_accuracy = evaluate(restored, test_loader, dev)
    return {"device": str(dev), "epochs": epochs, "amp": amp, "train_samples": len(train_set),
            "test_samples": len(test_set), "train_seconds": train_seconds,
            "images_per_second": seen / train_seconds, "accuracy": accuracy,
            "reloaded_accuracy": reloaded_accuracy, "checkpoint": checkpoint,
            "checkpoint_bytes": checkpoint_bytes, "tensorboard": tensorboard}


def profile_step(device: str = "auto", batch_size: int = 32, lr: float = 2e-3,
                 seed: int = 0, row_limit: int = 25) -> str:
    """The op table (`ember.profiler`) of one training step of the demo's model, after
    one step of warm-up; returns the table."""
    ember.manual_seed(seed)
    dev = scheduler.default_device() if device == "auto" else resolve(device)[0]
    loader = DataLoader(Digits(train=True, seed=seed), batch_size=batch_size, shuffle=True,
                        generator=ember.Generator().manual_seed(seed))
    model = DigitsCNN().to(dev)
    optimizer = ember.optim.Adam(model.parameters(), lr=lr)
    loss_fn = nn.CrossEntropyLoss()
    batches = iter(loader)

    def step() -> None:
        images, labels = next(batches)
        images, labels = images.to(dev), labels.to(dev)
        loss = loss_fn(model(images), labels)
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()
        loss.item()  # waits for the device: the step's work is all in the profile

    step()  # warm-up: first-call costs (kernel builds, caches) stay out of the table
    with ember.profiler.profile(record_shapes=False, with_flops=True) as prof:
        with ember.profiler.record_function("training step"):
            step()
    return prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=row_limit)


def main(args: Any) -> int:
    if getattr(args, "profile", False):
        print(f"ember demo --profile — one training step of DigitsCNN (batch "
              f"{args.batch_size}), ops sorted by self CPU time\n")
        print(profile_step(device=args.device, batch_size=args.batch_size, lr=args.lr,
                           seed=args.seed))
        return 0
    result = run(device=args.device, epochs=args.epochs, batch_size=args.batch_size,
                 lr=args.lr, seed=args.seed, checkpoint=args.checkpoint,
                 progress=not args.no_progress, amp=getattr(args, "amp", None),
                 tensorboard=getattr(args, "tensorboard", None))
    # The 97% check is the full run's promise; a shorter run checks only the round trip.
    full_run = result["epochs"] >= DEFAULT_EPOCHS
    reload_same = result["reloaded_accuracy"] == result["accuracy"]
    ok = reload_same and (result["accuracy"] >= 0.97 or not full_run)
    amp = f", autocast {result['amp']}" if result["amp"] else ""
    print(f"\nember demo — DigitsCNN on {result['device']}{amp}")
    print(f"  data        {result['train_samples']} training / {result['test_samples']} "
          "held-out 8x8 digits (scikit-learn)")
    epochs = f"{result['epochs']} epoch" + ("s" if result["epochs"] != 1 else "")
    print(f"  training    {epochs} in {result['train_seconds']:.1f} s "
          f"({result['images_per_second']:.0f} images/s)")
    print(f"  accuracy    {result['accuracy'] * 100:.2f}% on held-out digits")
    where = result["checkpoint"] or "a temporary file (removed; --checkpoint keeps one)"
    print(f"  checkpoint  {where} ({result['checkpoint_bytes'] / 1024:.0f} KiB)")
    print(f"  reloaded    {result['reloaded_accuracy'] * 100:.2f}% "
          f"({'same' if result['reloaded_accuracy'] == result['accuracy'] else 'DIFFERENT'})")
    if result["tensorboard"]:
        print(f"  tensorboard {result['tensorboard']} (see it with: tensorboard --logdir "
              f"{result['tensorboard']})")
    if ok:
        verdict = "OK" if full_run else (f"OK (round trip only: the 97% accuracy check needs "
                                         f"{DEFAULT_EPOCHS} epochs)")
    else:
        verdict = ("FAILED (reloaded weights score differently)" if not reload_same
                   else "FAILED (accuracy below 97%)")
    print("  result      " + verdict)
    return 0 if ok else 1
