"""The transport-level categories of the serve fuzz suite (huge bodies and headers, broken HTTP, slow clients,
disconnects, many connections) and the ones that race the server's own changes (adapter swaps, /threads)."""

from __future__ import annotations

import json
import random
import socket
import threading
import time

from fuzz_cases import NAME, base, dumps, junk
from fuzz_runs import Ctx, accepted, body_level, post
from fuzz_support import check, connect, exchange, read_answer, request, source


def huge_body(ctx: Ctx, rng: random.Random, index: int) -> str:
    limit = ctx.limits["max_body_bytes"]
    variant = rng.randrange(5)
    if variant == 0:  # exactly the limit: a valid request padded with spaces
        body = dumps(base())
        return accepted(post(ctx, index, body + b" " * (limit - len(body))))
    declared = rng.choice([limit + 1, 2 * limit, 10**30])
    head = f"POST /v1/chat/completions HTTP/1.1\r\nHost: fuzz\r\nContent-Length: {declared}\r\n"
    if variant == 1:
        head += "Expect: 100-continue\r\n"
    data = (head + "\r\n").encode() + (b" " * min(declared, limit + 1) if variant >= 2 else b"")
    answer = exchange(ctx.port, data, source(index))
    assert answer.status == 413 and answer.closed, (answer.status, answer.body[:300])
    return check(answer)


def huge_headers(ctx: Ctx, rng: random.Random, index: int) -> str:
    budget, most = ctx.limits["max_header_bytes"], ctx.limits["max_headers"]
    body = dumps(base())
    variant = rng.randrange(5)
    if variant == 0:  # Host, Content-Type and Content-Length are three of them
        return accepted(post(ctx, index, body, **{f"X-{i}": "y" for i in range(most - 3)}))
    if variant == 1:
        data = request("POST", "/v1/chat/completions", body, {f"X-{i}": "y" for i in range(most - 2)})
    elif variant == 2:
        data = request("POST", "/v1/chat/completions", body, {"X-Big": "y" * rng.choice([budget, 70_000])})
    elif variant == 3:
        data = request("GET", "/health?" + "q" * budget)
    else:
        data = request("GET", "/health", None, {f"X-{i}": "y" * (budget // most) for i in range(most)})
    answer = exchange(ctx.port, data, source(index))
    assert answer.status == 431 and answer.closed, (answer.status, answer.body[:300])
    return check(answer)


BAD_HTTP = [
    b"GARBAGE\r\n\r\n",
    b"\r\n\r\n",
    b"GET\r\n\r\n",
    b"get /health HTTP/1.1\r\n\r\n",
    b"GET /health HTTP/2.0\r\n\r\n",
    b"GET /health HTTP/1.1 x\r\n\r\n",
    b"GET /health FOO/1.1\r\n\r\n",
    b"PUT /health HTTP/1.1\r\n\r\n",
    b"DELETE /v1/models HTTP/1.1\r\n\r\n",
    b"OPTIONS * HTTP/1.1\r\n\r\n",
    b"HEAD /health HTTP/1.1\r\n\r\n",
    b"GET http://[x HTTP/1.1\r\n\r\n",
    b"POST http://[x HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}",
    b"GET //// HTTP/1.1\r\n\r\n",
    b"GET /health?x=%ff HTTP/1.1\r\n\r\n",
    b"GET /\xff\xfe HTTP/1.1\r\n\r\n",
    b"GET /health HTTP/1.1\r\nBad header line\r\n\r\n",
    b"GET /health HTTP/1.1\r\nX: \x00\r\n\r\n",
    b"GET /health HTTP/1.1\r\n folded\r\n\r\n",
    b"GET /health HTTP/1.1\nX: y\n\n",
    b"GET /health HTTP/1.0\r\n\r\n",
    b"POST /v1/chat/completions HTTP/1.1\r\nContent-Length: -1\r\n\r\n",
    b"POST /v1/chat/completions HTTP/1.1\r\nContent-Length: 1e3\r\n\r\n",
    b"POST /v1/chat/completions HTTP/1.1\r\nContent-Length: \xb2\r\n\r\n{}",
    b"POST /v1/chat/completions HTTP/1.1\r\nContent-Length:  2 \r\n\r\n{}",
    b"POST /v1/chat/completions HTTP/1.1\r\nContent-Length: 2\r\nContent-Length: 9\r\n\r\n{}",
    b"POST /v1/chat/completions HTTP/1.1\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}\r\n0\r\n\r\n",
    b"POST /v1/chat/completions HTTP/1.1\r\n\r\n",
    b"POST /nowhere HTTP/1.1\r\nContent-Length: 2\r\n\r\n{}",
    b"POST /v1/chat/completions?stream=1 HTTP/1.1\r\nContent-Length: 2\r\n\r\n[]",
]


def bad_http(ctx: Ctx, rng: random.Random, index: int) -> str:
    data = rng.choice(BAD_HTTP)
    answer = exchange(ctx.port, data, source(index), timeout=ctx.limits["request_timeout_s"] + 10)
    return check(answer, may_close=True)


def slow_body(ctx: Ctx, rng: random.Random, index: int) -> str:
    """A request that never arrives whole: trickled, stopped halfway, or never begun; cut off by the timeout."""
    timeout = ctx.limits["request_timeout_s"]
    body = dumps(base())
    data = request("POST", "/v1/chat/completions", body)
    variant = rng.randrange(4)
    keep = {0: 0, 1: data.index(b"\r\n") // 2, 2: len(data) - len(body) // 2, 3: len(data) - len(body)}[variant]
    started = time.monotonic()
    with connect(ctx.port, source(index), timeout=timeout + 10) as sock:
        try:
            sock.sendall(data[:keep])
            for byte in data[keep:][: int((timeout + 2) / 0.3)] if variant == 3 else b"":  # a byte per 0.3 s
                time.sleep(0.3)
                sock.sendall(bytes([byte]))
        except (BrokenPipeError, ConnectionResetError):
            pass
        answer = read_answer(sock)
    took = time.monotonic() - started
    assert took < timeout + 3, f"a slow request held its connection {took:.1f}s"
    if answer.status is not None:
        assert answer.status == 408 and answer.closed, (answer.status, answer.body[:300])
    return check(answer, may_close=True)


def slow_reader(ctx: Ctx, rng: random.Random, index: int) -> str:
    """A stream whose client stops reading: the server's writes time out, it closes, and the row is freed."""
    body = dumps(base(stream=True, max_tokens=300, ignore_eos=True, stop=[], logprobs=True, top_logprobs=20))
    with connect(ctx.port, source(index), rcvbuf=4096, timeout=60) as sock:
        sock.sendall(request("POST", "/v1/chat/completions", body))
        time.sleep(ctx.limits["write_timeout_s"] + rng.uniform(1.5, 3))
        sock.settimeout(ctx.limits["request_timeout_s"] + ctx.limits["write_timeout_s"] + 10)
        answer = read_answer(sock)  # what the buffers held, then the close
        assert answer.status == 200, answer.status
        more = sock.recv(1 << 16) if not answer.closed else b""
    complete = answer.events()[-1:] == ["[DONE]"]
    assert not more, more[:200]
    return "completed" if complete else "cut off"


def disconnect(ctx: Ctx, rng: random.Random, index: int) -> str:
    """A client that goes away: mid-stream after a few events, or before a plain answer; closed or reset."""
    stream = rng.random() < 0.7
    body = dumps(base(stream=stream, max_tokens=rng.choice([16, 64, 200]), ignore_eos=True, stop=[]))
    with connect(ctx.port, source(index), timeout=60) as sock:
        sock.sendall(request("POST", "/v1/chat/completions", body))
        if stream:
            got, want = b"", rng.randrange(0, 4000)
            while len(got) < want and (data := sock.recv(min(4096, want - len(got) + 1))):
                got += data
        if rng.random() < 0.5:  # a reset rather than a close
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, b"\x01\x00\x00\x00\x00\x00\x00\x00")
    return "mid-stream" if stream else "before the answer"


def many_connections(ctx: Ctx, rng: random.Random, index: int) -> str:
    """More connections from one address than it may hold: the extra ones get a 503 and a close."""
    most, extra = ctx.limits["max_connections_per_client"], rng.randrange(1, 4)
    socks = [connect(ctx.port, source(index), timeout=10) for _ in range(most + extra)]
    try:
        for sock in socks:
            sock.sendall(request("GET", "/health"))
        answers = [read_answer(sock) for sock in socks]
    finally:
        for sock in socks:
            sock.close()
    refused = [a for a in answers if a.status == 503]
    assert len(refused) == extra and all(a.status == 200 for a in answers if a not in refused), [
        a.status for a in answers
    ]
    for answer in refused:
        assert answer.closed and answer.json()["error"]["code"] == "too_many_connections"
        check(answer)
    return f"{extra} refused"


def adapter_swap(ctx: Ctx, rng: random.Random, index: int) -> str:
    """Chat requests on the adapter and the served name while the adapter is unloaded, loaded, made the default
    and the decode threads change: each request gets its answer or a 404 for the adapter gone."""
    changes = [
        rng.choice(
            [
                ("unload_lora_adapter", {"lora_name": ctx.adapter}),
                ("load_lora_adapter", {"lora_name": ctx.adapter, "lora_path": ctx.adapter_path}),
                ("set_default_adapter", {"lora_name": ctx.adapter}),
                ("set_default_adapter", {"lora_name": None}),
                ("threads", {"threads": 1}),
            ]
        )
        for _ in range(4)
    ]
    failures: list[BaseException] = []

    def swap() -> None:
        try:
            for route, body in changes:
                path = "/threads" if route == "threads" else f"/v1/{route}"
                check(post(ctx, index, json.dumps(body).encode(), path=path), params=("lora_name",))
        except BaseException as exc:  # noqa: BLE001 - raised again on the case's own thread
            failures.append(exc)

    thread = threading.Thread(target=swap)
    thread.start()
    labels = []
    for _ in range(3):
        body = base(model=rng.choice([ctx.adapter, NAME]), stream=rng.random() < 0.5)
        labels.append(accepted(post(ctx, index, dumps(body)), params=("model",)))
    thread.join()
    if failures:
        raise failures[0]
    return "chat " + ",".join(sorted(set(labels)))


def other_routes(ctx: Ctx, rng: random.Random, index: int) -> str:
    """The LoRA endpoints and /threads with any body; GET routes with odd paths."""
    route = rng.choice(["load_lora_adapter", "unload_lora_adapter", "set_default_adapter", "threads", "GET"])
    if route == "GET":
        path = rng.choice(["/health", "/v1/models", "/stats", "/v1/models/x", "/", "/health/", "/v1/../stats"])
        return f"GET {check(exchange(ctx.port, request('GET', path), source(index)))}"
    body = (
        junk(rng)
        if rng.random() < 0.3
        else {
            "lora_name": rng.choice([junk(rng, 2), "fuzz-other", ctx.adapter]),
            "lora_path": rng.choice([junk(rng, 2), "/", "/proc/self", "/dev/null", "/nonexistent", "a\x00b", "~"]),
            "model": rng.choice([NAME, junk(rng, 2)]),
        }
    )
    if route == "threads":
        body = {"threads": junk(rng, 2)}
        if isinstance(body["threads"], int) and not isinstance(body["threads"], bool) and 1 <= body["threads"] <= 1024:
            body["threads"] = 1  # more: llama.cpp's threads spin at each step, for cores the fuzz's clients hold
    answer = post(ctx, index, dumps(body), path="/" + route if route == "threads" else f"/v1/{route}")
    fields = tuple(body) if isinstance(body, dict) else ()  # a lone surrogate is refused in whatever field holds it
    params = None if body_level(answer) else ("lora_name", "lora_path", "model", "threads", *fields)
    return f"{route} {check(answer, params=params)}"


def keep_alive(ctx: Ctx, rng: random.Random, index: int) -> str:
    """Requests one after another on one kept-alive connection, or all sent at once (pipelined): each answered in
    turn; then the idle connection is closed after --request-timeout-s."""
    kinds = {
        "chat": (request("POST", "/v1/chat/completions", dumps(base())), 200),
        "stream": (request("POST", "/v1/chat/completions", dumps(base(stream=True))), 200),
        "invalid": (request("POST", "/v1/chat/completions", dumps(base(n=0))), 400),
        "nowhere": (request("POST", "/v1/nowhere", b"{}"), 404),
        "health": (request("GET", "/health"), 200),
        "get with a body": (request("GET", "/health", b'{"x": 1}'), 200),
    }
    names = rng.choices(sorted(kinds), k=rng.randrange(2, 6))
    pipelined = rng.random() < 0.4
    with connect(ctx.port, source(index), timeout=60) as sock:
        if pipelined:
            sock.sendall(b"".join(kinds[name][0] for name in names))
        for name in names:
            if not pipelined:
                sock.sendall(kinds[name][0])
            answer = read_answer(sock)
            assert answer.status == kinds[name][1], (name, names, answer.status, answer.body[:300])
            accepted(answer)
            if answer.closed:
                return f"closed after {name}"
        if rng.random() < 0.3:  # (a second's wait)
            sock.settimeout(ctx.limits["request_timeout_s"] + 5)
            assert sock.recv(1) == b"", "an idle kept-alive connection stayed open"
    return "pipelined" if pipelined else "one by one"
