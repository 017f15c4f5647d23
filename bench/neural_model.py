"""A small transformer and its tokenizer built from nothing, for the neural benchmark (no hub download).

- Tokenizer: byte-level BPE trained here on the rendered conversations, with every digit its own token and words
  kept whole (``search_users`` can become one token): an id such as ``OPS-131`` is ``OPS``, ``-``, ``1``, ``3``,
  ``1``, so copying an id is copying a few tokens that every id shares, never recalling a rare merged token.
- Chat template (``COMPACT_TEMPLATE``): the Qwen format gymloop's template check and TRL's response parser know
  (``<|im_start|>role``, ``<tool_call>{"name": ..., "arguments": ...}</tool_call>``, ``<tool_response>``), without
  the tool schemas and with the system message cut to its first paragraph (the persona and permissions): a model
  trained on one gym from scratch has no use for 27 schemas and the policy text in every prompt, and every token
  of context costs CPU time. ``{% generation %}`` marks exactly the text the model writes (content, tool calls,
  end of turn), so SFT's loss covers the assistant's tokens only.
- Model: a Llama (RoPE, RMSNorm, SwiGLU) with tied input and output embeddings, sizes as arguments.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

SPECIAL_TOKENS = ("<|endoftext|>", "<|im_start|>", "<|im_end|>", "<tool_call>", "</tool_call>", "<tool_response>",
                  "</tool_response>")
"""Special tokens of the Qwen chat format."""

PRE_TOKENIZER_PATTERN = r" ?[A-Za-z_]+|\d|[^A-Za-z_\d]+"
"""Pieces BPE merges within: a word (with its leading space and underscores), one digit, a run of the rest."""

COMPACT_TEMPLATE = (
    "{%- for message in messages %}"
    "{%- if message.role == 'system' %}"
    "{{- '<|im_start|>system\\n' + message.content.split('\\n\\n')[0] + '<|im_end|>\\n' }}"
    "{%- elif message.role == 'user' %}"
    "{{- '<|im_start|>user\\n' + message.content + '<|im_end|>\\n' }}"
    "{%- elif message.role == 'assistant' %}"
    "{{- '<|im_start|>assistant\\n' }}{% generation %}"
    "{%- if message.content %}{{- message.content }}{%- endif %}"
    "{%- for tool_call in message.tool_calls or [] %}"
    "{%- if tool_call.function is defined %}{%- set tool_call = tool_call.function %}{%- endif %}"
    "{{- '<tool_call>{\"name\": \"' + tool_call.name + '\", \"arguments\": ' + (tool_call.arguments | tojson)"
    " + '}</tool_call>' }}"
    "{%- endfor %}"
    "{{- '<|im_end|>' }}{% endgeneration %}{{- '\\n' }}"
    "{%- elif message.role == 'tool' %}"
    "{{- '<|im_start|>user\\n<tool_response>' + message.content + '</tool_response><|im_end|>\\n' }}"
    "{%- endif %}"
    "{%- endfor %}"
    "{%- if add_generation_prompt %}{{- '<|im_start|>assistant\\n' }}{%- endif %}"
)
"""The compact Qwen-format chat template (tool calls and results in Qwen's markup, no tool schemas)."""


@dataclass(frozen=True)
class ModelSize:
    """The transformer's sizes.

    Attributes:
        vocab: BPE vocabulary size (special tokens included).
        hidden: Width of the residual stream.
        layers: Transformer blocks.
        heads: Attention heads per block.
        ffn: Width of each block's SwiGLU feed-forward layer.
        context: Longest sequence the model is built for (RoPE positions).
    """

    vocab: int = 1200
    hidden: int = 128
    layers: int = 4
    heads: int = 4
    ffn: int = 384
    context: int = 4096


def train_tokenizer(texts: Iterable[str], vocab: int, *, numbers: int = 0) -> Any:
    """A byte-level BPE tokenizer trained on ``texts`` with the compact template and Qwen's response parser.

    With ``numbers``, every number from 0 to ``numbers - 1`` is one token of its own (pointer-style ids: ``OPS-131``
    is ``OPS``, ``-``, ``131``; a longer run of digits takes the longest such numbers from the left), so an id is
    copied by pointing at one rare token instead of matching a run of digits that every id shares.
    """
    from tokenizers import AddedToken, Regex, Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import PreTrainedTokenizerFast
    from trl.chat_template_utils import qwen3_template

    bpe = Tokenizer(models.BPE(unk_token=None))
    bpe.pre_tokenizer = pre_tokenizers.Sequence([
        pre_tokenizers.Split(Regex(PRE_TOKENIZER_PATTERN), behavior="isolated"),
        pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=False)])
    bpe.decoder = decoders.ByteLevel()
    bpe.train_from_iterator(texts, trainers.BpeTrainer(
        vocab_size=vocab, special_tokens=list(SPECIAL_TOKENS), min_frequency=2,
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    if numbers:
        bpe.add_tokens([AddedToken(str(n), normalized=False) for n in range(numbers)])
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=bpe, eos_token="<|im_end|>", pad_token="<|endoftext|>")
    tokenizer.chat_template = COMPACT_TEMPLATE
    tokenizer.response_template = qwen3_template
    return tokenizer


def render_for_tokenizer(conversations: Iterable[list[dict[str, Any]]]) -> list[str]:
    """The conversations as the compact template writes them (the tokenizer's training text)."""
    probe = train_tokenizer([""], vocab=len(SPECIAL_TOKENS) + 256)
    return [str(probe.apply_chat_template(c, tokenize=False)) for c in conversations]


def build_checkpoint(folder: Path, tokenizer: Any, size: ModelSize, *, seed: int) -> Path:
    """Save a randomly initialised Llama of ``size`` with ``tokenizer`` to ``folder``; return the folder."""
    import torch
    from transformers import LlamaConfig, LlamaForCausalLM

    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=size.hidden, intermediate_size=size.ffn,
                         num_hidden_layers=size.layers, num_attention_heads=size.heads,
                         num_key_value_heads=size.heads, max_position_embeddings=size.context,
                         eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id, bos_token_id=None,
                         tie_word_embeddings=True)
    torch.manual_seed(seed)
    model = LlamaForCausalLM(config)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    folder.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(folder)
    tokenizer.save_pretrained(folder)
    return folder


def parameter_count(folder: Path) -> int:
    """Parameters of the checkpoint in ``folder`` (tied embeddings counted once)."""
    from transformers import AutoModelForCausalLM

    model = AutoModelForCausalLM.from_pretrained(folder)
    return sum(p.numel() for p in model.parameters())
