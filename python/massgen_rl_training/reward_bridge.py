"""The reward bridge client of online GRPO: POST `{"prompts", "completions", "meta"}` to `reward_url`, get
`{"rewards": [float|null]}` back (docs/trainer-protocol.md)."""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.parse
import urllib.request
from typing import Any

from massgen_rl_common.protocol import ScriptError, log


def _opener(url: str) -> Any:
    host = urllib.parse.urlparse(url).hostname or ""
    if host in ("localhost", "127.0.0.1", "::1"):
        return urllib.request.build_opener(urllib.request.ProxyHandler({}))  # never via a proxy
    return urllib.request.build_opener()


def post_rewards(url: str, body: dict[str, Any], timeout: float, attempts: int = 3) -> list[float | None]:
    """POST the contract's reward request; returns one reward (or None) per completion."""
    data = json.dumps(body, ensure_ascii=False).encode("utf-8")
    opener = _opener(url)
    for attempt in range(1, attempts + 1):
        request = urllib.request.Request(
            url, data=data, method="POST", headers={"Content-Type": "application/json", "Accept": "application/json"}
        )
        try:
            with opener.open(request, timeout=timeout) as response:
                payload = json.loads(response.read().decode("utf-8"))
            break
        except urllib.error.HTTPError as exc:
            detail = exc.read().decode("utf-8", "replace")[:500]
            if exc.code < 500 or attempt == attempts:
                raise ScriptError(f"reward bridge {url} answered HTTP {exc.code}: {detail}") from None
        except (urllib.error.URLError, TimeoutError, ConnectionError) as exc:
            if attempt == attempts:
                raise ScriptError(f"reward bridge {url} unreachable: {getattr(exc, 'reason', exc)}") from None
        except ValueError as exc:
            raise ScriptError(f"reward bridge {url} answered with invalid JSON: {exc}") from None
        log(f"reward bridge attempt {attempt} failed; retrying")
        time.sleep(attempt)
    rewards = payload.get("rewards") if isinstance(payload, dict) else None
    if not isinstance(rewards, list) or len(rewards) != len(body["completions"]):
        raise ScriptError(
            f'reward bridge {url} must answer {{"rewards": [...]}} with {len(body["completions"])} '
            f"values, got {str(payload)[:300]}"
        )
    out = []
    for value in rewards:
        if value is None:
            out.append(None)
        elif isinstance(value, (int, float)) and not isinstance(value, bool):
            out.append(float(value))
        else:
            raise ScriptError(f"reward bridge {url} returned a non-numeric reward {value!r}")
    return out


def make_bridge_reward(url: str, timeout: float) -> Any:
    def reward_bridge(
        prompts: list[Any], completions: list[Any], meta_json: list[str] | None = None, **kwargs: Any
    ) -> list[float | None]:
        texts = [c[-1]["content"] if isinstance(c, list) else str(c) for c in completions]
        metas = [json.loads(m) for m in meta_json] if meta_json else [{} for _ in texts]
        return post_rewards(url, {"prompts": prompts, "completions": texts, "meta": metas}, timeout)

    return reward_bridge
