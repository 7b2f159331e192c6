"""Imported by `writerprof repro --main-imports blas_pool` (with this
directory on PYTHONPATH): a product of two big matrices, for which OpenBLAS
has its thread pool running (OPENBLAS_NUM_THREADS threads, the calling one
among them) in the producer before it starts its writers, and in every spawn
or forkserver child that re-runs the main module."""

import numpy

_a = numpy.ones((512, 512))
numpy.dot(_a, _a)
