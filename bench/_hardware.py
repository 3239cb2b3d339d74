"""What a bench ran on: CPU model, torch threads, native bf16, CUDA (shared by the benches).

Each bench prints ``describe()`` first and gives each target the hardware it applies to,
so a target for other hardware prints SKIP instead of PASS/FAIL.
"""

from __future__ import annotations

import platform

import torch

from raystudy.algorithms.optim.polar import (
    cpu_bf16_speedup,
    cpu_has_amx_bf16,
    cpu_has_native_bf16,
    default_polar_dtype,
)


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo (the machine kind when that is unreadable)."""
    try:
        with open("/proc/cpuinfo") as info:
            for line in info:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.machine()


def native_bf16() -> bool:
    """True on CPUs with avx512_bf16/amx_bf16 (bf16 matmul is emulated without them)."""
    return cpu_has_native_bf16()


def describe() -> str:
    """One line: CPU model, torch threads, native bf16, CUDA device if any, torch version."""
    cuda = f"; CUDA {torch.cuda.get_device_name()}" if torch.cuda.is_available() else "; no CUDA"
    return (f"ran on: {cpu_model()}, {torch.get_num_threads()} torch thread(s), native bf16: "
            f"{'yes' if native_bf16() else 'no (emulated)'}"
            f"{', AMX' if cpu_has_amx_bf16() else ''}{polar_choice()}{cuda}; "
            f"torch {torch.__version__}")


def polar_choice() -> str:
    """The CPU's default Newton-Schulz precision and the timing that chose it."""
    dtype = str(default_polar_dtype(torch.zeros(2, 2))).removeprefix("torch.")
    if not cpu_has_native_bf16():
        return f"; Newton-Schulz default {dtype}"
    return f"; Newton-Schulz default {dtype} (bf16 measured {cpu_bf16_speedup():.2f}x fp32's speed)"


def verdict(applies: bool, passed: bool) -> str:
    """``SKIP`` where the target is for other hardware, else ``PASS``/``FAIL``."""
    if not applies:
        return "SKIP"
    return "PASS" if passed else "FAIL"
