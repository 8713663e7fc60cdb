"""offline-eval: evaluate RAG systems entirely on local hardware.

Importing this package sets the Hugging Face offline switches before anything that reads them is
imported, so no code path can reach a model hub.
"""

from offline_eval import _offline  # noqa: F401  (must run first: sets HF_HUB_OFFLINE and friends)

__version__ = "0.1.0"


def __getattr__(name: str):
    # Heavy parts (llama.cpp, torch) load only when the API is used, so `offline-eval --help` is instant.
    if name in {"evaluate", "Report"}:
        from offline_eval import api

        return getattr(api, name)
    if name == "Sample":
        from offline_eval.sample import Sample

        return Sample
    raise AttributeError(name)
