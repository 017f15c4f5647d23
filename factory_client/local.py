"""The embedded local factory: generates targeted variants of a built-in domain, in process.

Work runs on one background thread, one request at a time; ``request`` waits for it.
Every pack is kept as its tar.gz archive and handed out through the same validation
(``load_archive``) a remote pack goes through.
"""

from __future__ import annotations

import math
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field

from arena.agents.base import Agent
from arena.core.domains import available_domains, get_domain
from arena.core.gym import Gym
from arena.core.pack import Pack, build_pack, with_content_id
from arena.core.task import Task
from factory_client._synth import allocate, knob_refusals, rank_tasks, variant_knobs, variant_seed
from factory_client.archive import load_archive, pack_archive, sha256_hex
from factory_client.base import FactoryResult
from factory_client.errors import FactoryError, FactoryProtocolError, IdempotencyConflict, RequestFailed
from factory_client.gate import HeldoutIndex, QualityGate, resolve_baseline
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


@dataclass
class _Job:
    request: VariantRequest
    status: RequestStatus
    listing: list[PackInfo] = field(default_factory=list)
    report: GateReport = field(default_factory=GateReport)
    done: threading.Event = field(default_factory=threading.Event)


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
    """

    def __init__(
        self,
        *,
        base_packs: Mapping[str, Pack] | None = None,
        heldout: Mapping[str, Sequence[Task]] | None = None,
        baseline: Agent | None = None,
    ) -> None:
        self._base_by_id = dict(base_packs or {})
        self._heldout = {k: list(v) for k, v in (heldout or {}).items()}
        self._baseline = baseline
        self._jobs: dict[str, _Job] = {}
        self._keys: dict[str, str] = {}
        self._archives: dict[str, bytes] = {}
        self._default_base: dict[str, Pack] = {}
        self._lock = threading.Lock()
        self._executor = ThreadPoolExecutor(max_workers=1, thread_name_prefix="gymloop-factory")

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
        request_id = request.request_id()
        fingerprint = request.fingerprint()
        with self._lock:
            if request.idempotency_key is not None:
                seen = self._keys.get(request.idempotency_key)
                if seen is not None and seen != fingerprint:
                    raise IdempotencyConflict(
                        f"idempotency key {request.idempotency_key!r} was already used with a different request"
                    )
                self._keys[request.idempotency_key] = fingerprint
            job = self._jobs.get(request_id)
            if job is not None and job.status.state != "failed":
                return SubmitResponse(request_id=request_id, created=False)
            job = _Job(request=request, status=RequestStatus(request_id=request_id, state="queued"))
            self._jobs[request_id] = job
        self._executor.submit(self._run, job)
        return SubmitResponse(request_id=request_id, created=True)

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
        """Block until the request is done or failed (or ``timeout`` seconds pass); return its status."""
        self._job(request_id).done.wait(timeout)
        return self.status(request_id)

    def request(self, request: VariantRequest, timeout: float = 600.0) -> FactoryResult:
        """Submit, wait, and return the validated packs and the gate report.

        Raises:
            RequestFailed: The request failed or did not finish within ``timeout`` seconds.
        """
        request_id = self.submit(request)
        status = self.wait(request_id, timeout)
        if status.state == "failed":
            raise RequestFailed(f"request {request_id} failed: {status.message}")
        if status.state != "done":
            raise RequestFailed(f"request {request_id} did not finish within {timeout:g} s (state {status.state})")
        return FactoryResult(request_id=request_id, packs=self.packs(request_id),
                             gate_report=self.gate_report(request_id))

    def info(self) -> ServiceInfo:
        """Describe this factory."""
        return ServiceInfo(generator=GENERATOR, generator_version=GENERATOR_VERSION, domains=available_domains())

    def close(self) -> None:
        """Stop the worker thread after the running request."""
        self._executor.shutdown(wait=True, cancel_futures=True)

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
        base = self.base_pack(request.domain, request.parent_pack_id)
        heldout = HeldoutIndex([*base.tasks, *self._heldout.get(request.domain, [])])
        try:
            baseline = self._baseline or resolve_baseline(request)
        except ValueError as exc:
            raise FactoryError(str(exc)) from exc
        gate = QualityGate(request.gate, heldout, baseline)
        report = GateReport()
        out: list[tuple[int, Pack]] = []
        for index, primary in enumerate(allocate(request.targets, request.variants)):
            variant = self._variant(request, index, primary, base, gate)
            report.merge(variant.report)
            if variant.pack is not None:
                out.append((index, variant.pack))
            if on_variant is not None:
                on_variant(index + 1)
        return out, report

    def _variant(
        self, request: VariantRequest, index: int, primary: WeaknessTarget | None, base: Pack, gate: QualityGate
    ) -> _Variant:
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

    def _run(self, job: _Job) -> None:
        status = job.status
        status.state = "running"
        total = job.request.variants

        def progress(done: int) -> None:
            status.progress = round(done / total, 4)
            status.message = f"{done} of {total} variants generated"

        try:
            variants, report = self.generate(job.request, progress)
            listing: list[PackInfo] = []
            for index, pack in variants:
                data = pack_archive(pack)
                with self._lock:
                    self._archives[pack.id] = data
                listing.append(PackInfo(id=pack.id, sha256=sha256_hex(data), size=len(data),
                                        domain=pack.manifest.domain, tasks=len(pack.tasks), variant=index))
            job.listing = listing
            job.report = report
            status.pack_ids = [p.id for p in listing]
            status.progress = 1.0
            status.message = (f"{len(listing)} pack(s), {report.accepted} of {report.candidates} candidate tasks "
                              "accepted")
            status.state = "done"
        except Exception as exc:  # a failed request is reported on its status, never raised into the worker
            status.state = "failed"
            status.message = f"{type(exc).__name__}: {exc}"
        finally:
            job.done.set()

    def _job(self, request_id: str) -> _Job:
        with self._lock:
            job = self._jobs.get(request_id)
        if job is None:
            raise KeyError(f"unknown request {request_id!r}")
        return job
