"""The same figures from the neural benchmark on any machine of this kind (x86-64 with AVX2, CPU torch).

What a float result of training or decoding depends on beside the seeds, and how each is fixed:

- Threads: a reduction split over more threads adds in another order. Each process uses ``threads`` intra-op
  threads and one inter-op thread, set before torch starts its pools (``OMP_NUM_THREADS``, ``MKL_NUM_THREADS``,
  ``OPENBLAS_NUM_THREADS``) and again through torch.
- Instruction set: torch's own kernels, MKL and oneDNN pick AVX-512 or AVX2 code by the CPU they find, and the two
  round differently. They are held at AVX2 (``ATEN_CPU_CAPABILITY``, ``MKL_CBWR`` with MKL's strict mode,
  ``ONEDNN_MAX_CPU_ISA``), which every machine of this kind has.
- Kernels: ``torch.use_deterministic_algorithms(True)``, so an operation without a deterministic kernel fails
  instead of varying.
- Hash order: ``PYTHONHASHSEED`` is fixed in every process the bench starts (an iteration over a set of strings
  then has one order).
- Tokenizer training runs on one thread (``TOKENIZERS_PARALLELISM``).

Every random draw of the bench is seeded (data order, twins, drills, initialisation, sampling per rollout), and
the campaigns' episodes get a wall-clock limit no loaded machine reaches, so load never cuts one short.
"""

from __future__ import annotations

import os

HASH_SEED = "0"
"""``PYTHONHASHSEED`` of every process of the bench."""


def pinned_env(threads: int) -> dict[str, str]:
    """The environment variables that fix a process's threads, instruction set and hash seed."""
    return {
        "OMP_NUM_THREADS": str(threads), "MKL_NUM_THREADS": str(threads), "OPENBLAS_NUM_THREADS": str(threads),
        "ATEN_CPU_CAPABILITY": "avx2", "MKL_CBWR": "AVX2,STRICT", "ONEDNN_MAX_CPU_ISA": "AVX2",
        "TOKENIZERS_PARALLELISM": "false", "PYTHONHASHSEED": HASH_SEED,
    }


def pin(threads: int) -> None:
    """Fix this process's threads, instruction set and kernels before it trains or decodes.

    Call it before anything imports torch (the thread pools and the instruction set are chosen then); the hash
    seed only takes effect in the processes this one starts (:func:`pinned_env`).

    Raises:
        RuntimeError: torch was imported before with another instruction set, or started its inter-op pool with
            another size: the figures would not be the pinned ones.
    """
    os.environ.update(pinned_env(threads))
    import torch

    capability = torch.backends.cpu.get_cpu_capability()
    if capability != "AVX2":
        raise RuntimeError(f"torch runs {capability} kernels: pin() must run before torch is imported")
    torch.set_num_threads(threads)
    if torch.get_num_interop_threads() != 1:
        torch.set_num_interop_threads(1)
    torch.use_deterministic_algorithms(True)
