"""The wheelhouse `make gpu-wheelhouse` fills for the bare GPU machine: the comparison of a manifest with
the imports of the GPU test modules (checked offline on made-up manifests), and the real folder when
this checkout has one."""
from __future__ import annotations

import pytest

from gpu_engine.gpucheck import wheelhouse as wh

GOOD_FILES = {
    "numpy-2.2.6-cp312-cp312-manylinux_2_17_x86_64.manylinux2014_x86_64.whl": 16_000_000,
    "django-5.2.19-py3-none-any.whl": 8_000_000,
    "cryptography-50.0.2-cp311-abi3-manylinux2014_x86_64.manylinux_2_17_x86_64.whl": 4_000_000,
    "pytest-9.2.0-py3-none-any.whl": 400_000,
    "setuptools-84.2.1-py3-none-any.whl": 1_200_000,
    "pycuda-2026.1.tar.gz": 1_700_000,
}


def manifest(**changes) -> dict:
    base = {"python": "3.12", "files": dict(GOOD_FILES),
            "imports": {"numpy": "numpy", "django": "Django", "cryptography": "cryptography", "pytest": "pytest",
                        "pycuda": "pycuda"},
            "requirements": ["numpy>=2.2,<3", "Django>=5.2,<5.3", "cryptography", "pytest>=8,<10"],
            "build_requirements": ["setuptools"]}
    base.update(changes)
    return base


def test_wheel_tags_for_cpython_312_on_x86_64_linux():
    assert wh.wheel_fits("numpy-2.2.6-cp312-cp312-manylinux_2_17_x86_64.manylinux2014_x86_64.whl")
    assert wh.wheel_fits("cryptography-50.0.2-cp311-abi3-manylinux2014_x86_64.manylinux_2_17_x86_64.whl")
    assert wh.wheel_fits("hyperlink-21.0.0-py2.py3-none-any.whl")
    assert not wh.wheel_fits("numpy-2.2.6-cp311-cp311-manylinux_2_17_x86_64.whl")  # made for 3.11
    assert not wh.wheel_fits("numpy-2.2.6-cp312-cp312-macosx_14_0_arm64.whl")
    assert not wh.wheel_fits("numpy-2.2.6-cp312-cp312-manylinux_2_17_aarch64.whl")
    assert not wh.wheel_fits("thing-1.0-cp313-abi3-manylinux2014_x86_64.whl")  # abi3 from a newer CPython
    assert not wh.wheel_fits("pycuda-2026.1.tar.gz")


def test_a_good_manifest_has_no_problems_or_gaps():
    assert wh.problems(manifest()) == []
    assert wh.gaps({"numpy", "django", "pytest", "pycuda"}, manifest()) == set()


def test_gaps_name_imports_without_a_file():
    files = {k: v for k, v in GOOD_FILES.items() if not k.startswith("django")}
    assert wh.gaps({"numpy", "django", "py_ecc"}, manifest(files=files)) == {"django", "py_ecc"}


@pytest.mark.parametrize(("changes", "problem"), [
    ({"python": "3.11"}, "made for Python 3.11, the GPU machine runs 3.12"),
    ({"files": {**GOOD_FILES, "gmpy2-2.3-cp311-cp311-manylinux2014_x86_64.whl": 10}}, "does not install on cp312"),
    ({"files": {k: v for k, v in GOOD_FILES.items() if not k.startswith("pycuda")}}, "exactly the pycuda sdist"),
    ({"requirements": ["numpy>=2.2,<3", "wasmtime>=50"]}, "requirements without a file: ['wasmtime']"),
    ({"files": {**GOOD_FILES, "big-1.0-py3-none-any.whl": 30 * 2**20}}, "over the 48 MiB limit"),
])
def test_problems_are_named(changes, problem):
    assert any(problem in p for p in wh.problems(manifest(**changes)))


def test_gpu_test_imports_read_every_statement_of_tests_but_only_module_level_of_support_files(tmp_path):
    test = tmp_path / "test_x.py"
    test.write_text("import os\nimport numpy as np\n\ndef f():\n    from py_ecc import bls12_381\n")
    support = tmp_path / "conftest.py"
    support.write_text("import pytest\nfrom tests.x import y\n\ndef browser():\n    import playwright\n")
    assert wh.static_imports([test]) == {"numpy", "py_ecc"}
    assert wh.static_imports([support], lazy=False) == {"pytest"}
    assert {"numpy", "pytest", "py_arkworks_bls12381"} <= wh.gpu_test_imports()
    assert "playwright" not in wh.gpu_test_imports()


def test_the_wheelhouse_made_here_covers_the_gpu_tests():
    if not (wh.DEFAULT_DIR / wh.MANIFEST).is_file():
        pytest.skip(f"no wheelhouse at {wh.DEFAULT_DIR}: `make gpu-wheelhouse` makes it (needs the package registries)")
    made = wh.load_manifest(wh.DEFAULT_DIR)
    assert wh.problems(made, wh.DEFAULT_DIR) == []
    assert wh.gaps(wh.gpu_test_imports(), made) == set()
    assert {"django", "numpy", "py_arkworks_bls12381", "pytest", "pytest_django", "setuptools", "pytools"} <= {
        wh.file_dist(f) for f in made["files"]}
    assert made["pycuda"].startswith("pycuda-") and made["total_bytes"] <= wh.LIMIT_BYTES
