"""The embedded local factory: generates targeted variants of a built-in domain, in process.

Requests wait in a bounded queue; one background thread works on up to ``active_jobs`` of them at once, taking
turns task by task, so a large request slows a small one down but never blocks it. A request can be cancelled
(queued or running: it stops at its next task); a finished, failed or cancelled request is forgotten, with its
archives, ``job_ttl_s`` after it ended. ``request`` waits for its job. Every pack is kept as its tar.gz archive
and handed out through the same validation (``load_archive``) a remote pack goes through.
"""

from __future__ import annotations

import math
import threading
import time
from collections import deque
from collections.abc import Callable, Generator, Mapping, Sequence
from dataclasses import dataclass, field

from pydantic import BaseModel, ConfigDict, Field

from arena.agents.base import Agent
from arena.core.domains import available_domains, get_domain
from arena.core.gym import Gym
from arena.core.pack import Pack, build_pack, with_content_id
from arena.core.task import Task
from factory_client._synth import allocate, knob_refusals, rank_tasks, variant_knobs, variant_seed
from factory_client.archive import load_archive, pack_archive, sha256_hex
from factory_client.base import FactoryResult
from factory_client.errors import FactoryBusy, FactoryError, FactoryProtocolError, IdempotencyConflict, RequestFailed
from factory_client.gate import BaselineLookup, HeldoutIndex, QualityGate, resolve_baseline
from factory_client.protocol import (
    PROTOCOL_VERSION,
    DroppedVariant,
    GateReport,
    PackInfo,
    PackList,
    RequestStatus,
    ServiceInfo,
    SubmitResponse,
    VariantRequest,
    WeaknessTarget,
)
from factory_client.targets import target_refusal

GENERATOR = "gymloop.local-factory"
"""Generator name recorded in pack provenance."""

GENERATOR_VERSION = "1"
"""Generator version recorded in pack provenance."""

BASE_SEED = 0
"""Seed of a domain's base pack (the held-out suite's pack)."""

MAX_TASKS_PER_TEMPLATE = 8

FINISHED = ("done", "failed", "cancelled")
"""States a request does not leave."""

Steps = Generator[None, None, "tuple[list[tuple[int, Pack]], GateReport]"]
"""Generation as steps: each ``next`` does one unit of work (a variant's build or one task's gate)."""


class FactoryLimits(BaseModel):
    """How much work a factory holds.

    Attributes:
        max_queued: Requests waiting or running at once; one more is refused (HTTP 429) until one ends.
        active_jobs: Requests worked on at once, taking turns task by task.
        job_ttl_s: Seconds a finished, failed or cancelled request (and its archives) is kept after it ended.
    """

    model_config = ConfigDict(extra="forbid", frozen=True)

    max_queued: int = Field(default=32, ge=1)
    active_jobs: int = Field(default=4, ge=1)
    job_ttl_s: float = Field(default=3600.0, gt=0)


@dataclass
class _Job:
    request: VariantRequest
    status: RequestStatus
    listing: list[PackInfo] = field(default_factory=list)
    report: GateReport = field(default_factory=GateReport)
    done: threading.Event = field(default_factory=threading.Event)
    steps: Steps | None = None
    ended_at: float | None = None


@dataclass(frozen=True)
class _Variant:
    index: int
    pack: Pack | None
    report: GateReport


class LocalFactory:
    """The embedded factory (the default when no factory URL is set).

    Args:
        base_packs: Base packs by id, for requests naming a ``parent_pack_id`` (each domain's
            seed-0 pack is always known).
        heldout: Extra held-out tasks per domain the generated tasks must not duplicate
            (the base pack's held-out tasks always count).
        baseline: The current model for the baseline gate, overriding the request's
            ``baseline_model`` (for callers that hold a model object).
        baselines: Model references this factory knows for ``baseline_model`` beyond the built-in ones
            (its models folder, its registry); a request naming any other is refused at submission.
        limits: Queue, concurrency and expiry of requests.
    """

    def __init__(
        self,
        *,
        base_packs: Mapping[str, Pack] | None = None,
        heldout: Mapping[str, Sequence[Task]] | None = None,
        baseline: Agent | None = None,
        baselines: BaselineLookup | None = None,
        limits: FactoryLimits | None = None,
    ) -> None:
        self._base_by_id = dict(base_packs or {})
        self._heldout = {k: list(v) for k, v in (heldout or {}).items()}
        self._baseline = baseline
        self._baselines = baselines
        self.limits = limits or FactoryLimits()
        self._jobs: dict[str, _Job] = {}
        self._keys: dict[str, str] = {}
        self._archives: dict[str, bytes] = {}
        self._default_base: dict[str, Pack] = {}
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._queue: deque[_Job] = deque()
        self._active: list[_Job] = []
        self._turn = 0
        self._closing = False
        self._worker: threading.Thread | None = None

    # the FactoryClient interface -------------------------------------------------------------
    def submit(self, request: VariantRequest) -> str:
        """Queue a request and return its id (see ``submit_request``)."""
        return self.submit_request(request).request_id

    def submit_request(self, request: VariantRequest) -> SubmitResponse:
        """Queue a request; an identical or same-key request returns the existing id.

        Raises:
            FactoryProtocolError: Unknown protocol version.
            FactoryError: Unknown domain or parent pack, or a target the gym cannot aim at: a knob it cannot
                honour or focus tags none of its tasks carries (the reason named).
            IdempotencyConflict: The idempotency key was used with a different request.
        """
        if request.protocol_version != PROTOCOL_VERSION:
            raise FactoryProtocolError(
                f"unknown protocol version {request.protocol_version}; this factory speaks {PROTOCOL_VERSION}"
            )
        try:
            domain = get_domain(request.domain)
        except KeyError as exc:
            raise FactoryError(str(exc.args[0])) from exc
        refusals = knob_refusals(domain, request.targets)
        if refusals:
            raise FactoryError("; ".join(refusals))
        if request.targets:
            tags = {tag for t in self.base_pack(request.domain, request.parent_pack_id).tasks for tag in t.tags}
            aimless = [r for r in (target_refusal(t, domain, tags) for t in request.targets) if r is not None]
            if aimless:
                raise FactoryError("; ".join(aimless))
        if self._baseline is None:
            try:
                resolve_baseline(request, self._baselines)
            except ValueError as exc:
                raise FactoryError(str(exc)) from None
        request_id = request.request_id()
        fingerprint = request.fingerprint()
        with self._lock:
            if self._closing:
                raise FactoryBusy("the factory is shutting down")
            self._evict_expired()
            job = self._jobs.get(request_id)
            if job is not None and job.status.state not in ("failed", "cancelled"):
                return SubmitResponse(request_id=request_id, created=False)
            waiting = len(self._queue) + len(self._active)
            if waiting >= self.limits.max_queued:
                raise FactoryBusy(f"{waiting} requests are queued or running (the limit); retry when one ends")
            if request.idempotency_key is not None:
                seen = self._keys.get(request.idempotency_key)
                if seen is not None and seen != fingerprint:
                    raise IdempotencyConflict(
                        f"idempotency key {request.idempotency_key!r} was already used with a different request"
                    )
                self._keys[request.idempotency_key] = fingerprint
            job = _Job(request=request, status=RequestStatus(request_id=request_id, state="queued"))
            self._jobs[request_id] = job
            self._queue.append(job)
            self._start_worker()
            self._wake.notify_all()
        return SubmitResponse(request_id=request_id, created=True)

    def cancel(self, request_id: str) -> RequestStatus:
        """Cancel a queued or running request (a running one stops before its next task); return its status.

        A finished or failed request is left as it is.

        Raises:
            KeyError: Unknown request id.
        """
        with self._lock:
            job = self._jobs.get(request_id)
            if job is None:
                raise KeyError(f"unknown request {request_id!r}")
            if job.status.state not in FINISHED:
                if job in self._queue:
                    self._queue.remove(job)
                self._finish(job, "cancelled", "cancelled by the client")
                self._wake.notify_all()
            return job.status.model_copy(deep=True)

    def status(self, request_id: str) -> RequestStatus:
        """Return where the request stands.

        Raises:
            KeyError: Unknown request id.
        """
        return self._job(request_id).status.model_copy(deep=True)

    def pack_list(self, request_id: str) -> PackList:
        """Return the finished request's pack listing and gate report.

        Raises:
            KeyError: Unknown request id.
            RequestFailed: The request failed or is not finished.
        """
        job = self._job(request_id)
        if job.status.state != "done":
            detail = f": {job.status.message}" if job.status.message else ""
            raise RequestFailed(f"request {request_id} is {job.status.state}{detail}")
        return PackList(request_id=request_id, packs=list(job.listing), gate_report=job.report.model_copy(deep=True))

    def archive(self, pack_id: str) -> bytes:
        """Return the tar.gz archive of a pack this factory produced.

        Raises:
            KeyError: Unknown pack id.
        """
        with self._lock:
            if pack_id not in self._archives:
                raise KeyError(f"pack {pack_id} is not held by this factory")
            return self._archives[pack_id]

    def packs(self, request_id: str) -> list[Pack]:
        """Return the finished request's packs, each read back through archive validation."""
        listing = self.pack_list(request_id)
        return [load_archive(self.archive(p.id), pack_id=p.id, sha256=p.sha256, source="local factory")
                for p in listing.packs]

    def gate_report(self, request_id: str) -> GateReport:
        """Return the quality gate's report of a finished request."""
        return self.pack_list(request_id).gate_report

    def wait(self, request_id: str, timeout: float | None = None) -> RequestStatus:
        """Block until the request is done, failed or cancelled (or ``timeout`` seconds pass); return its status."""
        self._job(request_id).done.wait(timeout)
        return self.status(request_id)

    def request(self, request: VariantRequest, timeout: float = 600.0) -> FactoryResult:
        """Submit, wait, and return the validated packs and the gate report.

        Raises:
            RequestFailed: The request failed or did not finish within ``timeout`` seconds.
        """
        request_id = self.submit(request)
        status = self.wait(request_id, timeout)
        if status.state in ("failed", "cancelled"):
            raise RequestFailed(f"request {request_id} {status.state}: {status.message}")
        if status.state != "done":
            self.cancel(request_id)
            raise RequestFailed(f"request {request_id} did not finish within {timeout:g} s (state {status.state}); "
                                "it was cancelled")
        return FactoryResult(request_id=request_id, packs=self.packs(request_id),
                             gate_report=self.gate_report(request_id))

    def info(self) -> ServiceInfo:
        """Describe this factory."""
        return ServiceInfo(generator=GENERATOR, generator_version=GENERATOR_VERSION, domains=available_domains())

    def close(self) -> None:
        """Cancel every queued or running request and stop the worker thread."""
        with self._lock:
            self._closing = True
            for job in [*self._queue, *self._active]:
                if job.status.state not in FINISHED:
                    self._finish(job, "cancelled", "the factory shut down")
            self._queue.clear()
            self._wake.notify_all()
            worker = self._worker
        if worker is not None:
            worker.join(timeout=60)

    # generation ------------------------------------------------------------------------------
    def base_pack(self, domain: str, parent_pack_id: str | None = None) -> Pack:
        """Return the base pack variants derive from: the named parent, or the domain's seed-0 pack.

        Raises:
            FactoryError: The parent id is unknown or of another domain.
        """
        with self._lock:
            if domain not in self._default_base:
                self._default_base[domain] = build_pack(domain, seed=BASE_SEED)
            default = self._default_base[domain]
        if parent_pack_id is None or parent_pack_id == default.id:
            return default
        pack = self._base_by_id.get(parent_pack_id)
        if pack is None:
            raise FactoryError(f"parent pack {parent_pack_id} is unknown to this factory")
        if pack.manifest.domain != domain:
            raise FactoryError(f"parent pack {parent_pack_id} is of domain {pack.manifest.domain!r}, not {domain!r}")
        return pack

    def generate(
        self, request: VariantRequest, on_variant: Callable[[int], None] | None = None
    ) -> tuple[list[tuple[int, Pack]], GateReport]:
        """Generate, gate and assemble the request's variants synchronously.

        Args:
            request: The request.
            on_variant: Called with the number of finished variants after each one.

        Returns:
            ``(variant index, pack)`` of every variant with an accepted task, and the gate report.
        """
        steps = self._generate_steps(request, on_variant)
        while True:
            try:
                next(steps)
            except StopIteration as finished:
                result: tuple[list[tuple[int, Pack]], GateReport] = finished.value
                return result

    def _generate_steps(self, request: VariantRequest, on_variant: Callable[[int], None] | None) -> Steps:
        base = self.base_pack(request.domain, request.parent_pack_id)
        heldout = HeldoutIndex([*base.tasks, *self._heldout.get(request.domain, [])])
        try:
            baseline = self._baseline or resolve_baseline(request, self._baselines)
        except ValueError as exc:
            raise FactoryError(str(exc)) from exc
        gate = QualityGate(request.gate, heldout, baseline)
        report = GateReport()
        out: list[tuple[int, Pack]] = []
        for index, primary in enumerate(allocate(request.targets, request.variants)):
            variant = yield from self._variant(request, index, primary, base, gate)
            report.merge(variant.report)
            if variant.pack is not None:
                out.append((index, variant.pack))
            if on_variant is not None:
                on_variant(index + 1)
            yield
        return out, report

    def _variant(
        self, request: VariantRequest, index: int, primary: WeaknessTarget | None, base: Pack, gate: QualityGate
    ) -> Generator[None, None, _Variant]:
        report = GateReport()
        domain = get_domain(request.domain)
        known_tags = {tag for t in base.tasks for tag in t.tags}
        focus = set(primary.focus_tags) & known_tags if primary is not None else set()
        templates = len({t.intent.goal for t in base.tasks if not focus or focus & set(t.tags)}) or 1
        per_template = min(MAX_TASKS_PER_TEMPLATE, max(1, math.ceil(2 * request.tasks_per_variant / templates)))
        knobs = variant_knobs(request, primary, domain, known_tags, per_template)
        seed = variant_seed(request.seed, index)
        provenance = {
            "generator": GENERATOR,
            "version": GENERATOR_VERSION,
            "request": request.fingerprint(),
            "variant": index,
            "parent": base.id,
            "primary_target": primary.kind if primary is not None else None,
            "targets": [t.model_dump(mode="json") for t in request.targets],
            "complexity": request.complexity,
            "baseline_model": "inline" if request.baseline_params is not None else request.baseline_model,
            "gate": request.gate.model_dump(mode="json"),
        }
        try:
            candidate = build_pack(domain, seed=seed, knobs=knobs, parent=base.id, provenance=provenance,
                                   created_by=GENERATOR)
        except ValueError as exc:
            report.dropped_variants.append(DroppedVariant(variant=index, reason=f"generation failed: {exc}"))
            return _Variant(index, None, report)
        ranked = rank_tasks(candidate, request, primary, seed)
        limit = request.tasks_per_variant * request.gate.max_candidates_factor
        accepted: list[Task] = []
        with Gym(candidate, domain) as gym:
            for task in ranked[:limit]:
                yield  # a turn per task: other requests run between two gate checks
                if gate.check(gym, task, variant=index, report=report):
                    accepted.append(task.model_copy(update={"split": "train"}))
                    if len(accepted) >= request.tasks_per_variant:
                        break
        if not accepted:
            report.dropped_variants.append(DroppedVariant(
                variant=index, reason=f"no candidate task passed the gate ({report.candidates} gated)"))
            return _Variant(index, None, report)
        used_faults = {f for t in accepted for f in t.faults}
        pack = with_content_id(Pack(
            manifest=candidate.manifest,
            state_db=candidate.state_db,
            policy=candidate.policy,
            tools=candidate.tools,
            graph=candidate.graph,
            faults=[f for f in candidate.faults if f.id in used_faults],
            tasks=sorted(accepted, key=lambda t: t.id),
        ))
        return _Variant(index, pack, report)

    # the worker: round-robin over active jobs, one step each ---------------------------------
    def _start_worker(self) -> None:
        if self._worker is None or not self._worker.is_alive():
            self._worker = threading.Thread(target=self._work, name="gymloop-factory", daemon=True)
            self._worker.start()

    def _work(self) -> None:
        while True:
            with self._lock:
                job = self._next_job()
                if job is None:
                    return
            self._step(job)

    def _next_job(self) -> _Job | None:
        """The next job to advance, waiting for one (called with the lock held); ``None`` when closing."""
        while True:
            if self._closing:
                return None
            self._evict_expired()
            self._active = [j for j in self._active if j.status.state not in FINISHED]
            while self._queue and len(self._active) < self.limits.active_jobs:
                self._active.append(self._queue.popleft())
            if self._active:
                self._turn = (self._turn + 1) % len(self._active)
                return self._active[self._turn]
            self._wake.wait(timeout=min(60.0, self.limits.job_ttl_s))

    def _step(self, job: _Job) -> None:
        status = job.status
        with self._lock:
            if status.state in FINISHED:
                return
            if job.steps is None:
                total = job.request.variants

                def progress(done: int) -> None:
                    with self._lock:
                        if status.state not in FINISHED:
                            status.progress = round(done / total, 4)
                            status.message = f"{done} of {total} variants generated"

                status.state = "running"
                job.steps = self._generate_steps(job.request, progress)
            steps = job.steps
        try:
            next(steps)
        except StopIteration as finished:
            self._publish(job, *finished.value)
        except Exception as exc:  # a failed request is reported on its status, never raised into the worker
            with self._lock:
                self._finish(job, "failed", f"{type(exc).__name__}: {exc}")
        with self._lock:
            if status.state == "cancelled":
                steps.close()

    def _publish(self, job: _Job, variants: list[tuple[int, Pack]], report: GateReport) -> None:
        listing: list[PackInfo] = []
        archives: dict[str, bytes] = {}
        for index, pack in variants:
            data = pack_archive(pack)
            archives[pack.id] = data
            listing.append(PackInfo(id=pack.id, sha256=sha256_hex(data), size=len(data),
                                    domain=pack.manifest.domain, tasks=len(pack.tasks), variant=index))
        with self._lock:
            if job.status.state in FINISHED:
                return
            self._archives.update(archives)
            job.listing = listing
            job.report = report
            job.status.pack_ids = [p.id for p in listing]
            job.status.progress = 1.0
            self._finish(job, "done", f"{len(listing)} pack(s), {report.accepted} of {report.candidates} candidate "
                                      "tasks accepted")

    def _finish(self, job: _Job, state: str, message: str) -> None:
        """End ``job`` in ``state`` (called with the lock held)."""
        job.status.state = state  # type: ignore[assignment]
        job.status.message = message
        job.ended_at = time.monotonic()
        job.done.set()

    def _evict_expired(self) -> None:
        """Forget requests that ended more than ``job_ttl_s`` ago, with their archives (lock held)."""
        horizon = time.monotonic() - self.limits.job_ttl_s
        expired = [rid for rid, j in self._jobs.items() if j.ended_at is not None and j.ended_at < horizon]
        if not expired:
            return
        for rid in expired:
            job = self._jobs.pop(rid)
            key = job.request.idempotency_key
            if key is not None and self._keys.get(key) == job.request.fingerprint():
                del self._keys[key]
        kept = {p.id for j in self._jobs.values() for p in j.listing}
        for pack_id in [p for p in self._archives if p not in kept]:
            del self._archives[pack_id]

    def _job(self, request_id: str) -> _Job:
        with self._lock:
            self._evict_expired()
            job = self._jobs.get(request_id)
        if job is None:
            raise KeyError(f"unknown request {request_id!r}")
        return job
