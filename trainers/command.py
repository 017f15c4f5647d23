"""The command trainer: runs a user's training command on the exported data and reads the new model back.

The command receives the export directory in place of ``{data_dir}`` in its arguments and in the
environment (``GYMLOOP_DATA_DIR``), with ``{output_dir}`` / ``GYMLOOP_OUTPUT_DIR`` for its artifacts and
``{model_ref}`` / ``GYMLOOP_MODEL_REF`` (the input model as JSON in the environment). Its stdout and
stderr are streamed line by line to ``train.log`` and to an optional callback. The last line of stdout
that parses as a JSON object is the new model reference (``ModelRef`` fields; ``kind`` defaults to
``external`` and ``parent`` to the input model). A non-zero exit, a timeout or a missing or malformed
JSON line fails the step with the log's tail.
"""

from __future__ import annotations

import json
import os
import subprocess
import threading
from collections import deque
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import IO, TYPE_CHECKING

from pydantic import ValidationError

from arena.core.episode import EpisodeRecord
from arena.core.pack import Pack
from trainers.base import register_trainer
from trainers.export import export_dataset
from trainers.models import ModelRef, TrainerError

if TYPE_CHECKING:
    from curriculum import Wave

LOG_FILE = "train.log"


class CommandTrainer:
    """Runs a configured training command on the exported files (registered as ``command``).

    Args:
        command: The command and its arguments; ``{data_dir}``, ``{output_dir}``, ``{model_ref}`` and
            ``{round}`` are replaced.
        workdir: Working directory; each round writes ``round-<n>/data``, ``round-<n>/output`` and
            ``round-<n>/train.log`` under it.
        packs: Packs the rollouts ran on (for the export).
        env: Extra environment variables for the command.
        timeout_s: Wall-clock limit of the command (``None``: none).
        on_line: Called with each output line as it arrives.
        tail_lines: Log lines shown in a failure message.
    """

    name = "command"

    def __init__(self, command: Sequence[str], workdir: str | Path, packs: Sequence[Pack] | Mapping[str, Pack], *,
                 env: Mapping[str, str] | None = None, timeout_s: float | None = None,
                 on_line: Callable[[str], None] | None = None, tail_lines: int = 20) -> None:
        if not command:
            raise ValueError("command trainer needs a non-empty command")
        self.command = list(command)
        self.workdir = Path(workdir)
        self.packs: dict[str, Pack] = dict(packs) if isinstance(packs, Mapping) else {p.id: p for p in packs}
        self.env = dict(env or {})
        self.timeout_s = timeout_s
        self.on_line = on_line
        self.tail_lines = tail_lines
        self.last_log: Path | None = None

    def train(self, model_ref: ModelRef, wave: Wave, rollouts: Sequence[EpisodeRecord]) -> ModelRef:
        """Export the rollouts, run the command and return the model reference it prints.

        Raises:
            TrainerError: The command could not start, exited non-zero, timed out, or printed no valid
                model reference; the message holds the log's tail.
        """
        round_dir = self.workdir / f"round-{wave.round_index}"
        data_dir, output_dir = round_dir / "data", round_dir / "output"
        output_dir.mkdir(parents=True, exist_ok=True)
        export_dataset(data_dir, model_ref, wave, rollouts, self.packs)
        values = {"{data_dir}": str(data_dir.resolve()), "{output_dir}": str(output_dir.resolve()),
                  "{model_ref}": model_ref.ref, "{round}": str(wave.round_index)}
        args = [self._fill(a, values) for a in self.command]
        env = {**os.environ, **self.env, "GYMLOOP_DATA_DIR": values["{data_dir}"],
               "GYMLOOP_OUTPUT_DIR": values["{output_dir}"], "GYMLOOP_MODEL_REF": model_ref.model_dump_json(),
               "GYMLOOP_ROUND": str(wave.round_index)}
        log_path = round_dir / LOG_FILE
        self.last_log = log_path
        stdout, tail, code = self._run(args, env, log_path)
        shown = "\n".join(tail)
        if code != 0:
            why = "timed out" if code is None else f"exited with code {code}"
            raise TrainerError(f"training command {args[0]!r} {why}; log {log_path}, last lines:\n{shown}")
        return self._parse(stdout, model_ref, args[0], log_path, shown)

    @staticmethod
    def _fill(arg: str, values: Mapping[str, str]) -> str:
        for placeholder, value in values.items():
            arg = arg.replace(placeholder, value)
        return arg

    def _run(self, args: list[str], env: Mapping[str, str], log_path: Path) -> tuple[list[str], list[str], int | None]:
        tail: deque[str] = deque(maxlen=self.tail_lines)
        err_tail: deque[str] = deque(maxlen=self.tail_lines)
        stdout: list[str] = []
        lock = threading.Lock()
        try:
            proc = subprocess.Popen(args, cwd=self.workdir, env=dict(env), stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True, bufsize=1)
        except OSError as exc:
            raise TrainerError(f"training command {args[0]!r} could not start: {exc}") from exc
        with log_path.open("w", encoding="utf-8") as log:
            def pump(stream: IO[str], keep: list[str] | None) -> None:
                for raw in stream:
                    line = raw.rstrip("\n")
                    with lock:
                        log.write(line + "\n")
                        log.flush()
                        tail.append(line)
                        if keep is not None:
                            keep.append(line)
                        else:
                            err_tail.append(line)
                        if self.on_line is not None:
                            self.on_line(line)

            if proc.stdout is None or proc.stderr is None:
                raise TrainerError(f"training command {args[0]!r} started without output pipes")
            readers = [threading.Thread(target=pump, args=(proc.stdout, stdout), daemon=True),
                       threading.Thread(target=pump, args=(proc.stderr, None), daemon=True)]
            for reader in readers:
                reader.start()
            code: int | None
            try:
                code = proc.wait(timeout=self.timeout_s)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait()
                code = None
            for reader in readers:
                reader.join(timeout=5)
        # The two streams are read by two threads, so stderr lines may interleave anywhere: keep the last ones
        # in the tail even when stdout was chattier after them.
        missing = [line for line in err_tail if line not in tail]
        return stdout, [*tail, *(["-- last lines of stderr --", *missing] if missing else [])], code

    @staticmethod
    def _parse(stdout: list[str], model_ref: ModelRef, program: str, log_path: Path, tail: str) -> ModelRef:
        for line in reversed(stdout):
            text = line.strip()
            if not text.startswith("{"):
                continue
            try:
                data = json.loads(text)
            except json.JSONDecodeError:
                continue
            if not isinstance(data, dict):
                continue
            data.setdefault("kind", "external")
            data.setdefault("parent", model_ref.ref)
            try:
                return ModelRef.model_validate(data)
            except ValidationError as exc:
                raise TrainerError(f"training command {program!r} printed an invalid model reference {text!r}: "
                                   f"{exc.errors()[0]['msg']}; log {log_path}") from exc
        raise TrainerError(f"training command {program!r} printed no JSON model reference on stdout; log {log_path}, "
                           f"last lines:\n{tail}")


register_trainer("command", CommandTrainer)
