"""A scripted fake LLM: a real aiohttp HTTP server on 127.0.0.1 speaking the OpenAI Chat Completions
and the Anthropic Messages wire formats.

Each test queues replies (:meth:`FakeLLM.reply_json`, :meth:`FakeLLM.reply_text`,
:meth:`FakeLLM.reply_status`, :meth:`FakeLLM.reply_slow`); every request is recorded with its
headers and JSON body in :attr:`FakeLLM.requests`.  With an empty queue the server asks
:attr:`FakeLLM.responder` (a scripted model that reads the prompt: :class:`Prompt`), else answers 500.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Callable, Collection
from dataclasses import dataclass, field
from typing import Any

from aiohttp import web


@dataclass
class Scripted:
    status: int = 200
    text: str | None = None      # the model's reply text (wrapped in the provider's envelope)
    delay: float = 0.0           # seconds before answering (timeouts)
    raw_body: str | None = None  # a body sent as is (bad envelopes)


@dataclass
class Recorded:
    path: str
    headers: dict[str, str]
    body: dict[str, Any]


@dataclass(frozen=True)
class Prompt:
    """What a generator sent, read back from its user message (query.answer.generators.build_messages):
    the ``question``, the fenced ``evidence`` (``{E-id: text}``) and whether it is the ``repair`` round."""

    question: str
    evidence: dict[str, str]
    repair: bool

    @classmethod
    def of(cls, user: str) -> Prompt:
        question = user.split("\n", 1)[0].removeprefix("Question: ").strip()
        found = re.findall(r"<<<DATA-\w+ (E\d+) BEGIN>>>[^\n]*\n(.*?)\n<<<DATA-\w+ \1 END>>>", user, re.S)
        return cls(question, dict(found), "failed the checks" in user)

    def holding(self, quote: str, about: str = "", taken: Collection[str] = ()) -> str | None:
        """The evidence id whose text holds ``quote`` (whitespace collapsed), else None; of several, one not
        ``taken`` (already cited for another quote of the claim), then the one sharing the most words with
        ``about`` (the claim the model means to make), then the first."""
        want = " ".join(quote.split())
        words = set(about.split())
        found = [e for e, text in self.evidence.items() if want in " ".join(text.split())]
        return max(found, key=lambda e: (e not in taken, len(words & set(self.evidence[e].split()))), default=None)


@dataclass
class FakeLLM:
    """The server's script and what it received."""

    queue: list[Scripted] = field(default_factory=list)
    requests: list[Recorded] = field(default_factory=list)
    port: int = 0
    responder: Callable[[Prompt], str] | None = None  # answers when the queue is empty

    @property
    def openai_base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def anthropic_base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def reply_json(self, claims: list[dict[str, Any]], insufficient: bool = False, fence: bool = False) -> None:
        text = json.dumps({"claims": claims, "insufficient": insufficient}, ensure_ascii=False)
        if fence:
            text = f"Here is the answer:\n```json\n{text}\n```"
        self.queue.append(Scripted(text=text))

    def reply_text(self, text: str) -> None:
        self.queue.append(Scripted(text=text))

    def reply_status(self, status: int) -> None:
        self.queue.append(Scripted(status=status, raw_body='{"error": {"message": "boom"}}'))

    def reply_slow(self, delay: float, text: str = '{"claims": [], "insufficient": true}') -> None:
        self.queue.append(Scripted(text=text, delay=delay))

    async def handle(self, request: web.Request) -> web.StreamResponse:
        try:
            body = await request.json()
        except json.JSONDecodeError:
            body = {}
        self.requests.append(Recorded(request.path, dict(request.headers), body))
        if self.queue:
            step = self.queue.pop(0)
        elif self.responder is not None:
            messages = body.get("messages") or [{}]
            step = Scripted(text=self.responder(Prompt.of(str(messages[-1].get("content", "")))))
        else:
            step = Scripted(status=500, raw_body="{}")
        if step.delay:
            await asyncio.sleep(step.delay)
        if step.raw_body is not None:
            return web.Response(status=step.status, text=step.raw_body, content_type="application/json")
        if request.path.endswith("/messages"):
            payload: dict[str, Any] = {
                "id": "msg_1", "type": "message", "role": "assistant", "model": body.get("model"),
                "content": [{"type": "text", "text": step.text}], "stop_reason": "end_turn",
                "usage": {"input_tokens": 1, "output_tokens": 1},
            }
        else:
            payload = {
                "id": "chatcmpl-1", "object": "chat.completion", "created": 0, "model": body.get("model"),
                "choices": [{"index": 0, "finish_reason": "stop",
                             "message": {"role": "assistant", "content": step.text}}],
            }
        return web.json_response(payload, status=step.status)


async def start_fake_llm() -> tuple[FakeLLM, web.AppRunner]:
    """Start the server on 127.0.0.1 (a free port); return it and its runner (call ``cleanup()``)."""
    fake = FakeLLM()
    app = web.Application()
    app.router.add_post("/v1/chat/completions", fake.handle)
    app.router.add_post("/v1/messages", fake.handle)
    runner = web.AppRunner(app, shutdown_timeout=0.1)
    await runner.setup()
    site = web.TCPSite(runner, "127.0.0.1", 0)
    await site.start()
    server = site._server
    assert server is not None
    fake.port = server.sockets[0].getsockname()[1]  # type: ignore[union-attr]
    return fake, runner
