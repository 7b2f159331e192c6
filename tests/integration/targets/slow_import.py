"""A module that is slow to import, as a heavy library is (numpy, pandas,
torch): it computes for a while at import. Standard library only, so that
every Python pyenv has can import it."""

_ROUNDS = 2_000_000  # ~0.2 s of one CPU here


def _warm_up(rounds):
    total = 0
    for i in range(rounds):
        total += i * i % 7
    return total


TABLE = _warm_up(_ROUNDS)
