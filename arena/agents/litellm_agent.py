"""An agent that plays episodes by OpenAI-style tool calling through litellm or straight to an OpenAI server.

It works with any litellm model string and, through ``api_base``, with local
OpenAI-compatible servers (vLLM, SGLang, llama.cpp server); against such a
server ``client="openai"`` sends the same requests for less than half of
litellm's CPU per episode (see ``arena.agents.chat_client``). Model-API failures are
classified and retried here; they never count as the agent's mistakes. The
client library is imported on first use so that importing ``arena`` stays fast.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
import time
from collections.abc import Awaitable, Callable, Generator
from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SecretStr

from arena.agents._model_api import APIFailure, backoff_delay, classify
from arena.agents.base import AgentRun, CallTool, ConversationOver, ModelAPIError, UserChannel, UserMessage
from arena.agents.chat_client import ChatClient, ClientName
from arena.agents.limits import report_call
from arena.core.conversation import STOP_TOKEN
from arena.core.gym import Observation
from arena.core.model_id import llm_label
from arena.core.results import ToolResult
from arena.core.text import clean_text
from arena.core.toolkit import ToolSpec

logger = logging.getLogger(__name__)

STOP_MODEL_API_ERROR = "model_api_error"
"""``AgentRun.stop_reason`` of the usage attached to a ``ModelAPIError``."""


class LiteLLMConfig(BaseModel):
    """How the LiteLLM agent reaches its model and when it stops.

    The API key is a secret: it is masked in ``repr`` and left out of every dump.

    Attributes:
        model: Any litellm model string, e.g. ``openai/gpt-4o-mini`` or ``hosted_vllm/qwen``.
        api_base: Base URL of an OpenAI-compatible server (local vLLM, SGLang, llama.cpp).
        api_key: API key, if the provider needs one (never logged or serialized).
        timeout_s: Request timeout in seconds, passed on every call.
        max_steps: Most model turns in one episode (``step_limit`` beyond).
        max_tokens: Episode token budget, prompt plus completion (``token_limit`` beyond).
        max_completion_tokens: Per-call completion limit sent to the model, if any.
        max_retries: Retries of one call after a rate limit, timeout or server error.
        backoff_base_s: First backoff ceiling in seconds (doubling per retry).
        backoff_cap_s: Largest backoff ceiling in seconds.
        max_retry_after_s: Longest ``Retry-After`` honoured; a longer one fails the call at once.
        temperature: Sampling temperature.
        seed: Base of the sampling seed sent to the model (the episode seed is added);
            ``None`` sends no seed.
        input_cost_per_token: Price of a prompt token in US dollars (local models).
        output_cost_per_token: Price of a completion token in US dollars (local models).
        client: ``litellm`` (any provider) or ``openai`` (the OpenAI protocol straight to an OpenAI-compatible
            server: ``hosted_vllm/`` and ``openai/`` prefixes are stripped from the model name; about a
            sixth of litellm's CPU per episode, for many episodes in flight).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    model: str = Field(min_length=1)
    api_base: str | None = None
    api_key: SecretStr | None = Field(default=None, exclude=True, repr=False)
    timeout_s: float = Field(default=60.0, gt=0)
    max_steps: int = Field(default=30, ge=1)
    max_tokens: int = Field(default=200_000, ge=1)
    max_completion_tokens: int | None = Field(default=None, ge=1)
    max_retries: int = Field(default=4, ge=0)
    backoff_base_s: float = Field(default=1.0, ge=0)
    backoff_cap_s: float = Field(default=30.0, ge=0)
    max_retry_after_s: float = Field(default=120.0, ge=0)
    temperature: float = Field(default=0.0, ge=0)
    seed: int | None = 0
    input_cost_per_token: float | None = Field(default=None, ge=0)
    output_cost_per_token: float | None = Field(default=None, ge=0)
    client: ClientName = "litellm"


PROBE_TOOL: dict[str, Any] = {
    "type": "function",
    "function": {"name": "ping", "description": "Check that the service answers.",
                 "parameters": {"type": "object", "properties": {}, "required": []}},
}
"""The one tool a preflight request offers, to check that the model accepts tools."""

PROBE_PROMPT = "Reply with the word ok."
"""The user message of a preflight request."""


CONVERSATION_RULES = (
    "You are talking with the user. Each of your turns either sends the user a message in plain text or calls "
    "tools, never both; the user answers your messages. Act on the company's systems only through the tools. "
    "The user ends the conversation when their request is handled."
)
"""How the system prompt of a conversational episode tells the agent it talks with the user."""


def system_prompt(observation: Observation) -> str:
    """Return the system prompt of an episode: who the agent acts as, how it answers, and the business rules."""
    persona = observation.task.get("persona") or {}
    permissions = ", ".join(persona.get("permissions") or []) or "none"
    how = CONVERSATION_RULES if observation.task.get("conversational") else (
        "Act on the company's systems only through the tools. When the request is handled (or cannot be), "
        "answer the requester in plain text without calling a tool; that answer ends the conversation.")
    return (
        f"You are {persona.get('name', 'an employee')}, working as {persona.get('role', 'agent')}. "
        f"Your permissions: {permissions}.\n\n{how}\n\n# Policy\n\n{observation.policy}"
    )


def tool_message_content(result: ToolResult) -> str:
    """Return the JSON a tool result is fed back to the model as."""
    if result.ok:
        return json.dumps({"ok": True, "output": result.output}, default=str)
    payload: dict[str, Any] = {"ok": False}
    if result.error is not None:
        payload["error"] = result.error.model_dump(exclude_none=True)
    return json.dumps(payload, default=str)


class _Episode:
    """One episode's usage, seed and backoff randomness."""

    def __init__(self, config: LiteLLMConfig, seed: int) -> None:
        self.run = AgentRun(stop_reason=STOP_MODEL_API_ERROR)
        self.seed = seed
        self.rng = random.Random(f"litellm-backoff|{config.seed}|{seed}")

    def failed(self, failure: APIFailure, attempts: int) -> ModelAPIError:
        message = f"{failure.message} (after {attempts} attempt{'s' if attempts != 1 else ''})"
        return ModelAPIError(failure.kind, message, invalid=not failure.model_caused, usage=self.run.model_copy())


class LiteLLMAgent:
    """Plays an episode as an OpenAI-style tool-calling loop through litellm.

    The system prompt holds the persona and the pack's policy; the task's
    prompt is the first user message; the pack's tools are offered as
    functions. Each tool call goes to the gym and its result comes back as a
    ``tool`` message. The episode ends on a reply without tool calls, after
    ``max_steps`` model turns, or once the tokens used exceed ``max_tokens``
    (the calls of the turn that crossed the budget are not made).

    Args:
        config: Model, endpoint, limits, retries and prices.
        sleep: Function used to wait between retries (injectable for tests).
        async_sleep: Coroutine function used to wait between retries on an event loop.
    """

    name = "litellm"

    def __init__(self, config: LiteLLMConfig, *, sleep: Callable[[float], None] = time.sleep,
                 async_sleep: Callable[[float], Awaitable[None]] = asyncio.sleep) -> None:
        self.config = config
        self._sleep = sleep
        self._async_sleep = async_sleep
        key = config.api_key.get_secret_value() if config.api_key is not None else None
        self._client = ChatClient(config.client, config.model, config.api_base, key)
        self._litellm_prices: bool | None = None
        self._schemas: dict[tuple[int, ...], tuple[list[ToolSpec], list[dict[str, Any]]]] = {}

    @property
    def model_ref(self) -> str:
        """The model string, with the endpoint when one is set, masked (``m@http://***@host/v1``)."""
        return llm_label(self.config.model, self.config.api_base)

    def __repr__(self) -> str:
        return f"LiteLLMAgent(model_ref={self.model_ref!r})"

    @property
    def prefers_event_loop(self) -> bool:
        """The ``openai`` client plays concurrent episodes on an event loop; litellm's own async path stays unused.

        litellm's ``acompletion`` leaves coroutines of its own un-awaited when calls fail, and its client CPU
        dwarfs what threads cost, so the ``litellm`` client keeps a thread per episode in flight.
        """
        return self.config.client == "openai"

    def run_episode(self, observation: Observation, call_tool: CallTool, *, seed: int) -> AgentRun:
        """Play one episode and return the final reply and usage.

        Raises:
            ModelAPIError: The model's API failed after retries (``invalid``: the
                infrastructure failed), or refused the request its own conversation
                made (400, context length) or answered with something unreadable (not
                invalid: the model's failed episode); ``usage`` holds what the episode
                had used.
        """
        return self._drive(observation, call_tool, None, seed)

    async def arun_episode(self, observation: Observation, call_tool: CallTool, *, seed: int) -> AgentRun:
        """``run_episode`` on an event loop: the same conversation, its model calls awaited.

        Raises:
            ModelAPIError: As ``run_episode``.
        """
        return await self._adrive(observation, call_tool, None, seed)

    def run_conversation(self, observation: Observation, call_tool: CallTool, user: UserChannel, *,
                         seed: int) -> AgentRun:
        """Converse with the user until the user closes the conversation (or a limit is reached).

        A model answer without tool calls is a message to ``user``, whose answer comes back as the next user
        message; a message holding ``###STOP###`` closes the conversation from the agent's side.

        Raises:
            ModelAPIError: As ``run_episode``.
            ConversationOver: The conversation was ended by a limit of the episode.
        """
        return self._drive(observation, call_tool, user, seed)

    async def arun_conversation(self, observation: Observation, call_tool: CallTool, user: UserChannel, *,
                                seed: int) -> AgentRun:
        """``run_conversation`` on an event loop: the model's and the user's answers awaited.

        Raises:
            ModelAPIError: As ``run_episode``.
            ConversationOver: As ``run_conversation``.
        """
        return await self._adrive(observation, call_tool, user, seed)

    def _drive(self, observation: Observation, call_tool: CallTool, user: UserChannel | None, seed: int) -> AgentRun:
        """Play the episode's turns, answering each model request with a model call and each message with the user."""
        episode = _Episode(self.config, seed)
        tools = self._tool_schemas(observation)
        turns = self._conversation(observation, call_tool, episode, user is not None)
        try:
            wanted = next(turns)
            while True:
                if isinstance(wanted, str):
                    answer = _ask(user, wanted)
                    tools = _with_revealed(tools, answer)
                    wanted = turns.send(answer)
                else:
                    wanted = turns.send(self._complete(wanted, tools, episode))
        except StopIteration as end:
            return end.value  # type: ignore[no-any-return]
        except ConversationOver:  # a limit of the conversation ended it: the run so far is the episode's
            return _over(episode.run)

    async def _adrive(self, observation: Observation, call_tool: CallTool, user: UserChannel | None,
                      seed: int) -> AgentRun:
        """``_drive`` on an event loop."""
        episode = _Episode(self.config, seed)
        tools = self._tool_schemas(observation)
        turns = self._conversation(observation, call_tool, episode, user is not None)
        try:
            wanted = next(turns)
            while True:
                if isinstance(wanted, str):
                    answer = await _aask(user, wanted)
                    tools = _with_revealed(tools, answer)
                    wanted = turns.send(answer)
                else:
                    wanted = turns.send(await self._acomplete(wanted, tools, episode))
        except StopIteration as end:
            return end.value  # type: ignore[no-any-return]
        except ConversationOver:  # a limit of the conversation ended it: the run so far is the episode's
            return _over(episode.run)

    def _conversation(self, observation: Observation, call_tool: CallTool, episode: _Episode,
                      converse: bool) -> Generator[list[dict[str, Any]] | str, Any, AgentRun]:
        """The episode's turns, returning the run.

        Yields the messages of each model call (and is sent the model's answer) and, when it ``converse`` s, each
        message for the user (and is sent the user's ``UserMessage``); otherwise a message ends the episode.
        """
        config = self.config
        run = episode.run
        messages: list[dict[str, Any]] = [
            {"role": "system", "content": system_prompt(observation)},
            {"role": "user", "content": str(observation.task.get("prompt", ""))},
        ]
        while run.turns < config.max_steps:
            response = yield messages
            run.turns += 1
            message = response.choices[0].message
            unreadable = _unreadable(message)
            if unreadable:
                raise episode.failed(APIFailure("malformed_answer", unreadable), 1)
            # The model's text enters here: lone surrogates would make every later request unencodable.
            content = clean_text(message.content) if isinstance(message.content, str) else ""
            tool_calls = [_clean_call(call) for call in message.tool_calls or []]
            if not tool_calls:
                run.reply = content
                if not converse:
                    run.stop_reason = "reply"
                    return run.model_copy()
                if STOP_TOKEN in content:
                    run.stop_reason = "agent_stop"
                    return run.model_copy()
                answer: UserMessage = yield content
                if answer.ended:
                    run.stop_reason = "user_stop"
                    return run.model_copy()
                messages.append({"role": "assistant", "content": content})
                messages.append({"role": "user", "content": answer.text})
                continue
            if run.tokens_in + run.tokens_out > config.max_tokens:
                run.reply = content
                run.stop_reason = "token_limit"
                return run.model_copy()
            messages.append(self._assistant_message(content, tool_calls, run.turns))
            for index, call in enumerate(tool_calls):
                call_id = str(getattr(call, "id", None) or f"call_{run.turns}_{index}")
                function = call.function
                result = call_tool(str(function.name or ""), _arguments(function.arguments))
                messages.append({"role": "tool", "tool_call_id": call_id, "content": tool_message_content(result)})
        run.stop_reason = "step_limit"
        return run.model_copy()

    def probe(self, *, tools: bool = True, timeout_s: float = 20.0) -> AgentRun:
        """Send one tiny request (offering one tool when ``tools``) with this agent's client and settings.

        Returns:
            The usage of the request.

        Raises:
            ModelAPIError: The request failed (not retried); ``kind`` classifies why and ``message`` says it.
        """
        request = self._request([{"role": "user", "content": PROBE_PROMPT}], [PROBE_TOOL] if tools else [],
                                0)
        request["timeout"] = min(timeout_s, self.config.timeout_s)
        request["max_tokens"] = 16
        run = AgentRun()
        try:
            response = self._client.complete(request)
        except Exception as exc:  # classified for the caller, which names the model and endpoint
            failure = classify(exc)
            raise ModelAPIError(failure.kind, failure.message, usage=run) from exc
        self._account(response, run)
        if not getattr(response, "choices", None):
            raise ModelAPIError("server_error", "the model answered with no choices", usage=run)
        return run

    def _tool_schemas(self, observation: Observation) -> list[dict[str, Any]]:
        """The tools offered to the model: fresh copies for litellm (it edits them), else one list per pack."""
        specs = observation.tools
        if self._client.name == "litellm":
            return [spec.openai_schema() for spec in specs]
        # Each observation holds its own list of the pack's specs, so the cache is keyed by the specs themselves
        # (kept alive in the entry, and compared by identity: ids from another process mean nothing here).
        key = tuple(id(spec) for spec in specs)
        cached = self._schemas.get(key)
        if cached is None or any(mine is not theirs for mine, theirs in zip(cached[0], specs, strict=True)):
            cached = (list(specs), [spec.openai_schema() for spec in specs])
            self._schemas[key] = cached
        return cached[1]

    @staticmethod
    def _assistant_message(content: str, tool_calls: list[Any], turn: int) -> dict[str, Any]:
        """The model's tool-calling turn as it goes back in the next request (no ``content`` key when empty)."""
        message: dict[str, Any] = {"content": content} if content else {}
        return {
            "role": "assistant",
            **message,
            "tool_calls": [
                {
                    "id": str(getattr(call, "id", None) or f"call_{turn}_{index}"),
                    "type": "function",
                    "function": {"name": str(call.function.name or ""), "arguments": call.function.arguments or ""},
                }
                for index, call in enumerate(tool_calls)
            ],
        }

    def _request(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], seed: int) -> dict[str, Any]:
        config = self.config
        request: dict[str, Any] = {
            "model": config.model,
            "messages": messages,
            "timeout": config.timeout_s,
            "temperature": config.temperature,
            "num_retries": 0,
            "max_retries": 0,
            "drop_params": True,
        }
        if tools:
            request["tools"] = tools
            request["tool_choice"] = "auto"
        if config.api_base:
            request["api_base"] = config.api_base
        if config.api_key is not None:
            request["api_key"] = config.api_key.get_secret_value()
        if config.seed is not None:
            request["seed"] = config.seed + seed
        if config.max_completion_tokens is not None:
            request["max_tokens"] = config.max_completion_tokens
        return request

    def _complete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], episode: _Episode) -> Any:
        attempt = 0
        while True:
            started = time.perf_counter()
            try:
                response = self._client.complete(self._request(messages, tools, episode.seed))
            except Exception as exc:  # every failure of the call is classified
                episode.run.latency_s += time.perf_counter() - started
                self._sleep(self._retry_delay(exc, attempt, episode))
                attempt += 1
                continue
            episode.run.latency_s += time.perf_counter() - started
            return self._answered(response, attempt, episode)

    async def _acomplete(self, messages: list[dict[str, Any]], tools: list[dict[str, Any]], episode: _Episode) -> Any:
        attempt = 0
        while True:
            started = time.perf_counter()
            try:
                response = await self._client.acomplete(self._request(messages, tools, episode.seed))
            except Exception as exc:  # every failure of the call is classified
                episode.run.latency_s += time.perf_counter() - started
                await self._async_sleep(self._retry_delay(exc, attempt, episode))
                attempt += 1
                continue
            episode.run.latency_s += time.perf_counter() - started
            return self._answered(response, attempt, episode)

    def _retry_delay(self, exc: Exception, attempt: int, episode: _Episode) -> float:
        """How long to wait before retrying a failed call.

        Raises:
            ModelAPIError: The failure is not retried (not retryable, retries spent, Retry-After too long).
        """
        config = self.config
        failure = classify(exc)
        report_call(False, failure.kind)
        if not failure.retryable or attempt >= config.max_retries:
            raise episode.failed(failure, attempt + 1) from exc
        if failure.retry_after is not None and failure.retry_after > config.max_retry_after_s:
            raise episode.failed(APIFailure(
                failure.kind,
                f"{failure.message}; Retry-After {failure.retry_after:g}s exceeds "
                f"max_retry_after_s={config.max_retry_after_s:g}"), attempt + 1) from exc
        delay = backoff_delay(attempt, base_s=config.backoff_base_s, cap_s=config.backoff_cap_s,
                              retry_after=failure.retry_after, rng=episode.rng)
        logger.warning("model %s: %s on attempt %d; retrying in %.3fs", config.model, failure.kind,
                       attempt + 1, delay)
        return delay

    def _answered(self, response: Any, attempt: int, episode: _Episode) -> Any:
        report_call(True)
        self._account(response, episode.run)
        if not getattr(response, "choices", None):
            raise episode.failed(APIFailure("malformed_answer", "the model answered with no choices"), attempt + 1)
        return response

    def _account(self, response: Any, run: AgentRun) -> None:
        usage = getattr(response, "usage", None)
        tokens_in = int(getattr(usage, "prompt_tokens", 0) or 0)
        tokens_out = int(getattr(usage, "completion_tokens", 0) or 0)
        run.tokens_in += tokens_in
        run.tokens_out += tokens_out
        run.cost += self._cost(response, tokens_in, tokens_out)

    def _cost(self, response: Any, tokens_in: int, tokens_out: int) -> float:
        config = self.config
        if config.input_cost_per_token is not None or config.output_cost_per_token is not None:
            return tokens_in * (config.input_cost_per_token or 0.0) + tokens_out * (config.output_cost_per_token or 0.0)
        if self._litellm_prices is False:
            return 0.0
        try:
            if self._client.name == "litellm":
                cost = float(self._client.litellm().completion_cost(completion_response=response))
            else:
                prices = self._client.litellm().cost_per_token(model=config.model, prompt_tokens=tokens_in,
                                                               completion_tokens=tokens_out)
                cost = float(prices[0]) + float(prices[1])
        except Exception:  # litellm has no price for this model: count it as free
            self._litellm_prices = False
            return 0.0
        self._litellm_prices = True
        return cost


class ChatSession:
    """One episode's plain chat requests (no tools) of a model, through the agent's client code.

    The requests get the same shape, retries, failure classes and accounting as the agent's own turns.

    A simulated user and a judge talk to their models through it, each with its own ``LiteLLMAgent`` (its own
    model, limits and prices), so their usage is counted apart from the agent's.

    Args:
        agent: The agent whose client and settings the requests use.
        seed: The episode's seed (the sampling seed sent is the config's plus it).
    """

    def __init__(self, agent: LiteLLMAgent, seed: int) -> None:
        self._agent = agent
        self._episode = _Episode(agent.config, seed)
        self._episode.run.stop_reason = "reply"
        self.requests = 0

    @property
    def usage(self) -> AgentRun:
        """Tokens, cost and latency of the requests so far."""
        return self._episode.run

    def ask(self, messages: list[dict[str, Any]]) -> str:
        """Send the messages, return the model's text.

        Raises:
            ModelAPIError: The request failed after retries, or the answer cannot be read.
        """
        self.requests += 1
        return self._text(self._agent._complete(messages, [], self._episode))

    async def aask(self, messages: list[dict[str, Any]]) -> str:
        """``ask`` on an event loop.

        Raises:
            ModelAPIError: As ``ask``.
        """
        self.requests += 1
        return self._text(await self._agent._acomplete(messages, [], self._episode))

    def _text(self, response: Any) -> str:
        message = response.choices[0].message
        content = getattr(message, "content", None)
        if not isinstance(content, str):
            raise self._episode.failed(APIFailure("malformed_answer", "the model answered with no text"), 1)
        return clean_text(content)


def _with_revealed(tools: list[dict[str, Any]], answer: UserMessage) -> list[dict[str, Any]]:
    """The tools offered from now on: those offered so far and those the user's message revealed."""
    if not answer.tools:
        return tools
    offered = {t["function"]["name"] for t in tools}
    return tools + [spec.openai_schema() for spec in answer.tools if spec.name not in offered]


def _over(run: AgentRun) -> AgentRun:
    """The run of an agent whose conversation a limit ended."""
    over = run.model_copy()
    over.stop_reason = "ended"
    return over


def _ask(user: UserChannel | None, message: str) -> UserMessage:
    """The user's answer to the agent's message.

    Raises:
        ConversationOver: The episode has no user to answer.
    """
    if user is None:
        raise ConversationOver("the episode has no user to answer the agent's message")
    return user.send(message)


async def _aask(user: UserChannel | None, message: str) -> UserMessage:
    """``_ask`` on an event loop."""
    if user is None:
        raise ConversationOver("the episode has no user to answer the agent's message")
    return await user.asend(message)


def _unreadable(message: Any) -> str:
    """Why the model's message cannot be read as a reply or tool calls (``""`` when it can)."""
    if message is None:
        return "the model's answer has no message"
    calls = getattr(message, "tool_calls", None) or []
    if not isinstance(calls, list):
        return f"the model's tool calls are not a list: {calls!r:.100}"
    for call in calls:
        function = getattr(call, "function", None)
        if function is None or not isinstance(getattr(function, "name", None), str):
            return f"the model's tool call has no function name: {call!r:.100}"
    return ""


def _clean_call(call: Any) -> Any:
    """A tool call with lone surrogates replaced in its name and JSON arguments (edited in place)."""
    function = call.function
    if isinstance(function.name, str):
        function.name = clean_text(function.name)
    if isinstance(function.arguments, str):
        function.arguments = clean_text(function.arguments)
    return call


def _arguments(raw: Any) -> str | dict[str, Any] | None:
    """Return tool-call arguments as the gym takes them: the raw JSON string, or ``None`` when empty."""
    if raw is None or (isinstance(raw, str) and not raw.strip()):
        return None
    if isinstance(raw, dict):
        return raw
    return str(raw)
