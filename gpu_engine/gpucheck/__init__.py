"""`make gpucheck`: one offline command that proves the CUDA path on a lent GPU machine.

Such a machine is bare (Python 3.12, nvcc, no registry, none of our dependencies, no PyCUDA),
so `make gpu-wheelhouse` prepares beforehand, on a machine with the registries, a folder of
CPython 3.12 manylinux wheels and the PyCUDA sdist (`wheelhouse.py`); `make gpucheck` then
installs from it, builds PyCUDA, reports the kernels' resources, runs the GPU tests and the GPU
bench, and writes one Markdown report (`check.py`). Only the standard library is imported at
module level: the command starts under a bare system Python.
"""
