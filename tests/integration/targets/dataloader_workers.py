"""A PyTorch training loop's input pipeline: a DataLoader with two worker
processes over a small synthetic Dataset, iterated for EPOCHS epochs. The
entry script imports torch at module level, as training scripts do, and the
loader's workers are not persistent, so each epoch starts two new ones: with
fork they inherit torch, with forkserver or spawn each re-runs this file and
so imports torch again (~1.3 s here) before its first batch. The loader is
given no multiprocessing_context: it takes multiprocessing's default
context, which `WRITERPROF_FORCE_START_METHOD` sets.

    python dataloader_workers.py

Prints the batches' checksum and `elapsed S s`, the seconds from the first
epoch's start to the last one's end."""

import time

import torch
from torch.utils.data import DataLoader, Dataset

EPOCHS = 2
SAMPLES = 256
FEATURES = 64


class Synthetic(Dataset):
    """Sample i: FEATURES values from a generator seeded with i, and a label."""

    def __len__(self):
        return SAMPLES

    def __getitem__(self, index):
        generator = torch.Generator().manual_seed(index)
        return torch.randn(FEATURES, generator=generator), index % 10


if __name__ == "__main__":
    loader = DataLoader(Synthetic(), batch_size=32, num_workers=2)
    started = time.perf_counter()
    checksum = 0.0
    for _ in range(EPOCHS):
        for features, labels in loader:
            checksum += float(features.sum()) + int(labels.sum())
    elapsed = time.perf_counter() - started
    print("checksum %.3f" % checksum)
    print("elapsed %.3f s" % elapsed)
