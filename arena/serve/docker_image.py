"""Docker images of a gym server, built with the docker SDK.

The image is ``FROM`` a Python 3 base (default: the official slim image) plus one layer holding the
modules the served gym imports (gymloop's ``arena`` package and its dependencies, found by importing the
server in a child interpreter) and, for a pack folder, the pack. Its entry point is ``python -m
arena.serve``. Where nothing can be pulled, :func:`import_host_python` makes a base image from this
machine's interpreter (``docker import`` of a root-filesystem tarball).
"""

from __future__ import annotations

import importlib.util
import io
import json
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tarfile
import tempfile
from pathlib import Path
from typing import Any

import docker
from docker.errors import APIError, BuildError, DockerException, ImageNotFound

import arena
from arena.core.domains import BUILTIN_DOMAINS, MODULES_SETTING, external_domains, get_domain, registered_modules
from arena.core.pack import Pack, write_pack
from arena.serve.session import ServeError

DEFAULT_BASE = "python:3.11-slim"
"""The official slim Python image (must match this interpreter's minor version)."""

SERVER_PORT = 8000
"""Port the container's server listens on unless told otherwise."""

_MODULE_PROBE = r"""
import json, sys
import arena.serve.__main__, arena.serve.runner, uvicorn, uvicorn.main
import uvicorn.protocols.http.h11_impl, uvicorn.protocols.http.auto, uvicorn.protocols.websockets.auto
import uvicorn.lifespan.on, uvicorn.lifespan.off, uvicorn.loops.asyncio, uvicorn.loops.auto
from arena.core.domains import BUILTIN_DOMAINS
from arena.core.pack import build_pack
from arena.serve import GymService
for name in [*BUILTIN_DOMAINS, *sys.argv[1:]]:  # one gold episode per gym (and the served one, if outside
    # gymloop), so lazily imported modules are found too; started as the operator, who may start any task of
    # either split
    service = GymService(build_pack(name, seed=0))
    task = service.pack.tasks[0]
    handle, _ = service.start(task.id, 0, operator=True)
    for step in task.gold.steps:
        service.call(handle, step.tool, dict(step.arguments))
    service.finish(handle, task.gold.reply)
print(json.dumps(sorted({getattr(m, "__file__", None) or "" for m in list(sys.modules.values())})))
"""

_STDLIB_SKIP = {"site-packages", "test", "idlelib", "tkinter", "turtledemo", "ensurepip", "lib2to3", "__pycache__",
                "config-3.11-x86_64-linux-gnu", "pydoc_data", "venv"}


def docker_client(host: str | None = None) -> docker.DockerClient:
    """Connect to the Docker daemon at ``host`` (default: ``DOCKER_HOST`` or the local socket).

    Raises:
        ServeError: No daemon answers there.
    """
    try:
        # vfs storage copies a whole image per container: creating one can take minutes on a loaded machine.
        client = docker.DockerClient(base_url=host, timeout=600) if host else docker.from_env(timeout=600)
        client.ping()
    except DockerException as exc:
        where = host or os.environ.get("DOCKER_HOST") or "the default socket"
        raise ServeError(f"no Docker daemon answers at {where}: {_first_line(exc)}") from exc
    return client


def _first_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return text[0] if text else type(exc).__name__


def served_modules(gym: str | None = None) -> list[Path]:
    """Top-level packages and modules a gym server imports, outside the standard library.

    Args:
        gym: A gym from outside gymloop the server also serves (an entry point's or one of ``gym_modules``).
    """
    extra = [gym] if gym is not None and gym not in BUILTIN_DOMAINS else []
    proc = subprocess.run([sys.executable, "-c", _MODULE_PROBE, *extra], capture_output=True, text=True, timeout=300)
    if proc.returncode != 0:
        raise ServeError(f"cannot list the served gym's modules: {proc.stderr.strip().splitlines()[-1:]}")
    roots: set[Path] = {Path(arena.__file__).parent, *(_module_root(gym) for gym in extra)}
    for file in json.loads(proc.stdout):
        if "site-packages/" not in file:
            continue
        prefix, rest = file.split("site-packages/", 1)
        top = rest.split("/", 1)[0]
        if top.startswith(("__editable__", "_distutils_hack")):
            continue
        roots.add(Path(prefix) / "site-packages" / top)
    # Package metadata too: some packages read their own version at import time.
    for folder in {r.parent for r in roots if r.parent.name == "site-packages"}:
        roots.update(folder.glob("*.dist-info"))
    return sorted(roots)


def _module_root(gym: str) -> Path:
    """The top-level package (or module file) that defines the external gym ``gym``."""
    get_domain(gym)
    top = registered_modules()[gym].partition(":")[0].split(".")[0]
    spec = importlib.util.find_spec(top)
    if spec is None or spec.origin is None:
        raise ServeError(f"cannot find the files of gym {gym!r} (module {top!r})")
    origin = Path(spec.origin)
    return origin.parent if origin.name == "__init__.py" else origin


def _ignore_caches(folder: str, names: list[str]) -> set[str]:
    return {n for n in names if n == "__pycache__"}


def build_context(dest: Path, base: str, target: str, pack: Pack | None) -> Path:
    """Write a build context: the served modules under ``lib/``, the pack under ``pack/``, a Dockerfile."""
    lib = dest / "lib"
    lib.mkdir(parents=True)
    gym = pack.manifest.domain if pack is not None else target
    for root in served_modules(gym):
        if root.is_dir():
            shutil.copytree(root, lib / root.name, ignore=_ignore_caches)
        else:
            shutil.copy2(root, lib / root.name)
    command = [target]
    if pack is not None:
        write_pack(pack, dest / "pack")
        command = ["/opt/gymloop/pack"]
    command += ["--transport", "http", "--host", "127.0.0.1", "--port", str(SERVER_PORT)]
    label = pack.id if pack is not None else target
    (dest / "Dockerfile").write_text("\n".join([
        f"FROM {base}",
        "COPY lib /opt/gymloop/lib",
        *(["COPY pack /opt/gymloop/pack"] if pack is not None else []),
        "ENV PYTHONPATH=/opt/gymloop/lib PYTHONDONTWRITEBYTECODE=1 PYTHONUNBUFFERED=1",
        *_gym_modules_env(gym),
        f'LABEL org.gymloop.gym="{label}"',
        'ENTRYPOINT ["python3", "-m", "arena.serve"]',
        f"CMD {json.dumps(command)}",
        "",
    ]))
    return dest


def _gym_modules_env(gym: str) -> list[str]:
    """The ``ENV`` line naming the served gym's module when it came from ``gym_modules`` (entry points need none)."""
    if not external_domains().get(gym, "").startswith("setting"):
        return []
    module = registered_modules()[gym].partition(":")[0]
    return [f"ENV GYMLOOP_{MODULES_SETTING.upper()}={json.dumps(json.dumps([module]))}"]


def image_tag(target: str, pack: Pack | None) -> str:
    """The default tag of a gym image: ``gymloop-gym-<domain>[-<pack id>]``."""
    if pack is None:
        return f"gymloop-gym-{target}:latest"
    return f"gymloop-gym-{pack.manifest.domain}-{pack.id[:12]}:latest"


def build_gym_image(client: docker.DockerClient, target: str, pack: Pack | None = None, *,
                    base: str = DEFAULT_BASE, tag: str | None = None) -> str:
    """Build the image of a gym server (a built-in ``target`` domain, or ``pack``) and return its tag.

    Raises:
        ServeError: The base image is missing (nothing can be pulled) or the build failed.
    """
    tag = tag or image_tag(target, pack)
    try:
        client.images.get(base)
    except ImageNotFound as exc:
        raise ServeError(f"base image {base!r} is not on the Docker daemon; pull it, or use --base host to build "
                         "one from this machine's Python") from exc
    with tempfile.TemporaryDirectory(prefix="gymloop-image-") as folder:
        context = build_context(Path(folder), base, target, pack)
        try:
            client.images.build(path=str(context), tag=tag, rm=True, forcerm=True, pull=False)
        except (BuildError, APIError) as exc:
            raise ServeError(f"building {tag} failed: {_first_line(exc)}") from exc
    return tag


def _shared_libraries(binary: str) -> list[str]:
    proc = subprocess.run(["ldd", binary], capture_output=True, text=True, timeout=60)
    found = []
    for line in proc.stdout.splitlines():
        match = re.search(r"(/\S+) \(0x", line)
        if match:
            found.append(match.group(1))
    return found


def host_rootfs(out: io.BufferedIOBase) -> None:
    """Write a tarball of this machine's Python.

    It holds the interpreter, the standard library and the system libraries that the interpreter and the
    served modules' extension modules link.
    """
    binary = os.path.realpath(sys._base_executable if hasattr(sys, "_base_executable") else sys.executable)
    stdlib = Path(sysconfig.get_paths()["stdlib"])
    libs = {binary, *_shared_libraries(binary)}
    modules = [*(stdlib / "lib-dynload").glob("*.so")]
    for root in served_modules():
        modules += root.rglob("*.so") if root.is_dir() else [root] if root.suffix == ".so" else []
    for module in sorted(modules):
        libs.update(p for p in _shared_libraries(str(module)) if "site-packages" not in p)
    # Wheels' extension modules (manylinux) link these from the system.
    for name in ("libgcc_s.so.1", "libstdc++.so.6", "libnss_files.so.2", "libnss_dns.so.2", "libresolv.so.2"):
        for folder in ("/lib/x86_64-linux-gnu", "/usr/lib/x86_64-linux-gnu"):
            if os.path.exists(os.path.join(folder, name)):
                libs.add(os.path.join(folder, name))
    with tarfile.open(fileobj=out, mode="w|") as tar:
        for folder in ("tmp", "etc", "usr/local/bin"):
            info = tarfile.TarInfo(folder)
            info.type, info.mode = tarfile.DIRTYPE, 0o1777 if folder == "tmp" else 0o755
            tar.addfile(info)
        for path in sorted(libs):
            tar.add(os.path.realpath(path), arcname=path.lstrip("/"))
        link = tarfile.TarInfo("usr/local/bin/python3")
        link.type, link.linkname = tarfile.SYMTYPE, binary
        tar.addfile(link)
        for entry in sorted(stdlib.iterdir()):
            if entry.name not in _STDLIB_SKIP:
                tar.add(entry, arcname=str(entry).lstrip("/"), filter=_skip_caches)
        passwd = b"root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/false\n"
        info = tarfile.TarInfo("etc/passwd")
        info.size = len(passwd)
        tar.addfile(info, io.BytesIO(passwd))


def _skip_caches(info: tarfile.TarInfo) -> tarfile.TarInfo | None:
    return None if "__pycache__" in info.name else info


def import_host_python(client: docker.DockerClient, tag: str = "gymloop-host-python:3.11") -> str:
    """Make a base image from this machine's interpreter (for hosts that cannot pull) and return its tag.

    Raises:
        ServeError: The daemon refused the import.
    """
    try:
        client.images.get(tag)
        return tag
    except ImageNotFound:
        pass
    with tempfile.TemporaryDirectory(prefix="gymloop-rootfs-") as folder:
        tarball = Path(folder) / "rootfs.tar"
        with tarball.open("wb") as out:
            host_rootfs(out)
        repository, _, version = tag.partition(":")
        try:
            with tarball.open("rb") as data:
                client.api.import_image_from_data(data.read(), repository=repository, tag=version or "latest")
            client.images.get(tag)
        except (APIError, ImageNotFound) as exc:
            raise ServeError(f"importing this machine's Python as {tag} failed: {_first_line(exc)}") from exc
    return tag


def image_labels(client: docker.DockerClient, tag: str) -> dict[str, Any]:
    """The labels of image ``tag``.

    Raises:
        ServeError: No such image on the daemon.
    """
    try:
        labels: dict[str, Any] = client.images.get(tag).labels or {}
    except ImageNotFound as exc:
        raise ServeError(f"image {tag!r} is not on the Docker daemon; build it with `gymloop gyms image`") from exc
    return labels
