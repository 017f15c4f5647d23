"""The neural benchmark refuses a bad flag before anything runs, naming the flag and its value."""

import pytest

from bench.bench_neural import parse_args


def test_the_declared_defaults_parse():
    args = parse_args([])
    assert (args.seeds, args.rounds, args.round_epochs, args.per_task) == (5, 4, 5.0, 1)


@pytest.mark.parametrize(("argv", "message"), [
    (["--round-epochs", "-1"], "--round-epochs must be above 0, got -1.0"),
    (["--round-epochs", "0"], "--round-epochs must be above 0, got 0.0"),
    (["--seeds", "0"], "--seeds must be at least 1, got 0"),
    (["--per-task", "-2"], "--per-task must be at least 0, got -2"),
    (["--workers", "0"], "--workers must be at least 1, got 0"),
    (["--epochs", "-0.5"], "--epochs must be at least 0, got -0.5"),
    (["--round-lr", "nan"], "--round-lr must be above 0, got nan"),
    (["--top-p", "1.5"], "--top-p must be in (0, 1], got 1.5"),
    (["--copy-until", "2"], "--copy-until must be in [0, 1], got 2.0"),
    (["--gate-band-min", "6"], "at most 5, got 6"),
    (["--templates", ","], "--templates names no template"),
    (["--trl", "{use_vllm: true}"], "--trl is not JSON"),
    (["--trl", "[1, 2]"], "--trl must be a JSON object"),
])
def test_a_bad_flag_stops_the_bench_with_its_name_and_value(argv, message, capsys):
    with pytest.raises(SystemExit) as stopped:
        parse_args(argv)
    assert stopped.value.code == 2
    assert message in capsys.readouterr().err


def test_zero_is_a_value_where_it_means_something():
    args = parse_args(["--per-task", "0", "--variants", "0", "--gate-band-min", "0", "--epochs", "0"])
    assert (args.per_task, args.variants, args.gate_band_min, args.epochs) == (0, 0, 0, 0.0)
