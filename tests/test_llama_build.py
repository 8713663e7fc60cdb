"""Choosing llama.cpp's build flags, the build key, and reading the build back (no model, no compiler)."""

from __future__ import annotations

import importlib.util
import sys

import pytest

from offline_eval.doctor import Diagnosis, diagnose
from offline_eval.judge.llama_build import parse_system_info
from offline_eval.smoke import simulated_fault
from tests.conftest import REPO

_spec = importlib.util.spec_from_file_location("llama_build_script", REPO / "scripts" / "llama_build.py")
llama_build = importlib.util.module_from_spec(_spec)
sys.modules["llama_build_script"] = llama_build
_spec.loader.exec_module(llama_build)

SAPPHIRE_RAPIDS = ("fpu sse sse2 ssse3 sse4_1 sse4_2 avx avx2 fma f16c bmi2 avx_vnni avx512f avx512cd avx512vl "
                   "avx512dq avx512bw avx512vbmi avx512_vnni avx512_bf16 amx_tile amx_int8 amx_bf16").split()
EPYC_ZEN1 = "fpu sse sse2 ssse3 sse4_1 sse4_2 avx avx2 fma f16c bmi2".split()
OLD_X86 = "fpu sse sse2 ssse3".split()


def enabled(args: list[str]) -> set[str]:
    return {a[2:-3] for a in args if a.endswith("=ON")}


def test_auto_never_enables_amx_unless_asked():
    args = llama_build.cmake_args("auto", set(SAPPHIRE_RAPIDS))
    assert "-DGGML_NATIVE=OFF" in args
    assert not {"GGML_AMX_TILE", "GGML_AMX_INT8", "GGML_AMX_BF16"} & enabled(args)
    assert {"GGML_AVX512", "GGML_AVX512_VNNI", "GGML_AVX512_BF16", "GGML_AVX2", "GGML_FMA"} <= enabled(args)
    # every switch is set explicitly: with GGML_NATIVE off, ggml's defaults would otherwise decide
    assert all(f"-D{opt}=OFF" in args or f"-D{opt}=ON" in args for opt in llama_build._X86_OPTIONS)
    with_amx = llama_build.cmake_args("auto", set(SAPPHIRE_RAPIDS), allow_amx=True)
    assert {"GGML_AMX_TILE", "GGML_AMX_INT8", "GGML_AMX_BF16"} <= enabled(with_amx)


def test_auto_takes_what_the_cpu_reports_and_no_more():
    assert enabled(llama_build.cmake_args("auto", set(EPYC_ZEN1))) == {
        "GGML_SSE42", "GGML_AVX", "GGML_AVX2", "GGML_FMA", "GGML_F16C", "GGML_BMI2"}
    # AVX-512 needs all five of its flags: a CPU with avx512f alone does not get it
    assert "GGML_AVX512" not in enabled(llama_build.cmake_args("auto", set(EPYC_ZEN1) | {"avx512f"}))
    assert enabled(llama_build.cmake_args("auto", set(OLD_X86))) == set()


def test_fallback_profiles_are_conservative():
    assert enabled(llama_build.cmake_args("avx2", set(SAPPHIRE_RAPIDS))) == llama_build._AVX2_BASELINE
    assert enabled(llama_build.cmake_args("avx2", set(OLD_X86))) == set()  # no AVX2 here: the plain baseline
    assert enabled(llama_build.cmake_args("x86-64", set(SAPPHIRE_RAPIDS))) == set()
    assert llama_build.cmake_args("native", set()) == ["-DGGML_NATIVE=ON"]
    assert "-DGGML_CUDA=ON" in llama_build.cmake_args("cuda", set(EPYC_ZEN1))
    assert llama_build.cmake_args("auto", set(), x86=False) == ["-DGGML_NATIVE=ON"]
    with pytest.raises(ValueError, match="unknown build profile"):
        llama_build.cmake_args("fastest", set())


def test_the_flags_decide_the_build_key():
    """A wheel is found only under the key of the flags it was built with, so no other build comes back."""
    keys = {llama_build.build_key(llama_build.cmake_args(p, set(SAPPHIRE_RAPIDS))) for p in llama_build.PROFILES}
    assert len(keys) == len(llama_build.PROFILES)
    same = llama_build.build_key(llama_build.cmake_args("auto", set(SAPPHIRE_RAPIDS)))
    assert same == llama_build.build_key(llama_build.cmake_args("auto", set(SAPPHIRE_RAPIDS)))


def test_cpuinfo_parsing():
    text = "processor\t: 0\nmodel name\t: Intel(R) Xeon(R) Platinum 8481C\nflags\t\t: fpu avx2 amx_tile\n"
    assert llama_build.cpu_flags(text) == {"fpu", "avx2", "amx_tile"}
    assert llama_build.cpu_name(text) == "Intel(R) Xeon(R) Platinum 8481C"
    assert llama_build.cpu_flags("") == set()


def test_system_info_parsing():
    info = ("CPU : SSE3 = 1 | SSSE3 = 1 | AVX = 1 | AVX2 = 1 | AVX512 = 0 | AMX_INT8 = 1 | LLAMAFILE = 1 | "
            "CUDA : ARCHS = 900 | USE_GRAPHS = 1 | ")
    parsed = parse_system_info(info)
    assert parsed["CPU"] == ["SSE3", "SSSE3", "AVX", "AVX2", "AMX_INT8", "LLAMAFILE"]
    assert parsed["CUDA"] == ["USE_GRAPHS"]


def test_fault_simulation_names_only_compiled_features():
    assert simulated_fault({"AVX2", "AMX_INT8"}, "amx_int8") == "AMX_INT8"
    assert simulated_fault({"AVX2"}, "AMX_INT8, AMX_TILE") is None
    assert simulated_fault({"AVX2"}, None) is None


def test_doctor_reports_a_crashing_smoke_decode_as_unhealthy():
    crashed = lambda judge, layers: (None, "the smoke decode crashed (signal 11, segmentation fault)")  # noqa: E731
    d = diagnose(smoke_runner=crashed)
    assert isinstance(d, Diagnosis)
    if any("does not load" in p or "model " in p for p in d.problems):
        pytest.skip("llama-cpp-python or the models are not installed here: the smoke decode is not reached")
    assert not d.healthy
    assert d.problems == ["the smoke decode crashed (signal 11, segmentation fault)"]


def test_a_build_that_failed_on_this_cpu_is_not_chosen_again(tmp_path, monkeypatch):
    monkeypatch.setenv("OFFLINE_EVAL_HOME", str(tmp_path))
    monkeypatch.delenv("OFFLINE_EVAL_LLAMA_RETRY", raising=False)
    first = llama_build.candidates("native")[0]
    assert first == "native" and llama_build.usable("native") == "native"
    llama_build._record_failure(llama_build.build_key(llama_build.current_args("native")), "crashed with signal 11")
    assert llama_build.failed_here(llama_build.build_key(llama_build.current_args("native"))) == "crashed with signal 11"
    assert llama_build.usable("native") == llama_build.candidates("native")[1]
    monkeypatch.setenv("OFFLINE_EVAL_LLAMA_RETRY", "1")
    assert llama_build.usable("native") == "native"
    monkeypatch.delenv("OFFLINE_EVAL_LLAMA_RETRY")
    monkeypatch.setattr(llama_build, "cpu_name", lambda cpuinfo=None: "another CPU")  # the record is per CPU
    assert llama_build.usable("native") == "native"
    # the fallbacks never repeat a build: on a CPU without AVX2 the avx2 baseline is the plain one
    monkeypatch.setattr(llama_build, "cpu_flags", lambda cpuinfo=None: set(OLD_X86))
    assert llama_build.candidates("auto") == ["auto"]
