"""Loaded at interpreter start-up (PYTHONPATH) by every MassGen process the vs-massgen benchmark starts.

1. Egress guard: a connection or name lookup for anything but the loopback interface is refused and appended to
   $MASSGEN_BENCH_EGRESS_LOG, which the benchmark checks. (Proxy variables would do it too, but httpx then builds
   extra proxy transports, each with its own SSL context, for every client MassGen creates: that would bill
   MassGen for the guard.)
2. Keeps MassGen offline without changing what it computes: MassGen's TokenCostCalculator fetches LiteLLM's
   pricing table from raw.githubusercontent.com and caches it for an hour; offline the fetch fails and is retried
   on every cost calculation. Here the fetch returns LiteLLM's bundled copy of the same table
   (LITELLM_LOCAL_MODEL_COST_MAP=True), which is what an online process holds after its first fetch.
"""

import os
import socket
import sys

# The import hook shared with the other benchmark start-up folder (bench/lib/site-common).
sys.path.append(os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "site-common"))
from bench_import_hook import patch_after_import  # noqa: E402

_LOCAL_HOSTS = {None, "", "localhost", "127.0.0.1", "::1", "ip6-localhost"}
_EGRESS_LOG = os.environ.get("MASSGEN_BENCH_EGRESS_LOG")


def _refuse(what):
    if _EGRESS_LOG:
        with open(_EGRESS_LOG, "a") as f:
            f.write(f"{what}\n")
    raise OSError(f"massgen bench: egress to {what} refused (only the local stub is allowed)")


def _is_local_addr(address):
    if not isinstance(address, tuple):  # AF_UNIX paths and the like stay on the machine
        return True
    host = address[0]
    return host in _LOCAL_HOSTS or str(host).startswith("127.") or host == "::ffff:127.0.0.1"


_connect = socket.socket.connect
_connect_ex = socket.socket.connect_ex
_getaddrinfo = socket.getaddrinfo


def _guarded_connect(self, address):
    if not _is_local_addr(address):
        _refuse(f"{address[0]}:{address[1]}")
    return _connect(self, address)


def _guarded_connect_ex(self, address):
    if not _is_local_addr(address):
        _refuse(f"{address[0]}:{address[1]}")
    return _connect_ex(self, address)


def _guarded_getaddrinfo(host, *args, **kwargs):
    name = host.decode() if isinstance(host, bytes) else host
    if not (name in _LOCAL_HOSTS or str(name).startswith("127.")):
        _refuse(f"{name} (name lookup)")
    return _getaddrinfo(host, *args, **kwargs)


socket.socket.connect = _guarded_connect
socket.socket.connect_ex = _guarded_connect_ex
socket.getaddrinfo = _guarded_getaddrinfo

_TARGET = "massgen.token_manager.token_manager"


def _patch(module):
    calc = getattr(module, "TokenCostCalculator", None)
    if calc is None or getattr(calc, "_bench_offline", False):
        return

    def _fetch_litellm_pricing(self):
        if self._litellm_cache is None:
            try:
                import litellm

                self._litellm_cache = dict(litellm.model_cost)
            except Exception:  # pragma: no cover - litellm missing
                self._litellm_cache = {}
        return self._litellm_cache

    calc._fetch_litellm_pricing = _fetch_litellm_pricing
    calc._bench_offline = True


patch_after_import(_TARGET, _patch)
