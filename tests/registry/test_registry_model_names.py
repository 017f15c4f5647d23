"""A registered model is found by the name gymloop prints for it, and prints back to that name."""

from __future__ import annotations

from pathlib import Path

from arena.core.model_id import parse_model_id, version_label
from registry import Registry

HASH_A, HASH_B = "60b60fb740edb405", "60b6aaaaaaaaaaaa"


def test_a_printed_name_finds_its_model_and_a_short_hash_finds_it_when_it_is_the_only_one(db_url: str,
                                                                                       home: Path) -> None:
    with Registry(db_url, home) as reg:
        start = reg.register_model("reference", version_label(0, HASH_A), kind="reference", params_hash=HASH_A)
        a = reg.register_model("reference", version_label(3, HASH_A), kind="reference", params_hash=HASH_A)
        b = reg.register_model("reference", version_label(3, HASH_B), kind="reference", params_hash=HASH_B)
        llm = reg.register_model("hosted_vllm/m", "0", kind="litellm", endpoint="hosted_vllm/m")
        for info in (start, a, b, llm):
            assert reg.find_registered(parse_model_id(info.ref.label)) == info
        assert [start.ref.label, a.ref.label, llm.ref.label] == [f"reference@v0:{HASH_A}", f"reference@v3:{HASH_A}",
                                                                 "hosted_vllm/m@v0"]
        assert reg.find_registered(parse_model_id("reference@v3:60b60f")) == a
        assert reg.find_registered(parse_model_id("reference@v3:60b6aa")) == b
        assert reg.find_registered(parse_model_id("reference@v3:60b600")) is None
        assert reg.find_registered(parse_model_id("reference@v3")) is None  # two versions at step 3
        assert reg.find_registered(parse_model_id("reference@v0")) == start
        assert reg.find_registered(parse_model_id("reference@v4")) is None
