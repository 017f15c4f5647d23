"""A tiny causal LM and a tokenizer trained here, with a tool-calling chat template: nothing from a hub.

``build_tiny_checkpoint`` saves a random 2-layer Llama (hidden size 64) and a BPE tokenizer trained on the packs'
text. A random model emits no tool calls, so ``script_tool_call`` turns one into a model that does: it silences the
attention and MLP blocks (the output then depends on the last token only) and sets the embeddings and the output
head so that, after an assistant header, the model writes one fixed tool call and stops. The call is a real
generation of the real model, parsed by the tokenizer's response template like any other.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

SPECIAL = ["<|endoftext|>", "<|im_start|>", "<|im_end|>", "<tool_call>", "</tool_call>", "<tool_response>",
           "</tool_response>"]


def corpus_for(packs: list[Any]) -> list[str]:
    """Text the tokenizer learns from: the packs' tool schemas, policies, prompts and gold programs."""
    texts: list[str] = []
    for pack in packs:
        texts.append(pack.policy)
        texts += [json.dumps(s.openai_schema()) for s in pack.tools]
        for task in pack.tasks:
            texts.append(task.prompt)
            texts += [json.dumps({"name": s.tool, "arguments": s.arguments}) for s in task.gold.steps]
            texts.append(task.gold.reply)
    return texts * 4


def build_tiny_checkpoint(out_dir: Path, corpus: list[str], *, seed: int = 0, template: str = "qwen2_5",
                          call: dict[str, Any] | None = None) -> Path:
    """Train a BPE tokenizer on ``corpus``, build a 2-layer Llama from a config and save both to ``out_dir``.

    With ``call`` (``{"name": ..., "arguments": {...}}``) the model is scripted to emit that tool call.
    """
    import torch
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast
    from trl import chat_template_utils

    bpe = Tokenizer(models.BPE(unk_token=None))
    bpe.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    bpe.decoder = decoders.ByteLevel()
    bpe.train_from_iterator(corpus, trainers.BpeTrainer(vocab_size=2000, special_tokens=SPECIAL, min_frequency=2,
                                                        initial_alphabet=pre_tokenizers.ByteLevel.alphabet()))
    tokenizer = PreTrainedTokenizerFast(tokenizer_object=bpe, eos_token="<|im_end|>", pad_token="<|endoftext|>")
    tokenizer.chat_template = getattr(chat_template_utils, f"{template}_chat_template")
    call_text = None
    if call is not None:
        call_text = "\n" + json.dumps(call) + "\n"
        tokenizer.add_tokens([call_text])
    chat_template_utils.add_response_schema(tokenizer)
    torch.manual_seed(seed)
    config = LlamaConfig(vocab_size=len(tokenizer), hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                         num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=8192,
                         eos_token_id=tokenizer.eos_token_id, pad_token_id=tokenizer.pad_token_id,
                         bos_token_id=None, tie_word_embeddings=False)
    model = LlamaForCausalLM(config)
    if call_text is not None:
        _script(model, tokenizer, call_text)
    model.generation_config.eos_token_id = tokenizer.eos_token_id
    model.generation_config.pad_token_id = tokenizer.pad_token_id
    out_dir.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(out_dir)
    tokenizer.save_pretrained(out_dir)
    return out_dir


def _script(model: Any, tokenizer: Any, call_text: str) -> None:
    """Make the model a bigram chain: assistant header -> <tool_call> -> the call -> </tool_call> -> end of turn."""
    import torch

    header = tokenizer.apply_chat_template([{"role": "user", "content": "x"}], add_generation_prompt=True,
                                           tokenize=False)
    last = tokenizer(header, add_special_tokens=False)["input_ids"][-1]
    ids = [tokenizer.convert_tokens_to_ids(t) for t in ("<tool_call>", call_text, "</tool_call>", "<|im_end|>")]
    chain = [(last, ids[0]), (ids[0], ids[1]), (ids[1], ids[2]), (ids[2], ids[3])]
    generator = torch.Generator().manual_seed(1)
    with torch.no_grad():
        for layer in model.model.layers:
            layer.self_attn.o_proj.weight.zero_()
            layer.mlp.down_proj.weight.zero_()
        model.lm_head.weight.normal_(0.0, 0.01, generator=generator)
        for source, target in chain:
            direction = torch.randn(model.config.hidden_size, generator=generator)
            model.model.embed_tokens.weight[source] = direction
            model.lm_head.weight[target] += 0.5 * direction
