"""An agent that plays episodes with a local transformers checkpoint, generating tool calls in-process.

For small checkpoints and tests: no server, no network. The checkpoint's chat template renders the pack's tools
and the conversation; its response template (``response_template`` saved with the tokenizer, as
``trainers.trl`` writes it) parses each generation into a reply or tool calls. The conversation is the episode's
one rendering (``arena.agents.transcript``): one assistant message per tool call, each followed by its result, so
the model reads exactly what the trainers train it on (text written beside a tool call is not kept).

Decoding is greedy unless ``Sampling`` says otherwise (training rollouts sample); a sampled episode draws from a
seed derived from the agent's seed, the episode's seed (task, world seed and attempt) and the turn, so the same
episode repeats exactly and the attempts of one task differ. Large models keep going through an
OpenAI-compatible server (vLLM) and ``LiteLLMAgent``. torch and transformers are imported on first use.
"""

from __future__ import annotations

import hashlib
import threading
import time
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from arena.agents.base import AgentRun, CallTool, ModelAPIError
from arena.agents.transcript import call_message, opening_messages, result_message
from arena.core.gym import Observation
from arena.core.model_id import ModelId


class CheckpointError(ValueError):
    """A checkpoint folder cannot be used (missing, does not load, or its chat template cannot call tools)."""


class Sampling(BaseModel):
    """How a local checkpoint picks each token (``[local_train_sampling]`` / ``[local_eval_sampling]`` settings).

    Attributes:
        temperature: Softmax temperature; 0 decodes greedily (the other fields are then unused).
        top_p: Nucleus sampling: keep the smallest set of tokens whose probability reaches this (1 keeps all).
        top_k: Keep only the k most likely tokens (0 keeps all).
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    temperature: float = Field(default=0.0, ge=0, le=10)
    top_p: float = Field(default=1.0, gt=0, le=1)
    top_k: int = Field(default=0, ge=0)

    @property
    def greedy(self) -> bool:
        """Whether decoding is greedy."""
        return self.temperature == 0


class TransformersConfig(BaseModel):
    """Which checkpoint the agent runs and how it generates.

    Attributes:
        checkpoint: Folder of a transformers checkpoint (model and tokenizer).
        max_steps: Most model turns in one episode (``step_limit`` beyond).
        max_new_tokens: Tokens generated per turn.
        sampling: Greedy (the default, for evaluation) or sampled decoding (training rollouts).
        seed: The agent's own seed, mixed into every sampled episode's seed.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    checkpoint: str = Field(min_length=1)
    max_steps: int = Field(default=8, ge=1)
    max_new_tokens: int = Field(default=256, ge=1)
    sampling: Sampling = Field(default_factory=Sampling)
    seed: int = 0


class _Loaded:
    """A loaded model and tokenizer, shared by the agents of one checkpoint in this process."""

    def __init__(self, model: Any, tokenizer: Any) -> None:
        self.model = model
        self.tokenizer = tokenizer
        self.lock = threading.Lock()


_CACHE: dict[str, _Loaded] = {}
_CACHE_LOCK = threading.Lock()


def load_checkpoint(path: str | Path) -> tuple[Any, Any]:
    """Load a checkpoint's model (evaluation mode, CPU unless torch sees a GPU) and tokenizer.

    Raises:
        CheckpointError: The folder is missing, does not load, or its chat template cannot render tool calls or
            parse them back.
    """
    folder = Path(path)
    if not folder.is_dir():
        raise CheckpointError(f"checkpoint folder {str(folder)!r} does not exist")
    try:
        from transformers import AutoModelForCausalLM, AutoTokenizer
    except ImportError as exc:
        raise CheckpointError(f"checkpoint {str(folder)!r}: transformers is not installed; "
                              "install gymloop[trl]") from exc
    try:
        tokenizer = AutoTokenizer.from_pretrained(folder)
        model = AutoModelForCausalLM.from_pretrained(folder)
    except Exception as exc:  # every loader failure is reported as an unusable checkpoint
        raise CheckpointError(f"checkpoint {str(folder)!r} does not load: {type(exc).__name__}: {exc}") from exc
    check_tool_template(tokenizer, str(folder))
    import torch

    if torch.cuda.is_available():
        model.to("cuda")
    model.eval()
    return model, tokenizer


def check_tool_template(tokenizer: Any, where: str) -> None:
    """Check that the tokenizer's chat template renders tool calls and that tool calls can be parsed back.

    Raises:
        CheckpointError: No chat template, one that drops tools or tool calls, or no response template.
    """
    template = getattr(tokenizer, "chat_template", None)
    if not template:
        raise CheckpointError(f"checkpoint {where!r} has no chat template; gymloop needs one that supports tool "
                              "calling (e.g. trl.chat_templates qwen3)")
    probe = [{"role": "user", "content": "probe"},
             {"role": "assistant", "content": "", "tool_calls": [
                 {"type": "function", "function": {"name": "probe_tool_x", "arguments": {"probe_arg_y": "v"}}}]},
             {"role": "tool", "name": "probe_tool_x", "content": "probe_result_z"}]
    tools = [{"type": "function", "function": {"name": "probe_tool_x", "description": "Probe.", "parameters": {
        "type": "object", "properties": {"probe_arg_y": {"type": "string"}}, "required": ["probe_arg_y"]}}}]
    try:
        text = tokenizer.apply_chat_template(probe, tools=tools, tokenize=False)
    except Exception as exc:  # a template that errors on tool messages does not support tools
        raise CheckpointError(f"checkpoint {where!r}: its chat template cannot render a tool-calling conversation "
                              f"({type(exc).__name__}: {exc})") from exc
    missing = [part for part in ("probe_tool_x", "probe_arg_y", "probe_result_z") if part not in str(text)]
    if missing:
        raise CheckpointError(f"checkpoint {where!r}: its chat template drops tool calls or tool results "
                              f"(missing {', '.join(missing)} when rendered)")
    if getattr(tokenizer, "response_template", None) is None and getattr(tokenizer, "response_schema", None) is None:
        raise CheckpointError(f"checkpoint {where!r}: its tokenizer has no response template to parse tool calls; "
                              "save it after trl.chat_template_utils.add_response_schema")


def _cached(path: str) -> _Loaded:
    key = str(Path(path).resolve())
    with _CACHE_LOCK:
        loaded = _CACHE.get(key)
        if loaded is None:
            loaded = _CACHE[key] = _Loaded(*load_checkpoint(key))
        return loaded


class TransformersAgent:
    """Plays an episode by generating with a local checkpoint; tool calls go to the gym, results come back.

    Args:
        config: Checkpoint and generation settings.
    """

    name = "transformers"

    def __init__(self, config: TransformersConfig) -> None:
        self.config = config

    @property
    def model_ref(self) -> str:
        """``transformers:<checkpoint folder>``, the model string that plays it again."""
        return ModelId(form="transformers", name=self.config.checkpoint).label

    def load(self) -> None:
        """Load the checkpoint now (once per process), so a bad folder fails before any episode.

        Raises:
            CheckpointError: The folder is missing, does not load, or cannot call tools.
        """
        _cached(self.config.checkpoint)

    def __repr__(self) -> str:
        return f"TransformersAgent(checkpoint={self.config.checkpoint!r}, sampling={self.config.sampling!r})"

    def turn_seed(self, seed: int, turn: int) -> int:
        """The sampling seed of one turn of the episode the rollout engine seeded with ``seed`` (63 bits)."""
        digest = hashlib.sha256(f"transformers|{self.config.seed}|{seed}|{turn}".encode()).digest()
        return int.from_bytes(digest[:8], "big") >> 1

    def run_episode(self, observation: Observation, call_tool: CallTool, *, seed: int) -> AgentRun:
        """Play one episode and return the final reply and usage.

        Raises:
            ModelAPIError: The checkpoint does not load (``configuration``) or generation failed
                (``server_error``); the episode is invalid.
        """
        try:
            loaded = _cached(self.config.checkpoint)
        except CheckpointError as exc:
            raise ModelAPIError("configuration", str(exc)) from exc
        run = AgentRun()
        messages = opening_messages(observation)
        tools = [spec.openai_schema() for spec in observation.tools]
        while run.turns < self.config.max_steps:
            started = time.perf_counter()
            try:
                message, tokens_in, tokens_out = self._generate(loaded, messages, tools,
                                                                self.turn_seed(seed, run.turns))
            except Exception as exc:  # torch/transformers failures are the model side's, never the agent's
                raise ModelAPIError("server_error", f"generation failed: {type(exc).__name__}: {exc}",
                                    usage=run.model_copy()) from exc
            run.latency_s += time.perf_counter() - started
            run.turns += 1
            run.tokens_in += tokens_in
            run.tokens_out += tokens_out
            content = message.get("content") if isinstance(message.get("content"), str) else ""
            calls = [c for c in message.get("tool_calls") or [] if isinstance(c, dict)]
            if not calls:
                run.reply = content or ""
                run.stop_reason = "reply"
                return run.model_copy()
            for call in calls:
                function = call.get("function") or {}
                name = str(function.get("name") or "")
                arguments = function.get("arguments")
                result = call_tool(name, arguments if isinstance(arguments, dict | str) else None)
                messages += [call_message(name, arguments), result_message(name, result)]
        run.stop_reason = "step_limit"
        return run.model_copy()

    def _generate(self, loaded: _Loaded, messages: list[dict[str, Any]], tools: list[dict[str, Any]],
                  seed: int) -> tuple[dict[str, Any], int, int]:
        import torch

        tokenizer, model = loaded.tokenizer, loaded.model
        prompt = tokenizer.apply_chat_template(messages, tools=tools, add_generation_prompt=True, tokenize=False)
        inputs = tokenizer(prompt, return_tensors="pt", add_special_tokens=False).to(model.device)
        sampling = self.config.sampling
        options: dict[str, Any] = {"do_sample": False, "temperature": None, "top_p": None, "top_k": None}
        if not sampling.greedy:
            options = {"do_sample": True, "temperature": sampling.temperature, "top_p": sampling.top_p,
                       "top_k": sampling.top_k or None}
        # The process-wide generator is forked, so sampling here never shifts anyone else's random draws.
        with loaded.lock, torch.no_grad(), torch.random.fork_rng(devices=[]):
            torch.manual_seed(seed)
            output = model.generate(**inputs, max_new_tokens=self.config.max_new_tokens,
                                    pad_token_id=tokenizer.pad_token_id, **options)
        new = output[0][inputs["input_ids"].shape[1]:].tolist()
        parsed = _parse(tokenizer, new, prompt, tools)
        return parsed, int(inputs["input_ids"].shape[1]), len(new)


def _parse(tokenizer: Any, ids: list[int], prompt: str, tools: list[dict[str, Any]]) -> dict[str, Any]:
    """Parse generated tokens into an assistant message; text that does not parse is a plain reply."""
    try:
        parsed = tokenizer.parse_response(ids, prefix=prompt, tools=tools)
    except Exception:  # malformed tool-call text is the model's reply, judged as such
        return {"role": "assistant", "content": tokenizer.decode(ids, skip_special_tokens=True)}
    return parsed if isinstance(parsed, dict) else {"role": "assistant", "content": str(parsed)}
