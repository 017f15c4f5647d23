from arena.core.domains import BUILTIN_DOMAINS, get_domain
from diagnosis import KIND_TARGETS
from diagnosis.knobs import NOVEL_TARGET


def test_every_knob_a_weakness_proposes_is_one_a_gym_understands():
    supported = {k for d in BUILTIN_DOMAINS for k in get_domain(d).knobs}
    proposed = {k for t in [*KIND_TARGETS.values(), NOVEL_TARGET] for k in t.knobs}
    assert proposed <= supported, proposed - supported


def test_every_focus_tag_is_a_task_tag_of_some_gym():
    from arena.core.pack import build_pack

    tags = {tag for d in BUILTIN_DOMAINS for t in build_pack(d, seed=0).tasks for tag in t.tags}
    proposed = {tag for t in KIND_TARGETS.values() for tag in t.focus_tags}
    assert proposed <= tags, proposed - tags
