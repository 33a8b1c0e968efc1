"""LoRA adapters on the served base model (PEFT, unmerged), changed while the server generates.

The generation thread runs one forward step at a time inside `ModelGuard.step()`; loading or dropping
an adapter (from an HTTP thread) runs inside `ModelGuard.change()`, which waits for the step running now
and holds back the next one. So an adapter loads between two tokens of a running batch, not after it,
and the batch goes on with the weights it started with: every step re-applies its own adapter
(`LoraWeights.activate`) when a change happened since the last one.

Adapters stay unmerged (PEFT's LoRA layers on the shared base weights): the base model answers exactly
as without them, and any adapter can be swapped in or out without touching the base weights.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

_DIRTY = object()


class ModelGuard:
    """Steps and changes (any thread) take turns; a waiting change goes before the next step. Steps of several
    threads (the llama.cpp engine's lanes, each on its own context) may run together."""

    def __init__(self) -> None:
        self._cond = threading.Condition()
        self._stepping = 0
        self._changing = False
        self._waiting = 0
        self.changes = 0  # how many changes ran: a step re-applies its adapter after one

    @contextmanager
    def step(self) -> Iterator[None]:
        with self._cond:
            while self._changing or self._waiting:
                self._cond.wait()
            self._stepping += 1
        try:
            yield
        finally:
            with self._cond:
                self._stepping -= 1
                self._cond.notify_all()

    @contextmanager
    def change(self) -> Iterator[None]:
        with self._cond:
            self._waiting += 1
            while self._stepping or self._changing:
                self._cond.wait()
            self._waiting -= 1
            self._changing = True
        try:
            yield
        finally:
            with self._cond:
                self._changing = False
                self.changes += 1
                self._cond.notify_all()


class LoraWeights:
    """The adapters injected into one model (None until the first load), and which one is active."""

    def __init__(self, model: Any, device: str) -> None:
        self.model = model  # the transformers model: PEFT injects its LoRA layers into it in place
        self.device = device
        self.peft: Any = None
        self.guard = ModelGuard()
        self._active: Any = None  # the slot applied now (None: the base), or _DIRTY after a change
        self._seen_changes = 0

    def load(self, slot: str, path: str) -> None:
        from peft import PeftConfig, PeftModel

        config = PeftConfig.from_pretrained(path)  # read (and refused) before the model is touched
        config.inference_mode = True
        with self.guard.change():
            self._active = _DIRTY
            try:
                if self.peft is None:  # the first adapter: PEFT's layers go into the model, inactive until activate()
                    self.peft = PeftModel(self.model, config, adapter_name=slot)
                self.peft.load_adapter(path, adapter_name=slot, is_trainable=False, torch_device=self.device)
            except Exception:
                if self.peft is not None and slot in self.peft.peft_config:
                    self.peft.delete_adapter(slot)  # half loaded: take it out again
                raise
            self.model.eval()

    def drop(self, slot: str) -> None:
        with self.guard.change():
            self._active = _DIRTY
            if self.peft is not None and slot in self.peft.peft_config:
                self.peft.delete_adapter(slot)

    def activate(self, slot: str | None) -> None:
        """Makes `slot` (None: the base model) the weights of the next forward; call inside guard.step()."""
        if self.guard.changes != self._seen_changes:
            self._seen_changes, self._active = self.guard.changes, _DIRTY
        if self.peft is None or self._active == slot:
            return
        tuner = self.peft.base_model
        if slot is None:
            tuner.disable_adapter_layers()
        else:
            tuner.enable_adapter_layers()
            tuner.set_adapter(slot, inference_mode=True)
        self._active = slot
