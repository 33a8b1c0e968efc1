"""The chat side both CPU engines share: the model folder's transformers tokenizer and chat template.

The fast tokenizer is not safe to call from several threads at once (its padding/truncation state is
mutated per call): HTTP threads tokenize while the generation thread decodes, so every call holds `tok_lock`.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from typing import Any

from .errors import ApiError


class ChatTokens:
    tokenizer: Any
    tok_lock: threading.Lock

    def prompt_ids(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None = None) -> list[int]:
        """The chat template applied to the messages (and tools, for a template that renders them), with the
        assistant generation prompt, as token ids."""
        try:
            with self.tok_lock:
                encoded = self.tokenizer.apply_chat_template(
                    messages, tools=tools, add_generation_prompt=True, tokenize=True, return_dict=True
                )
        except Exception as exc:  # jinja errors: roles the template refuses, and the like
            raise ApiError(400, f"the chat template rejected the messages: {exc}", param="messages") from None
        ids = encoded["input_ids"]
        if ids and isinstance(ids[0], list):
            ids = ids[0]
        return [int(i) for i in ids]

    def decode(self, ids: Sequence[int], skip_special_tokens: bool = True) -> str:
        with self.tok_lock:
            return self.tokenizer.decode(list(ids), skip_special_tokens=skip_special_tokens)

    def token_texts(self, ids: Sequence[int]) -> list[str]:
        with self.tok_lock:
            return [self.tokenizer.decode([i], skip_special_tokens=False) for i in ids]
