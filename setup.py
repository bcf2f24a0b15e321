"""The compiled per-document pass (filters._docpass, C++ through pybind11): built by ``pip install``
(``make install``) and in place by ``python setup.py build_ext --inplace``. Everything else about the
package is in pyproject.toml."""

from pybind11.setup_helpers import Pybind11Extension
from setuptools import setup

SOURCES = ["module.cpp", "segment.cpp", "signals.cpp", "fluency.cpp"]

setup(
    ext_modules=[
        Pybind11Extension(
            "filters._docpass",
            [f"filters/docpass_cpp/{s}" for s in SOURCES],
            cxx_std=17,
            # the reference's float32 sums and float64 ratios, operation for operation: no contraction
            # into fused multiply-adds, no fast-math reassociation
            extra_compile_args=["-O2", "-ffp-contract=off", "-fno-fast-math"],
        )
    ]
)
